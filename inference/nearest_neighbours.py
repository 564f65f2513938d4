"""k nearest neighbours by cosine on FAISS, by shards, for bitext mining.

The neighbourhoods of the ratio margin (Artetxe & Schwenk 2018,
arXiv:1811.01136, section 3.1) are each sentence's k nearest sentences of
the other corpus. At scale (CCMatrix, WikiMatrix) they come from FAISS:

  flat  `IndexFlatIP`, exact inner product (cosine on unit rows);
  ivf   `IndexIVFFlat`: the keys in `nlist` k-means cells, a query searching
        the `nprobe` nearest cells (approximate); k-means trains on at most
        `train_sample` keys, a sample FAISS draws;
  hnsw  `IndexHNSWFlat`: a graph of `hnsw_m` links a node, searched with a
        beam of `ef_search` (approximate).

Embeddings are read memory-mapped (`read_embeddings`) and copied into memory
one shard at a time, L2-normalised, as float32, each shard checked for NaN
and infinity as it is read (`read_unit_rows`): the queries by shards of
`query_shard_size` rows, the keys by shards of `key_shard_size` rows, one
index each, and each query's top k merged across the key shards
(`merge_top_k`). Corpora larger than memory are searched so; only the
`[queries, k]` results are held whole.
"""
import dataclasses
import math
from typing import Callable, Optional, Tuple

import numpy as np

from cmlm.inference import input_paths

INDEX_KINDS = ("flat", "ivf", "hnsw")
# FAISS warns below 39 training points a cell; IVF cells are sized so.
POINTS_PER_CELL = 39
# IVF k-means trains on at most this many keys: FAISS samples 256 keys a
# cell (ClusteringParameters.max_points_per_centroid), which at a million
# keys and 4,000 cells is every key; 2^18 keeps sides up to ~260k trained on
# every key and a million on a quarter (65 a cell). The recall this gives
# against exact search is measured by benchmarks/mine_scaling.py.
TRAIN_SAMPLE = 2 ** 18
FAISS_POINTS_PER_CELL = 256


@dataclasses.dataclass(frozen=True)
class IndexConfig:
  """Which FAISS index holds the keys, and its search parameters."""
  kind: str = "flat"
  nlist: Optional[int] = None  # ivf cells; None: 4 sqrt(keys), >= 39 a cell
  nprobe: int = 16  # ivf cells searched
  hnsw_m: int = 32  # hnsw links a node
  ef_construction: int = 200  # hnsw build beam
  ef_search: int = 128  # hnsw search beam
  train_sample: int = TRAIN_SAMPLE  # ivf k-means trains on at most these

  @property
  def exact(self) -> bool:
    return self.kind == "flat"


def read_embeddings(path: str, flag: str) -> np.ndarray:
  """The `[rows >= 1, dim]` float embeddings of the .npy file `path`,
  memory-mapped; ValueError (one sentence naming `flag`) otherwise."""
  input_paths.check_file(path, flag)
  try:
    array = np.load(path, mmap_mode="r", allow_pickle=False)
  except (ValueError, OSError) as error:
    raise ValueError(_not_npy(path, flag, error)) from None
  if not isinstance(array, np.ndarray):
    raise ValueError(f"{flag}={path} is not a .npy array (an .npz archive?).")
  if array.ndim != 2 or array.dtype.kind != "f":
    raise ValueError(f"{flag}={path} holds {array.dtype} {list(array.shape)}; "
                     "expected float embeddings [sentences, dim] (encode "
                     "--precision=float32 writes them).")
  if array.shape[0] == 0 or array.shape[1] == 0:
    raise ValueError(f"{flag}={path} holds no embeddings "
                     f"({list(array.shape)}).")
  return array


def _not_npy(path: str, flag: str, error: Exception) -> str:
  """Why `np.load` refused `path`: NumPy's `error`, but for a file that
  does not begin as a .npy does (text, any other binary), which NumPy calls
  pickled data with a hint at its Python API."""
  try:
    with open(path, "rb") as f:
      head = f.read(len(np.lib.format.MAGIC_PREFIX))
  except OSError:
    head = np.lib.format.MAGIC_PREFIX  # unreadable: NumPy's error says so
  if head != np.lib.format.MAGIC_PREFIX:
    return f"{flag}={path} is not a NumPy .npy file."
  return f"{flag}={path} is not a .npy array ({error})."


