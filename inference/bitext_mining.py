"""Bitext mining with the margin criterion (Artetxe & Schwenk 2018,
arXiv:1811.01136), as LASER's `mine_bitexts.py` mines CCMatrix and
WikiMatrix; `python -m cmlm mine` runs it.

With NN_k(x) the k nearest sentences of x in the other corpus
(`nearest_neighbours.search`, both ways), each candidate y in NN_k(x) is
scored (section 3.1, eq. 3)

    score(x, y) = margin(cos(x, y), sum_{z in NN_k(x)} cos(x, z) / 2k
                                    + sum_{z in NN_k(y)} cos(y, z) / 2k)

with margin(a, b) = a / b ("ratio") or a - b ("distance"). Each source
sentence's best candidate is its forward pair, each target sentence's best
its backward pair; the candidate modes are LASER's (section 3.2):

  forward       every source sentence with its best target;
  backward      every target sentence with its best source;
  intersection  the forward pairs that are also backward pairs;
  max           forward and backward pairs together, kept greedily
                one-to-one from the highest score down.

Pairs scoring below `threshold` are dropped. evaluation/mining.py is the
exact numpy reference of the ratio margin (BUCC-style evaluation).
"""
import dataclasses
import sys
from typing import Dict, Optional

import numpy as np

from cmlm.inference import dask_mining
from cmlm.inference import nearest_neighbours
from cmlm.inference import progress as progress_lib

MARGINS = {
    "ratio": lambda cosine, mean: cosine / mean,
    "distance": lambda cosine, mean: cosine - mean,
}
MODES = ("forward", "backward", "intersection", "max")


@dataclasses.dataclass
class Neighbourhoods:
  """The k nearest neighbours of one corpus's sentences in the other:
  `similarities` and `indices`, `[sentences, k]`, most similar first."""
  similarities: np.ndarray
  indices: np.ndarray

  @property
  def means(self) -> np.ndarray:
    """Each sentence's mean cosine to its k nearest neighbours."""
    return self.similarities.mean(axis=1)


@dataclasses.dataclass
class MinedPairs:
  """Mined pairs, best first: source row, target row, margin score."""
  source: np.ndarray
  target: np.ndarray
  scores: np.ndarray

  def __len__(self) -> int:
    return len(self.scores)

  def as_tuples(self):
    return list(zip(self.source.tolist(), self.target.tolist(),
                    self.scores.tolist()))


def margin_scores(neighbourhoods: Neighbourhoods,
                  other_means: np.ndarray, margin: str = "ratio"
                  ) -> np.ndarray:
  """`[sentences, k]` margin scores of each sentence with its k candidates:
  margin(cos(x, y), (mean_k(x) + mean_k(y)) / 2)."""
  if margin not in MARGINS:
    raise ValueError(f"--margin must be one of {', '.join(MARGINS)}, got "
                     f"{margin!r}.")
  candidate_means = other_means[neighbourhoods.indices]  # [sentences, k]
  average = (neighbourhoods.means[:, None] + candidate_means) / 2
  return MARGINS[margin](neighbourhoods.similarities, average)


def best_candidates(neighbourhoods: Neighbourhoods, scores: np.ndarray):
  """Each sentence's highest-scoring candidate and that score."""
  best = np.argmax(scores, axis=1)
  rows = np.arange(len(scores))
  return neighbourhoods.indices[rows, best], scores[rows, best]


def select_pairs(forward, forward_scores, backward, backward_scores,
                 mode: str = "max", threshold: Optional[float] = None
                 ) -> MinedPairs:
  """The pairs of candidate mode `mode` (the module's list) scoring at least
  `threshold`, best first. `forward[i]` is source i's best target,
  `backward[j]` target j's best source."""
  if mode not in MODES:
    raise ValueError(f"--mode must be one of {', '.join(MODES)}, got "
                     f"{mode!r}.")
  sources = np.arange(len(forward))
  targets = np.arange(len(backward))
  if mode == "forward":
    source, target, scores = sources, forward, forward_scores
  elif mode == "backward":
    source, target, scores = backward, targets, backward_scores
  elif mode == "intersection":
    mutual = backward[forward] == sources
    source, target, scores = (sources[mutual], forward[mutual],
                              forward_scores[mutual])
  else:
    source, target, scores = _one_to_one(
        np.concatenate([sources, backward]), np.concatenate([forward, targets]),
        np.concatenate([forward_scores, backward_scores]))
  if threshold is not None:
    keep = scores >= threshold
    source, target, scores = source[keep], target[keep], scores[keep]
  order = np.argsort(-scores, kind="stable")
  return MinedPairs(source[order].astype(np.int64),
                    target[order].astype(np.int64), scores[order])


