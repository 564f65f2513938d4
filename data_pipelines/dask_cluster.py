"""A dask.distributed cluster on this machine, for the duration of a job.

`prepare --runner=DaskRunner --dask_workers=N` (`beam_runners`) and `mine
--dask_workers=N` (`inference.dask_mining`) start theirs here, so that both
run alike: `workers` worker processes of one thread each, on 127.0.0.1
only, no dashboard; Dask's scratch space in a directory of its own, removed
with the cluster (`atomic_file.private_temporary_directory`); and Dask's own
INFO lines (its scheduler, nannies and workers starting, retiring and
closing run in this process) left out of the command's output, its
warnings and errors kept but one: a worker process that takes more than
Dask's 4 s to exit when the cluster closes (TensorFlow's teardown can) is
killed, as it should be, without a warning line at the end of every run.
"""
import contextlib
import logging
from typing import Iterator

from cmlm.data_pipelines import atomic_file

INSTALL = ("a local Dask cluster needs dask and distributed: run `pip "
           "install -r requirements-beam.txt`.")


class _SlowExitFilter(logging.Filter):
  """Drops the nanny's "Worker process still alive after N seconds,
  killing" of a cluster being closed."""

  def filter(self, record: logging.LogRecord) -> bool:
    return not record.getMessage().startswith("Worker process still alive")


@contextlib.contextmanager
def local_cluster(workers: int) -> Iterator["distributed.LocalCluster"]:
  """Yields a `distributed.LocalCluster` of `workers` processes; closes it
  on any exit.

  Raises:
    ValueError: `workers` below 1, or dask.distributed not installed (one
      sentence each, before anything starts).

  Examples:
    with local_cluster(2) as cluster, distributed.Client(cluster) as client:
      client.submit(...)
  """
  if workers < 1:
    raise ValueError(f"A local Dask cluster needs 1 or more workers; got "
                     f"{workers}.")
  try:
    import distributed  # pylint: disable=g-import-not-at-top
  except ImportError as missing:
    raise ValueError(INSTALL) from missing
  dask_logs = logging.getLogger("distributed")
  level = dask_logs.level
  dask_logs.setLevel(max(level, logging.WARNING))
  slow_exit = _SlowExitFilter()
  nanny_logs = logging.getLogger("distributed.nanny")
  nanny_logs.addFilter(slow_exit)
  try:
    with atomic_file.private_temporary_directory("cmlm-dask"), \
        distributed.LocalCluster(
            n_workers=workers, processes=True, threads_per_worker=1,
            host="127.0.0.1", dashboard_address=None) as cluster:
      yield cluster
  finally:
    nanny_logs.removeFilter(slow_exit)
    dask_logs.setLevel(level)
