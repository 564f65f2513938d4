"""Zero-shot semantic textual similarity (paper table 2).

The similarity of a pair is the cosine of the two sentence embeddings, with
no training on the task; the score is Spearman's rank correlation with the
gold scores, times 100. For the SemEval years (STS12–16) each dataset of a
year is scored alone, and the year reports their mean (SentEval's
`all.spearman.mean`, table 2's figure) and their mean weighted by size.
"""
from typing import Dict

import numpy as np

from cmlm.evaluation import statistics
from cmlm.evaluation.encoders import Encoder
from cmlm.evaluation.sts_readers import ScoredPairs
from cmlm.modeling.vectors import paired_cosine_similarity


def cosine_similarities(left: np.ndarray, right: np.ndarray) -> np.ndarray:
  """Row-wise cosine similarity of two `[n, dim]` arrays, `[n]`, in float64
  (`vectors.paired_cosine_similarity`)."""
  return paired_cosine_similarity(left, right, np.float64)


def evaluate_pairs(encoder: Encoder, pairs: ScoredPairs,
                   batch_size: int = 256) -> Dict[str, float]:
  """Spearman and Pearson × 100 of cosine similarity against the gold."""
  if not len(pairs):
    raise ValueError(f"{pairs.path} holds no scored sentence pair.")
  similarities = cosine_similarities(encoder(pairs.sentences1, batch_size),
                                     encoder(pairs.sentences2, batch_size))
  return {"spearman": statistics.spearman_times_100(similarities,
                                                    pairs.scores),
          "pearson": statistics.pearson_times_100(similarities, pairs.scores),
          "num_pairs": len(pairs)}


def evaluate_sts_year(encoder: Encoder, datasets: Dict[str, ScoredPairs],
                      batch_size: int = 256) -> Dict[str, object]:
  """Each dataset of one SemEval year, then their mean and weighted mean."""
  per_dataset = {name: evaluate_pairs(encoder, pairs, batch_size)
                 for name, pairs in datasets.items()}
  spearman = np.array([r["spearman"] for r in per_dataset.values()])
  sizes = np.array([r["num_pairs"] for r in per_dataset.values()])
  return {"spearman": float(np.mean(spearman)),
          "spearman_weighted": float(np.sum(spearman * sizes) / np.sum(sizes)),
          "num_pairs": int(np.sum(sizes)),
          "datasets": per_dataset}