def unit_rows(rows: np.ndarray) -> np.ndarray:
  """`rows` as contiguous float32, each scaled to length 1 (zero rows stay
  zero)."""
  rows = np.array(rows, dtype=np.float32, copy=True, order="C")
  norms = np.linalg.norm(rows, axis=1, keepdims=True)
  rows /= np.maximum(norms, 1e-12)
  return rows


def read_unit_rows(embeddings: np.ndarray, start: int, stop: int
                   ) -> np.ndarray:
  """Rows [start, stop) of `embeddings` (memory-mapped: read now) as
  `unit_rows`; ValueError, one sentence naming their .npy file, when a row
  holds NaN or infinity (FAISS would rank it anywhere, and its margin
  scores be NaN). Checked shard by shard as the search reads them."""
  with np.errstate(invalid="ignore", over="ignore"):  # said below instead
    rows = unit_rows(embeddings[start:stop])  # [stop - start, dim]
  finite = np.isfinite(rows).all(axis=1)  # a NaN or inf leaves NaN in a row
  if not finite.all():
    path = getattr(embeddings, "filename", None)
    where = f"{path} holds" if path else "The embeddings hold"
    raise ValueError(f"{where} non-finite values (NaN or infinity), first in "
                     f"row {start + int(np.argmin(finite))}; mine finite "
                     "embeddings.")
  return rows


def shard_bounds(rows: int, shard_size: Optional[int]):
  """(start, stop) of consecutive shards of `shard_size` rows (one shard
  when `shard_size` is None or 0)."""
  size = shard_size or rows
  return [(start, min(start + size, rows)) for start in range(0, rows, size)]