def _one_to_one(source, target, scores):
  """LASER's max mode: candidates from the highest score down, each kept
  unless its source or its target was kept already."""
  used_source, used_target, kept = set(), set(), []
  for position in np.argsort(-scores, kind="stable"):
    i, j = int(source[position]), int(target[position])
    if i not in used_source and j not in used_target:
      used_source.add(i)
      used_target.add(j)
      kept.append(position)
  kept = np.array(kept, dtype=np.int64)
  return source[kept], target[kept], scores[kept]


def neighbourhoods_both_ways(source, target, k: int,
                             config: nearest_neighbours.IndexConfig,
                             query_shard_size: Optional[int] = 100_000,
                             key_shard_size: Optional[int] = None,
                             show_progress: bool = False, client=None):
  """(forward, backward) `Neighbourhoods`: source in target, target in
  source; with a dask.distributed `client`, the query shards are its tasks
  (`dask_mining.search`)."""
  found = []
  for name, queries, keys in (("source -> target", source, target),
                              ("target -> source", target, source)):
    if show_progress:
      print(f"Searching {name} ({config.kind} index, k={k})...",
            file=sys.stderr, flush=True)
    shards = len(nearest_neighbours.shard_bounds(len(keys), key_shard_size))
    progress = progress_lib.Progress(len(queries) * shards,
                                     enabled=show_progress)
    if client is None:
      found.append(Neighbourhoods(*nearest_neighbours.search(
          queries, keys, k, config, query_shard_size, key_shard_size,
          progress.update)))
    else:
      found.append(Neighbourhoods(*dask_mining.search(
          client, queries, keys, k, config, query_shard_size,
          key_shard_size, progress.update)))
    progress.close()
  return found[0], found[1]


def mine(source, target, k: int = 4, margin: str = "ratio",
         mode: str = "max", threshold: Optional[float] = None,
         config: nearest_neighbours.IndexConfig = nearest_neighbours.IndexConfig(),
         query_shard_size: Optional[int] = 100_000,
         key_shard_size: Optional[int] = None,
         recall_sample: int = 1000, show_progress: bool = False,
         client=None) -> Dict[str, object]:
  """Mines `source` x `target` (embeddings `[n, dim]`, `[m, dim]`, may be
  memory-mapped): {"pairs": MinedPairs, "recall": the approximate index's
  `recall_against_exact` on `recall_sample` source sentences (None for the
  flat index)}. With a dask.distributed `client` (both sides memory-mapped),
  the search runs on its workers (`dask_mining`)."""
  if source.shape[1] != target.shape[1]:
    raise ValueError(f"The source embeddings have {source.shape[1]} "
                     f"dimensions and the target's {target.shape[1]}; mine "
                     "two corpora encoded by the same model.")
  if k < 1:
    raise ValueError(f"--k must be 1 or more, got {k}.")
  nearest_neighbours.check_index(config, min(len(source), len(target)),
                                 key_shard_size)
  if client is not None:
    dask_mining.memory_map_path(source, "source")
    dask_mining.memory_map_path(target, "target")
  forward, backward = neighbourhoods_both_ways(
      source, target, k, config, query_shard_size, key_shard_size,
      show_progress, client)
  recall = None
  if not config.exact and recall_sample > 0:
    recall = nearest_neighbours.recall_against_exact(
        source, target, forward.indices, k, recall_sample,
        key_shard_size=key_shard_size)
  forward_best = best_candidates(forward, margin_scores(
      forward, backward.means, margin))
  backward_best = best_candidates(backward, margin_scores(
      backward, forward.means, margin))
  pairs = select_pairs(*forward_best, *backward_best, mode, threshold)
  return {"pairs": pairs, "recall": recall}
