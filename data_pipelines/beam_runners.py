"""Running the Beam jobs of `prepare` on any runner, Dask's included.

Every job of `prepare` (`beam_pairs`, `beam_bitext`) is built and run here:
`new_pipeline` reads Beam's options, `run_to_end` runs the job and waits.
What differs between runners is kept in this module:

  * the DirectRunner's worker processes are ended at once on Ctrl-C or
    SIGTERM (`run_to_end`);
  * the DaskRunner (Beam's `apache_beam.runners.dask.dask_runner`, on a
    `dask.distributed` cluster) is named `DaskRunner` here as the other
    runners are; a job gets one Dask partition per input file (up to
    `MAX_DASK_PARTITIONS`) unless `--dask_npartitions` or
    `--dask_partition_size` says otherwise, as the DaskRunner's `Reshuffle`
    moves nothing and its default puts 128 inputs in one partition; the
    scheduler is reached before anything is written (a wrong address is one
    line); the runner's client is closed when the job ends; and a job the
    cluster lost (a task whose workers all died, the scheduler gone) is
    `JobFailed`, one line.

The DaskRunner of Beam 2.77 lacks things the jobs used to rely on, so the
jobs no longer use them on any runner: metrics (its result has none: the
counts travel with the data as `beam_text.Tally`), a `DoFn`'s
`finish_bundle` output (dropped: `BatchElements` lost each bundle's last
batch, so sentences are batched per file), tagged outputs (all land in
the main one: `beam_text.split_tallies` filters instead) and side inputs
(evaluated by recomputing their whole input inside a task: the totals are
combined without one); and it computes only the last transform applied
(the summary's writer, `beam_shards`, is last and reads everything).
`local_dask_cluster` starts a cluster on this machine.

Beam 2.77's local runners leave two or three empty directories per job in
the system's temporary directory (`beam-temp*`, `tmp*`: Prism's job
server and staging), and Dask's workers their `dask-scratch-space`; a job
run here and a `local_dask_cluster` make them in a directory of their own
instead, removed when they end (`atomic_file.private_temporary_directory`).
"""
import contextlib
import logging
import os
import signal
import threading
import time
from typing import Iterator, List, Sequence

import apache_beam as beam
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions

from cmlm.data_pipelines import atomic_file
from cmlm.data_pipelines import beam_text
from cmlm.data_pipelines import dask_cluster

DASK_RUNNER = 'apache_beam.runners.dask.dask_runner.DaskRunner'
# Dask partitions of a job's inputs, at most: one task per file up to this,
# files grouped beyond (each partition is a task the scheduler tracks).
MAX_DASK_PARTITIONS = 4096
_DASK_INSTALL = ('the DaskRunner needs dask and distributed: run `pip install '
                 '-r requirements-beam.txt`.')


class JobFailed(RuntimeError):
  """The runner lost the job (on Dask: every worker that ran a task died,
  or the scheduler went away); nothing was published."""


def _runner_name(args: Sequence[str]) -> str:
  runner = ''
  for arg in args:
    if arg.startswith('--runner='):
      runner = arg.split('=', 1)[1]
  return runner


def uses_dask(pipeline_args: Sequence[str]) -> bool:
  """Whether `pipeline_args` name the DaskRunner (short or full name)."""
  return _runner_name(pipeline_args) in ('DaskRunner', DASK_RUNNER)


def dask_scheduler_given(pipeline_args: Sequence[str]) -> bool:
  """Whether `pipeline_args` say which Dask cluster to use."""
  return any(arg.split('=', 1)[0] in ('--dask_client_address',
                                      '--dask_scheduler_file')
             for arg in pipeline_args)


def _option(args: Sequence[str], name: str, default=None):
  value = default
  for arg in args:
    if arg.startswith(f'--{name}='):
      value = arg.split('=', 1)[1]
  return value


def dask_args(pipeline_args: Sequence[str], num_inputs: int) -> List[str]:
  """Beam's options with the DaskRunner's full name and, unless the user
  gave the partitioning, one partition per input (at most
  `MAX_DASK_PARTITIONS`). Other runners' options are returned as given.

  Examples:
    >>> dask_args(['--runner=DaskRunner'], 3)[1:]
    ['--dask_npartitions=3']
    >>> dask_args(['--runner=DaskRunner'], 3)[0] == f'--runner={DASK_RUNNER}'
    True
  """
  args = list(pipeline_args)
  if not uses_dask(args):
    return args
  args = [f'--runner={DASK_RUNNER}' if arg == '--runner=DaskRunner' else arg
          for arg in args]
  if not any(arg.split('=', 1)[0] in ('--dask_npartitions',
                                      '--dask_partition_size')
             for arg in args):
    args.append(f'--dask_npartitions='
                f'{max(1, min(num_inputs, MAX_DASK_PARTITIONS))}')
  return args


