"""Mining's search on a dask.distributed cluster: the query shards of
`nearest_neighbours.search` as tasks on the cluster's workers.

The client builds each key shard's FAISS index once, serialises it
(`faiss.serialize_index`) and scatters it to every worker; each task opens
the queries' .npy memory-mapped by its path (the workers read the same
file: a local cluster, or a shared file system), searches its shard
against every key-shard index and merges the top k across them
(`nearest_neighbours.merge_top_k`), exactly as one process does. A worker
killed mid-task is replaced and its tasks run again elsewhere (the
scheduler's `allowed-failures`), so the pairs are those of one process.
Dask keeps one copy of scattered data (its Active Memory Manager drops the
other replicas of a broadcast), so a killed worker can take an index with
it: the shards still to run are then cancelled, and `search` builds and
scatters the indexes again for them (`RESCATTERS` times at most).
Sentences are encoded on the cluster beforehand by `dask_encoding`.

    from dask.distributed import Client, LocalCluster
    with LocalCluster(n_workers=4, threads_per_worker=1) as cluster, \\
        Client(cluster) as client:
      result = bitext_mining.mine(np.load("en.npy", mmap_mode="r"),
                                  np.load("de.npy", mmap_mode="r"),
                                  client=client)
"""
from concurrent import futures as concurrent_futures
import contextlib
import itertools
import sys
from typing import List, Optional, Tuple, Union

import numpy as np

from cmlm.data_pipelines import dask_cluster
from cmlm.inference import nearest_neighbours


def memory_map_path(array: np.ndarray, name: str) -> str:
  """The .npy file a memory-mapped `array` was opened from (workers open it
  again); ValueError for an array in memory."""
  path = getattr(array, "filename", None)
  if not isinstance(array, np.memmap) or not path:
    raise ValueError(f"Searching on a Dask cluster reads the {name} "
                     "embeddings from their .npy file: give them memory-"
                     "mapped (np.load(path, mmap_mode='r')).")
  return path


def search_shard(queries_path: str, start: int, stop: int, k: int,
                 key_offsets, *indexes
                 ) -> Union[Tuple[np.ndarray, np.ndarray], ValueError]:
  """One task: rows [start, stop) of the queries' .npy searched against the
  serialised key-shard indexes (starting at `key_offsets`), top k merged.
  Rows holding NaN or infinity return `read_unit_rows`'s ValueError, which
  `search` raises: raised here, the worker would log it, traceback and all,
  before the command's one line."""
  import faiss  # pylint: disable=g-import-not-at-top
  try:
    queries = nearest_neighbours.read_unit_rows(
        np.load(queries_path, mmap_mode="r"), start, stop)
  except ValueError as error:
    return error
  similarities = np.full((stop - start, k), -np.inf, dtype=np.float32)
  indices = np.full((stop - start, k), -1, dtype=np.int64)
  for offset, serialised in zip(key_offsets, indexes):
    index = faiss.deserialize_index(serialised)
    found, found_indices = index.search(queries, min(k, index.ntotal))
    found_indices = np.where(found_indices >= 0, found_indices + offset, -1)
    found = np.where(found_indices >= 0, found, -np.inf)
    similarities, indices = nearest_neighbours.merge_top_k(
        similarities, indices, found, found_indices, k)
  return similarities, indices


# How often `search` builds and scatters the key indexes again after the
# cluster lost them with a dead worker, before it gives up.
RESCATTERS = 3


def search(client, queries: np.ndarray, keys: np.ndarray, k: int,
           config: nearest_neighbours.IndexConfig = nearest_neighbours.IndexConfig(),
           query_shard_size: Optional[int] = 100_000,
           key_shard_size: Optional[int] = None, on_progress=None,
           task=search_shard) -> Tuple[np.ndarray, np.ndarray]:
  """`nearest_neighbours.search` with the query shards as tasks of the
  dask.distributed `client` (`queries` memory-mapped); `task` runs one
  shard (`search_shard`). RuntimeError when the cluster lost the indexes
  more than `RESCATTERS` times (module docstring)."""
  queries_path = memory_map_path(queries, "query")
  k = min(k, len(keys))
  similarities = np.empty((len(queries), k), dtype=np.float32)
  indices = np.empty((len(queries), k), dtype=np.int64)
  pending = nearest_neighbours.shard_bounds(len(queries), query_shard_size)
  for scatters in itertools.count(1):
    offsets, indexes = _scatter_indexes(client, keys, config, key_shard_size)
    shards = [client.submit(task, queries_path, start, stop, k, offsets,
                            *indexes, pure=False) for start, stop in pending]
    done = 0
    try:
      for (start, stop), future in zip(pending, shards):
        found = future.result()
        if isinstance(found, ValueError):  # the shard's rows (`search_shard`)
          raise found
        similarities[start:stop], indices[start:stop] = found
        done += 1
        if on_progress:
          on_progress(stop - start)
      return similarities, indices
    except concurrent_futures.CancelledError:  # an index died with a worker
      pending = pending[done:]
      if scatters > RESCATTERS:
        times = "once" if scatters == 1 else f"{scatters} times"
        raise RuntimeError(
            f"The Dask cluster lost the search's key indexes {times} (each "
            "time with a worker that died); the search stopped.") from None
      shards_left = (f"{len(pending)} query shards" if len(pending) != 1
                     else "query shard")
      print(f"A worker died holding the key indexes: building and "
            f"scattering them again for the {shards_left} left.",
            file=sys.stderr, flush=True)
    finally:
      for future in shards + indexes:
        client.cancel(future)


def _scatter_indexes(client, keys: np.ndarray,
                     config: nearest_neighbours.IndexConfig,
                     key_shard_size: Optional[int]) -> Tuple[List[int], list]:
  """(each key shard's first row, the future of its serialised FAISS index
  scattered to every worker): built here one shard at a time."""
  import faiss  # pylint: disable=g-import-not-at-top
  offsets, indexes = [], []
  for key_start, key_stop in nearest_neighbours.shard_bounds(len(keys),
                                                             key_shard_size):
    index = nearest_neighbours.build_index(
        nearest_neighbours.read_unit_rows(keys, key_start, key_stop), config)
    offsets.append(key_start)
    # A key of its own (not the data's hash): cancelling an earlier
    # scatter of the same bytes must not forget this one.
    indexes.append(client.scatter(faiss.serialize_index(index),
                                  broadcast=True, hash=False))
    del index
  return offsets, indexes


def remote_client(address: str, flag: str = "--dask_address"):
  """A dask.distributed Client of the running scheduler at `address`;
  ValueError, one sentence naming `flag`, when `address` is not one or no
  scheduler answers there (after Dask's connect timeout,
  `distributed.comm.timeouts.connect`: 30 s unless configured)."""
  from dask import distributed  # pylint: disable=g-import-not-at-top
  try:
    return distributed.Client(address)
  except ValueError as error:  # "missing port number in address 'x'"
    raise ValueError(f"{flag}={address} is not a scheduler address "
                     f"({error}); give tcp://HOST:8786.") from None
  except OSError as error:  # "Timed out trying to connect to ..."
    raise ValueError(f"{flag}={address}: no Dask scheduler answered "
                     f"({error}).") from None


@contextlib.contextmanager
def local_client(workers: int):
  """A dask.distributed Client of a LocalCluster of `workers` processes,
  one thread each (`dask_cluster.local_cluster`: Dask's INFO lines left
  out); closed on exit, its workers' scratch space with it."""
  with dask_cluster.local_cluster(workers) as cluster:
    from dask import distributed  # pylint: disable=g-import-not-at-top
    with distributed.Client(cluster) as client:
      yield client
