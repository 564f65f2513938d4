"""Retrieval with sparse binary vectors (Kiros et al. 2020, section 4.2).

A ReLU + max-pool output s (a trained pooling head's, e.g.) is thresholded
into a binary vector
b = [s >= threshold] (the paper: threshold 1.0, about 2.5% active units);
neighbours are then found by Hamming distance (the number of differing
bits, smallest first) or by Jaccard similarity |a AND b| / |a OR b|
(largest first; two empty vectors score 0); candidates tied at the top
share the credit (`retrieval.top1_credits`). `cmlm eval --binary_threshold=T`
reports both beside cosine on Tatoeba, with the active fraction.

The threshold applies to the encoder's raw `default` output: evaluate a
training run or an encoder + preprocessor export, not an L2-normalised
serving model (whose scale is not the raw output's).
"""
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from cmlm.evaluation import retrieval
from cmlm.evaluation import statistics
from cmlm.evaluation.encoders import Encoder

SIMILARITIES = ("hamming", "jaccard")


def binary_codes(embeddings: np.ndarray, threshold: float) -> np.ndarray:
  """float32 0/1 `[n, dim]`: 1 where an embedding is >= `threshold`."""
  return (np.asarray(embeddings, np.float32) >= threshold).astype(np.float32)


def active_fraction(codes: np.ndarray) -> float:
  """The share of active (1) units over all vectors."""
  return float(np.mean(codes)) if codes.size else 0.0


def binary_scores(queries: np.ndarray, candidates: np.ndarray,
                  similarity: str) -> np.ndarray:
  """`[len(queries), len(candidates)]`, larger is nearer: minus the Hamming
  distance, or the Jaccard similarity, of 0/1 vectors."""
  return _from_counts(queries @ candidates.T,  # |a AND b|
                      queries.sum(axis=1)[:, None],
                      candidates.sum(axis=1)[None, :], similarity)


def paired_binary_scores(left: np.ndarray, right: np.ndarray,
                         similarity: str) -> np.ndarray:
  """`[n]`: `binary_scores` of row i of `left` with row i of `right`."""
  return _from_counts(np.sum(left * right, axis=1), left.sum(axis=1),
                      right.sum(axis=1), similarity)


def _from_counts(overlap, left_counts, right_counts, similarity):
  if similarity == "hamming":
    return -(left_counts + right_counts - 2.0 * overlap)
  if similarity == "jaccard":
    union = left_counts + right_counts - overlap
    return np.where(union > 0, overlap / np.maximum(union, 1.0), 0.0)
  raise ValueError(f"similarity must be one of {SIMILARITIES}, got "
                   f"{similarity!r}.")


def binary_retrieval_accuracy(queries: np.ndarray, candidates: np.ndarray,
                              similarity: str,
                              candidate_sentences: Optional[Sequence[str]]
                              = None) -> float:
  """% of queries i whose nearest candidate is i (or a copy of it), as
  `retrieval.retrieval_accuracy` with cosine. Integer Hamming scores tie
  often: tied candidates share the credit (`retrieval.top1_credits`), so no
  candidate wins a tie by its position."""
  credits = retrieval.top1_credits(
      queries, candidates, candidate_sentences,
      score=lambda q, c: binary_scores(q, c, similarity))
  return 100.0 * float(np.mean(credits))


def evaluate_tatoeba_binary(encoder: Encoder,
                            pairs: Dict[str, Tuple[List[str], List[str]]],
                            threshold: float, batch_size: int = 256
                            ) -> Dict[str, object]:
  """Tatoeba accuracy (mean of both directions) by Hamming and Jaccard on
  binary codes, per language and averaged, with the active fraction."""
  languages = {}
  for language, (foreign, english) in pairs.items():
    foreign_codes = binary_codes(encoder(foreign, batch_size), threshold)
    english_codes = binary_codes(encoder(english, batch_size), threshold)
    result = {"active_fraction": active_fraction(
        np.concatenate([foreign_codes, english_codes]))}
    for similarity in SIMILARITIES:
      to_english = binary_retrieval_accuracy(foreign_codes, english_codes,
                                             similarity, english)
      from_english = binary_retrieval_accuracy(english_codes, foreign_codes,
                                               similarity, foreign)
      result[similarity] = (to_english + from_english) / 2
    languages[language] = result
  mean = lambda key: float(np.mean([r[key] for r in languages.values()]))
  return {"threshold": threshold,
          "active_fraction": mean("active_fraction"),
          **{similarity: mean(similarity) for similarity in SIMILARITIES},
          "languages": languages}


def evaluate_pairs_binary(encoder: Encoder, pairs, threshold: float,
                          batch_size: int = 256) -> Dict[str, float]:
  """STS-style scored pairs (`sts_readers.ScoredPairs`): Spearman x 100 of
  the pairs' Hamming (negated) and Jaccard similarity against the gold."""
  left = binary_codes(encoder(pairs.sentences1, batch_size), threshold)
  right = binary_codes(encoder(pairs.sentences2, batch_size), threshold)
  result = {"threshold": threshold,
            "active_fraction": active_fraction(np.concatenate([left, right]))}
  for similarity in SIMILARITIES:
    scores = paired_binary_scores(left, right, similarity)
    result[similarity] = statistics.spearman_times_100(scores, pairs.scores)
  return result