def check_dask_scheduler(pipeline_args: Sequence[str]) -> None:
  """Connects to the scheduler the options name (none named: the DaskRunner
  starts a local cluster itself); raises ValueError, one sentence, if it
  cannot be reached or Dask is not installed."""
  try:
    import distributed  # pylint: disable=g-import-not-at-top
  except ImportError as missing:
    raise ValueError(_DASK_INSTALL) from missing
  address = _option(pipeline_args, 'dask_client_address')
  scheduler_file = _option(pipeline_args, 'dask_scheduler_file')
  if not (address or scheduler_file):
    return
  timeout = _option(pipeline_args, 'dask_connection_timeout')
  settings = {'timeout': int(timeout)} if timeout else {}
  try:
    client = distributed.Client(address=address,
                                scheduler_file=scheduler_file,
                                set_as_default=False, **settings)
  except (OSError, ValueError) as error:
    raise ValueError(f'Cannot reach the Dask scheduler '
                     f'{address or scheduler_file}: {error}') from error
  client.close()


def new_pipeline(pipeline_args: Sequence[str], num_inputs: int
                 ) -> beam.Pipeline:
  """A pipeline for Beam's options (`dask_args` applied); on Dask, the
  scheduler is reached first."""
  args = dask_args(pipeline_args, num_inputs)
  if uses_dask(args):
    check_dask_scheduler(args)
  try:
    return beam.Pipeline(options=PipelineOptions(args))
  except ValueError as e:  # Beam's words, with the flag that gave the name
    if 'Unexpected pipeline runner' not in str(e):
      raise
    raise ValueError(f'--runner={_runner_name(args)}: {e}') from None


def _ready_worker() -> None:
  """Run on each worker of a `local_dask_cluster` before the job. To
  unpickle it, a worker imports this module and with it Beam and
  TensorFlow, which the job's first tasks would otherwise wait for; Dask's
  own progress lines (INFO) are then left out of this terminal."""
  logging.getLogger('distributed').setLevel(logging.WARNING)


@contextlib.contextmanager
def local_dask_cluster(workers: int) -> Iterator[str]:
  """A Dask cluster on this machine for the duration of a job
  (`dask_cluster.local_cluster`: `workers` worker processes of one thread
  each, on 127.0.0.1 only, no dashboard, Dask's INFO lines left out), Beam
  and TensorFlow imported on each worker before the job. Yields the
  scheduler's address; closes the cluster on any exit.

  Examples:
    with local_dask_cluster(2) as address:
      prepare_pairs(..., ['--runner=DaskRunner',
                          f'--dask_client_address={address}'])
  """
  with dask_cluster.local_cluster(workers) as cluster:
    import distributed  # pylint: disable=g-import-not-at-top
    with distributed.Client(cluster, set_as_default=False) as client:
      client.run(_ready_worker)
    yield cluster.scheduler_address


def _is_lost_job(error: BaseException) -> bool:
  """A failure of the cluster, not of our code: distributed's own errors
  (`KilledWorker`, a closed connection, a cancelled future)."""
  return type(error).__module__.split('.')[0] == 'distributed'


def _close_client(result) -> None:
  # The DaskRunner's result holds the client it opened and never closes.
  client = getattr(result, 'client', None)
  if client is not None and hasattr(client, 'close'):
    client.close()


def _run_and_wait(pipeline: beam.Pipeline):
  try:
    result = pipeline.run()
    try:
      result.wait_until_finish()
    finally:
      _close_client(result)
  except Exception as error:  # pylint: disable=broad-except
    if not _is_lost_job(error):
      raise
    reason = str(error).split('. ')[0].strip().rstrip('.')
    raise JobFailed(f'The cluster lost the job ({type(error).__name__}: '
                    f'{reason}); nothing was published.') from error
  return result


def run_to_end(pipeline: beam.Pipeline) -> beam.runners.runner.PipelineResult:
  """Runs `pipeline` and waits for it to finish.

  A stop signal (Ctrl-C, SIGTERM) while the job runs first ends this
  process's worker processes (the DirectRunner's `multi_processing` mode, a
  `local_dask_cluster`), and any that Beam starts after it until Beam's
  threads that watch them are done, then goes on as the signal's own
  handler says (`python -m cmlm`: one line, exit 130 or 143). Without that,
  Beam's cleanup waits for every worker to finish its bundle and the stop
  never comes. Workers are found in /proc (Linux); elsewhere, and on a remote
  cluster, the signal acts alone.

  Beam's temporaries of the job are made in, and removed with, an
  `atomic_file.private_temporary_directory`.

  Raises:
    JobFailed: the cluster lost the job (see `_is_lost_job`).
  """
  with atomic_file.private_temporary_directory('cmlm-beam'):
    if threading.current_thread() is not threading.main_thread():
      return _run_and_wait(pipeline)
    return _run_with_stop_signals(pipeline)


