"""Embedding matrices in NumPy: the garden's one L2 normalisation, and its
one cosine similarity.

Every place that needs unit rows outside a TensorFlow graph (retrieval,
mining, analogies, `encode --normalize`, the demo) calls `l2_normalize`; an
all-zero row (a ReLU pooling head can give one) stays zero instead of becoming NaN.
Every cosine outside a graph (STS, MTEB's similarity, an artifact's or a
fused graph's agreement with the SavedModel, Tatoeba, a project's collapse
measure) is `cosine_similarity` (every row with every row) or
`paired_cosine_similarity` (row i with row i): the dot product of rows
`l2_normalize` made, so an all-zero row has cosine 0 with everything.
"""
import numpy as np

EPSILON = 1e-12


def l2_normalize(embeddings, dtype=np.float32) -> np.ndarray:
  """`embeddings` `[..., dim]` with each row scaled to unit length."""
  embeddings = np.asarray(embeddings, dtype)
  norms = np.linalg.norm(embeddings, axis=-1, keepdims=True)
  return embeddings / np.maximum(norms, EPSILON)


def cosine_similarity(left, right, dtype=np.float32) -> np.ndarray:
  """`[n, m]`: the cosine of every row of `left` `[n, dim]` with every row
  of `right` `[m, dim]`, computed in `dtype` (None: the arrays' own).

  Examples:
    >>> cosine_similarity([[1.0, 0.0], [0.0, 0.0]], [[3.0, 4.0]], np.float64)
    array([[0.6],
           [0. ]])
  """
  return l2_normalize(left, dtype) @ l2_normalize(right, dtype).T


def paired_cosine_similarity(left, right, dtype=np.float32) -> np.ndarray:
  """`[...]`: the cosine of each row of `left` `[..., dim]` with the same
  row of `right` (one shape), computed in `dtype` (None: the arrays' own).

  Examples:
    >>> paired_cosine_similarity([[1.0, 0.0], [1.0, 1.0]], [[3.0, 4.0],
    ...                          [2.0, 2.0]], np.float64).round(6)
    array([0.6, 1. ])
  """
  return np.sum(l2_normalize(left, dtype) * l2_normalize(right, dtype),
                axis=-1)
