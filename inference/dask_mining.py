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
Sentences are encoded on the cluster beforehand by `dask_encoding`.

    from dask.distributed import Client, LocalCluster
    with LocalCluster(n_workers=4, threads_per_worker=1) as cluster, \\
        Client(cluster) as client:
      result = bitext_mining.mine(np.load("en.npy", mmap_mode="r"),
                                  np.load("de.npy", mmap_mode="r"),
                                  client=client)
"""
import contextlib
from typing import Optional, Tuple, Union

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


def search(client, queries: np.ndarray, keys: np.ndarray, k: int,
           config: nearest_neighbours.IndexConfig = nearest_neighbours.IndexConfig(),
           query_shard_size: Optional[int] = 100_000,
           key_shard_size: Optional[int] = None, on_progress=None,
           task=search_shard) -> Tuple[np.ndarray, np.ndarray]:
  """`nearest_neighbours.search` with the query shards as tasks of the
  dask.distributed `client` (`queries` memory-mapped); `task` runs one
  shard (`search_shard`)."""
  import faiss  # pylint: disable=g-import-not-at-top
  queries_path = memory_map_path(queries, "query")
  k = min(k, len(keys))
  offsets, indexes = [], []
  for key_start, key_stop in nearest_neighbours.shard_bounds(len(keys),
                                                             key_shard_size):
    index = nearest_neighbours.build_index(
        nearest_neighbours.read_unit_rows(keys, key_start, key_stop), config)
    offsets.append(key_start)
    indexes.append(client.scatter(faiss.serialize_index(index),
                                  broadcast=True))
    del index
  bounds = nearest_neighbours.shard_bounds(len(queries), query_shard_size)
  futures = [client.submit(task, queries_path, start, stop, k, offsets,
                           *indexes, pure=False) for start, stop in bounds]
  similarities = np.empty((len(queries), k), dtype=np.float32)
  indices = np.empty((len(queries), k), dtype=np.int64)
  for (start, stop), future in zip(bounds, futures):
    found = future.result()
    if isinstance(found, ValueError):  # the shard's rows (`search_shard`)
      raise found
    similarities[start:stop], indices[start:stop] = found
    if on_progress:
      on_progress(stop - start)
  for future in indexes:
    client.cancel(future)
  return similarities, indices


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
