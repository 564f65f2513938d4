"""Embedding matrices in NumPy: the garden's one L2 normalisation.

Every place that needs unit rows outside a TensorFlow graph (retrieval,
mining, analogies, `encode --normalize`, the demo) calls `l2_normalize`; an
all-zero row (a ReLU pooling head can give one) stays zero instead of becoming NaN.
"""
import numpy as np

EPSILON = 1e-12


def l2_normalize(embeddings, dtype=np.float32) -> np.ndarray:
  """`embeddings` `[..., dim]` with each row scaled to unit length."""
  embeddings = np.asarray(embeddings, dtype)
  norms = np.linalg.norm(embeddings, axis=-1, keepdims=True)
  return embeddings / np.maximum(norms, EPSILON)
