"""BUCC-style parallel sentence mining with the ratio margin (Kiros et al.
2020, section 4.4; Artetxe & Schwenk 2018).

Given two monolingual corpora X and Y and the gold parallel pairs, a pair is
scored by

    score(x, y) = cos(x, y) / (sum_{z in NN_k(x)} cos(x, z) / 2k
                               + sum_{z in NN_k(y)} cos(y, z) / 2k)

where NN_k(x) are the k (= 4) nearest neighbours of x in the other corpus.
A "hub" sentence, close to everything, has a large neighbourhood mean, so
its margin scores shrink where plain cosine would pick it again and again.
Candidates are each x's best y (forward) and each y's best x (backward),
kept greedily one-to-one from the highest score down, as LASER's mining
does; the threshold on the score that maximises F1 against the gold pairs is
the "oracle" threshold of the paper's unsupervised results.
"""
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from cmlm.modeling.vectors import l2_normalize

NUM_NEIGHBOURS = 4
_CHUNK = 2048


def neighbourhood_means(x: np.ndarray, y: np.ndarray,
                        k: int = NUM_NEIGHBOURS) -> np.ndarray:
  """For each row of `x`, the mean cosine of its k nearest rows of `y`."""
  k = min(k, len(y))
  means = []
  for start in range(0, len(x), _CHUNK):
    similarities = x[start:start + _CHUNK] @ y.T  # [chunk, len(y)]
    top = -np.partition(-similarities, k - 1, axis=1)[:, :k]
    means.append(np.mean(top, axis=1))
  return np.concatenate(means)


def ratio_margin_scores(x: np.ndarray, y: np.ndarray,
                        k: int = NUM_NEIGHBOURS) -> np.ndarray:
  """The full `[len(x), len(y)]` matrix of ratio-margin scores (small
  corpora and tests; `mine` works by chunks)."""
  x, y = l2_normalize(x), l2_normalize(y)
  denominator = (neighbourhood_means(x, y, k)[:, None] +
                 neighbourhood_means(y, x, k)[None, :]) / 2
  return (x @ y.T) / denominator


def _best_matches(queries, keys, query_means, key_means, margin: bool
                  ) -> Tuple[np.ndarray, np.ndarray]:
  """Each query's best key and its score (margin or cosine), by chunks."""
  best, scores = [], []
  for start in range(0, len(queries), _CHUNK):
    similarities = queries[start:start + _CHUNK] @ keys.T
    if margin:
      similarities = similarities / (
          (query_means[start:start + _CHUNK, None] + key_means[None, :]) / 2)
    index = np.argmax(similarities, axis=1)
    best.append(index)
    scores.append(similarities[np.arange(len(index)), index])
  return np.concatenate(best), np.concatenate(scores)


def mine_candidates(x: np.ndarray, y: np.ndarray, k: int = NUM_NEIGHBOURS,
                    score: str = "ratio_margin"
                    ) -> List[Tuple[int, int, float]]:
  """One-to-one candidate pairs `(x index, y index, score)`, best first.

  Args:
    x, y: the two corpora's embeddings, `[n, dim]` and `[m, dim]`.
    k: neighbourhood size of the margin.
    score: "ratio_margin", or "cosine" (the baseline that hubs mislead).
  """
  if score not in ("ratio_margin", "cosine"):
    raise ValueError(
        f"score must be 'ratio_margin' or 'cosine', got {score!r}.")
  x, y = l2_normalize(x), l2_normalize(y)
  margin = score == "ratio_margin"
  x_means = neighbourhood_means(x, y, k) if margin else None
  y_means = neighbourhood_means(y, x, k) if margin else None
  forward, forward_scores = _best_matches(x, y, x_means, y_means, margin)
  backward, backward_scores = _best_matches(y, x, y_means, x_means, margin)
  candidates = ([(i, int(j), float(s)) for i, (j, s) in
                 enumerate(zip(forward, forward_scores))] +
                [(int(i), j, float(s)) for j, (i, s) in
                 enumerate(zip(backward, backward_scores))])
  candidates.sort(key=lambda c: -c[2])
  kept, used_x, used_y = [], set(), set()
  for i, j, s in candidates:
    if i not in used_x and j not in used_y:
      used_x.add(i)
      used_y.add(j)
      kept.append((i, j, s))
  return kept


def f1_optimal_threshold(candidates: Sequence[Tuple[int, int, float]],
                         gold: Sequence[Tuple[int, int]]) -> Dict[str, float]:
  """The threshold (mine pairs scoring >= it) with the best F1 vs `gold`.

  Thresholds are tried only between distinct scores, so tied candidates are
  kept or dropped together.
  """
  gold = set(map(tuple, gold))
  if not candidates or not gold:
    return {"f1": 0.0, "precision": 0.0, "recall": 0.0, "threshold": None,
            "num_mined": 0}
  ordered = sorted(candidates, key=lambda c: -c[2])
  scores = np.array([c[2] for c in ordered])
  true = np.cumsum([(i, j) in gold for i, j, _ in ordered])
  mined = np.arange(1, len(ordered) + 1)
  last_of_tie = np.append(scores[1:] != scores[:-1], True)
  precision = true / mined
  recall = true / len(gold)
  f1 = np.where(true > 0, 2 * precision * recall /
                np.maximum(precision + recall, 1e-12), 0.0)
  f1 = np.where(last_of_tie, f1, -1.0)
  best = int(np.argmax(f1))
  return {"f1": 100.0 * float(f1[best]),
          "precision": 100.0 * float(precision[best]),
          "recall": 100.0 * float(recall[best]),
          "threshold": float(scores[best]), "num_mined": int(mined[best])}


def scores_at_threshold(candidates, gold, threshold: float
                        ) -> Dict[str, float]:
  """Precision, recall and F1 of the candidates scoring >= `threshold`."""
  gold = set(map(tuple, gold))
  mined = [(i, j) for i, j, s in candidates if s >= threshold]
  true = sum(pair in gold for pair in mined)
  precision = true / len(mined) if mined else 0.0
  recall = true / len(gold) if gold else 0.0
  f1 = 2 * precision * recall / (precision + recall) if true else 0.0
  return {"f1": 100 * f1, "precision": 100 * precision, "recall": 100 * recall,
          "threshold": threshold, "num_mined": len(mined)}


def evaluate_mining(encoder, source: Sequence[str], target: Sequence[str],
                    gold: Sequence[Tuple[int, int]], batch_size: int = 256,
                    k: int = NUM_NEIGHBOURS,
                    threshold: Optional[float] = None) -> Dict[str, object]:
  """F1 with the oracle threshold, for the ratio margin and for cosine.

  With `threshold` (e.g. the oracle threshold of a training set, as the
  paper's test columns), also the scores at that threshold.
  """
  x = encoder(list(source), batch_size)
  y = encoder(list(target), batch_size)
  candidates = mine_candidates(x, y, k)
  result = f1_optimal_threshold(candidates, gold)
  result["cosine"] = f1_optimal_threshold(
      mine_candidates(x, y, k, score="cosine"), gold)
  if threshold is not None:
    result["at_threshold"] = scores_at_threshold(candidates, gold, threshold)
  result.update(k=k, num_gold=len(set(map(tuple, gold))),
                num_source=len(source), num_target=len(target))
  return result