def cells_for(num_keys: int, config: IndexConfig) -> int:
  """The IVF cell count for a shard of `num_keys` keys: `config.nlist`, or
  4 sqrt(keys) capped so each cell has `POINTS_PER_CELL` training points."""
  if config.nlist is not None:
    return config.nlist
  return max(1, min(int(4 * math.sqrt(num_keys)),
                    num_keys // POINTS_PER_CELL))


def train_points_per_cell(cells: int, config: IndexConfig) -> int:
  """The keys a cell that IVF's k-means samples: FAISS's 256, fewer when
  `config.train_sample` keys in all would be passed (never under
  `POINTS_PER_CELL`)."""
  return max(POINTS_PER_CELL,
             min(FAISS_POINTS_PER_CELL, config.train_sample // cells))


def check_index(config: IndexConfig, num_keys: int,
                key_shard_size: Optional[int] = None) -> None:
  """ValueError, one sentence, when `config` cannot index `num_keys` keys
  in shards of `key_shard_size` (said before any work)."""
  if config.kind not in INDEX_KINDS:
    raise ValueError(f"--index must be one of {', '.join(INDEX_KINDS)}, got "
                     f"{config.kind!r}.")
  smallest = min(stop - start for start, stop in
                 shard_bounds(num_keys, key_shard_size))
  if config.kind == "ivf":
    if config.nlist is not None and config.nlist < 1:
      raise ValueError(f"--nlist must be 1 or more, got {config.nlist}.")
    if config.nprobe < 1:
      raise ValueError(f"--nprobe must be 1 or more, got {config.nprobe}.")
    if cells_for(smallest, config) > smallest:
      raise ValueError(
          f"--index=ivf with --nlist={config.nlist} needs at least that many "
          f"sentences in each indexed shard to train its cells; the smallest "
          f"holds {smallest}: lower --nlist, or use --index=flat.")
  if config.kind == "hnsw":
    _check_hnsw(config)


def _check_hnsw(config: IndexConfig) -> None:
  """The one HNSW setting at fault, by its flag (`ef_construction` has none:
  only the Python API sets it)."""
  if config.hnsw_m < 2:
    raise ValueError(f"--hnsw_m must be 2 or more, got {config.hnsw_m}.")
  if config.ef_search < 1:
    raise ValueError(f"--ef_search must be 1 or more, got "
                     f"{config.ef_search}.")
  if config.ef_construction < 1:
    raise ValueError("IndexConfig.ef_construction must be 1 or more, got "
                     f"{config.ef_construction}.")


def build_index(keys: np.ndarray, config: IndexConfig):
  """A FAISS inner-product index over the unit float32 rows `keys`."""
  import faiss  # pylint: disable=g-import-not-at-top
  dim = keys.shape[1]
  if config.kind == "flat":
    index = faiss.IndexFlatIP(dim)
  elif config.kind == "ivf":
    quantizer = faiss.IndexFlatIP(dim)
    index = faiss.IndexIVFFlat(quantizer, dim, cells_for(len(keys), config),
                               faiss.METRIC_INNER_PRODUCT)
    index.cp.max_points_per_centroid = train_points_per_cell(
        index.nlist, config)
    index.train(keys)
    index.nprobe = config.nprobe
  else:
    index = faiss.IndexHNSWFlat(dim, config.hnsw_m, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = config.ef_construction
    index.hnsw.efSearch = max(config.ef_search, 1)
  index.add(keys)
  return index


def merge_top_k(similarities: np.ndarray, indices: np.ndarray,
                more_similarities: np.ndarray, more_indices: np.ndarray,
                k: int) -> Tuple[np.ndarray, np.ndarray]:
  """Each row's k most similar of both lists, most similar first; on a tie
  the earlier list's (the lower key shard's) first. FAISS pads missing
  neighbours with index -1 and similarity -inf: they sort last."""
  both = np.concatenate([similarities, more_similarities], axis=1)
  both_indices = np.concatenate([indices, more_indices], axis=1)
  order = np.argsort(-both, axis=1, kind="stable")[:, :k]  # [rows, k]
  return (np.take_along_axis(both, order, axis=1),
          np.take_along_axis(both_indices, order, axis=1))


def search(queries: np.ndarray, keys: np.ndarray, k: int,
           config: IndexConfig = IndexConfig(),
           query_shard_size: Optional[int] = 100_000,
           key_shard_size: Optional[int] = None,
           on_progress: Optional[Callable[[int], None]] = None
           ) -> Tuple[np.ndarray, np.ndarray]:
  """Each query row's `k` nearest key rows by cosine: `(similarities,
  indices)`, both `[len(queries), k]`, most similar first.

  `queries` and `keys` may be memory-mapped; they are read by shards. `k` is
  capped at `len(keys)`. `on_progress(rows)` is called after each query
  shard against each key shard.
  """
  k = min(k, len(keys))
  similarities = np.full((len(queries), k), -np.inf, dtype=np.float32)
  indices = np.full((len(queries), k), -1, dtype=np.int64)
  for key_start, key_stop in shard_bounds(len(keys), key_shard_size):
    index = build_index(read_unit_rows(keys, key_start, key_stop), config)
    shard_k = min(k, key_stop - key_start)
    for start, stop in shard_bounds(len(queries), query_shard_size):
      found, found_indices = index.search(
          read_unit_rows(queries, start, stop), shard_k)
      found_indices = np.where(found_indices >= 0, found_indices + key_start,
                               -1)
      found = np.where(found_indices >= 0, found, -np.inf)
      similarities[start:stop], indices[start:stop] = merge_top_k(
          similarities[start:stop], indices[start:stop], found,
          found_indices, k)
      if on_progress:
        on_progress(stop - start)
    del index
  return similarities, indices


def recall_against_exact(queries: np.ndarray, keys: np.ndarray,
                         approximate_indices: np.ndarray, k: int,
                         sample_size: int = 1000, seed: int = 0,
                         key_shard_size: Optional[int] = None) -> dict:
  """How well an approximate search found the exact neighbours, on a sample
  of `sample_size` queries: `recall_at_k`, the mean share of each query's
  exact k nearest keys that it found, and `top1_agreement`, how often its
  nearest key is the exact nearest one. `approximate_indices` are the
  approximate search's `[len(queries), k]` results."""
  rng = np.random.default_rng(seed)
  sample = np.sort(rng.choice(len(queries), min(sample_size, len(queries)),
                              replace=False))
  _, exact = search(queries[sample], keys, k, IndexConfig("flat"),
                    key_shard_size=key_shard_size)
  found = approximate_indices[sample]
  overlap = [len(set(a[a >= 0]) & set(e)) / exact.shape[1]
             for a, e in zip(found, exact)]
  return {"recall_at_k": float(np.mean(overlap)),
          "top1_agreement": float(np.mean(found[:, 0] == exact[:, 0])),
          "k": int(exact.shape[1]), "sample_size": int(len(sample))}
