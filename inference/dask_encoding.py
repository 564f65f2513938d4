"""Mining's encode stage on a dask.distributed cluster: the sentences in
shards, each shard one task on the cluster's workers, into one .npy file.

Each worker process loads the model once (`embedders.load_embedder`, the
loader and backend `encode_files.encode_file` uses; the workers read the
model directory: a local cluster, or a shared file system) and embeds its
shards as `encode_files` does for float32 output: `Embedder.embed`, then
`postprocess.truncate_and_normalize`. The client writes each shard's rows
into the .npy (`numpy.lib.format.open_memmap`) as they arrive and keeps a
few shards in flight, so its memory is bounded by those shards, not the
corpus. A worker killed mid-shard is replaced and its shard encoded again
elsewhere (the scheduler's `allowed-failures`): the rows are those of one
process.

    with dask_mining.local_client(4) as client:
      dask_encoding.encode(client, "exports/tiny", sentences, "en.npy")
"""
import itertools
from typing import Callable, Dict, List, Optional

import numpy as np

from cmlm.inference import nearest_neighbours

# Sentences a task encodes: enough to keep a worker busy for a while, few
# enough that a killed worker loses little and a shard's rows are small.
SHARD_SIZE = 10_000

_EMBEDDERS: Dict[str, object] = {}  # model -> Embedder, one a worker process


def encode_shard(model: str, sentences: List[str],
                 batch_size: int) -> np.ndarray:
  """One task: `sentences` embedded by `model` (loaded once per process),
  float32 `[len(sentences), dim]`, L2-normalised."""
  # pylint: disable=g-import-not-at-top
  from cmlm.inference import embedders
  from cmlm.inference import postprocess
  if model not in _EMBEDDERS:
    _EMBEDDERS[model] = embedders.load_embedder(model, None, None, False)
  rows = _EMBEDDERS[model].embed(sentences, batch_size)
  return postprocess.truncate_and_normalize(rows, None, True)


def encode(client, model: str, sentences: List[str], output_path: str,
           shard_size: int = SHARD_SIZE, batch_size: int = 256,
           on_progress: Optional[Callable[[int], None]] = None,
           shards_in_flight: Optional[int] = None,
           task=encode_shard) -> str:
  """Writes the embeddings of `sentences` (row i: sentence i) to the .npy
  `output_path`, shards of `shard_size` sentences as tasks of the
  dask.distributed `client`, `shards_in_flight` at a time (default: two a
  worker); `task` encodes one shard (`encode_shard`). Returns the path."""
  from dask import distributed  # pylint: disable=g-import-not-at-top
  if shard_size < 1:
    raise ValueError(f"shard_size must be 1 or more, got {shard_size}.")
  if not sentences:
    raise ValueError("There are no sentences to encode.")
  bounds = iter(nearest_neighbours.shard_bounds(len(sentences), shard_size))
  if not shards_in_flight:
    shards_in_flight = 2 * max(len(client.scheduler_info()["workers"]), 1)
  rows_of = {}  # future's key -> (start, stop)
  running = distributed.as_completed()

  def submit(start: int, stop: int) -> None:
    future = client.submit(task, model, sentences[start:stop], batch_size,
                           pure=False)
    rows_of[future.key] = (start, stop)
    running.add(future)

  for start, stop in itertools.islice(bounds, shards_in_flight):
    submit(start, stop)
  output = None
  for future in running:
    start, stop = rows_of.pop(future.key)
    rows = future.result()
    future.release()
    if output is None:
      output = np.lib.format.open_memmap(
          output_path, mode="w+", dtype=np.float32,
          shape=(len(sentences), rows.shape[1]))
    output[start:stop] = rows
    if on_progress:
      on_progress(stop - start)
    for start, stop in itertools.islice(bounds, 1):
      submit(start, stop)
  output.flush()
  del output
  return output_path