def _run_with_stop_signals(pipeline: beam.Pipeline
                           ) -> beam.runners.runner.PipelineResult:
  """`_run_and_wait`, stop signals ending this process's workers first
  (`run_to_end`)."""
  stopping = []
  job_ended = threading.Event()

  def end_workers_then(previous):
    def handle(signum, frame):
      if not stopping:
        threading.Thread(target=_keep_ending_workers, args=(job_ended,),
                         daemon=True, name='cmlm-end-workers').start()
      stopping.append(signum)
      _terminate_descendants()
      if callable(previous):
        previous(signum, frame)
      elif previous != signal.SIG_IGN:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    return handle

  def quiet_ended_workers(args):
    # A worker ended here makes Beam's threads that watched or served it
    # raise (`run_worker`, `beam_control_read`'s RpcError): the stop is
    # ours, not their error.
    if not (stopping and args.thread is not threading.main_thread()):
      previous_hook(args)

  previous_hook = threading.excepthook
  threading.excepthook = quiet_ended_workers
  previous = {number: signal.getsignal(number)
              for number in (signal.SIGINT, signal.SIGTERM)}
  for number, handler in previous.items():
    signal.signal(number, end_workers_then(handler))
  # Beam logs the traceback of a step's error before it raises the error
  # itself (the command says it in one line; CMLM_DEBUG=1 shows the rest).
  beam_logger = logging.getLogger("apache_beam")
  beam_level = beam_logger.level
  beam_logger.setLevel(max(beam_level, logging.CRITICAL))
  try:
    return _run_and_wait(pipeline)
  finally:
    job_ended.set()
    beam_logger.setLevel(beam_level)
    for number, handler in previous.items():
      signal.signal(number, handler)
    if not stopping:
      threading.excepthook = previous_hook


def _keep_ending_workers(job_ended: threading.Event,
                         interval: float = 0.1) -> None:
  """`_terminate_descendants` every `interval` after the stop's own sweep
  (a daemon thread), until the job's call has returned and no Beam thread
  still watches a worker process. Beam's `run_worker` threads start their
  workers asynchronously: one started just after the stop's sweep would keep
  its thread, and the interpreter's exit that joins it, waiting forever."""
  while not (job_ended.is_set() and not any(
      thread.name == 'run_worker' and thread.is_alive()
      for thread in threading.enumerate())):
    time.sleep(interval)
    _terminate_descendants()


def _terminate_descendants() -> None:
  """SIGKILL to every process under this one, deepest first (/proc), but
  multiprocessing's resource tracker."""
  try:
    entries = [entry for entry in os.listdir('/proc') if entry.isdigit()]
  except OSError:
    return
  children = {}
  for entry in entries:
    try:
      with open(f'/proc/{entry}/stat', encoding='utf-8') as f:
        parent = int(f.read().rsplit(')', 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
      continue
    children.setdefault(parent, []).append(int(entry))
  order, pending = [], [os.getpid()]
  while pending:
    for child in children.get(pending.pop(), []):
      order.append(child)
      pending.append(child)
  for pid in reversed(order):
    if _is_resource_tracker(pid):
      continue  # it cleans up after the others, then ends by itself
    try:
      os.kill(pid, signal.SIGKILL)
    except OSError:
      pass


def _is_resource_tracker(pid: int) -> bool:
  """multiprocessing's resource tracker (a `local_dask_cluster` has one)."""
  try:
    with open(f'/proc/{pid}/cmdline', 'rb') as f:
      return b'multiprocessing.resource_tracker' in f.read()
  except OSError:
    return False


def query_counts(result: beam.runners.runner.PipelineResult
                 ) -> beam_text.Counts:
  """The `cmlm` Beam counters of a finished job (committed values where the
  runner has them, else attempted). Runners without metrics (Dask) have
  none: `prepare`'s jobs carry their counts as data (`beam_text.Tally`);
  MiSAD's `prepare_ngrams` still reads them here."""
  counts = beam_text.Counts()
  query = result.metrics().query(MetricsFilter().with_namespace(
      beam_text.METRICS_NAMESPACE))
  for counter in query['counters']:
    name, _, language = counter.key.metric.name.partition('/')
    value = counter.committed
    if value is None:
      value = counter.attempted
    by_language = counts.by_name.setdefault(name, {})
    by_language[language] = by_language.get(language, 0) + (value or 0)
  return counts
