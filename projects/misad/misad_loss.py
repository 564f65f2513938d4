"""MiSAD's loss (Li et al. 2020, section 3.2): L_MiSAD = MSE(E^w + E^R, E^S).

E^w, E^R and E^S are the sentence representations of the n-gram w alone, of
the rest R of the sentence (S without w) and of the whole sentence S.

`normalization` says where unit length is imposed:
  * "unit" (the paper, and the default): E^w, E^R and E^S are each
    normalised to unit length, then MSE(E^w + E^R, E^S). Read literally, this
    cannot reach 0: |E^w + E^R| ranges over [0, 2] while |E^S| = 1 (with
    E^w = E^R = E^S it is 1/dim).
  * "unit_renormalized_sum" (the reference code, `run_mse.py`): the sum
    E^w + E^R is normalised again before the MSE, so the loss is a distance
    between directions and is 0 when E^w + E^R points along E^S.
  * "none": the raw vectors.

The MSE is the mean over the batch and the dimensions (PyTorch's
`MSELoss()`), in float32.
"""
import tensorflow as tf

NORMALIZATIONS = ("unit", "unit_renormalized_sum", "none")


def misad_loss(ngram_embedding, rest_embedding, sentence_embedding,
               normalization: str = "unit", weights=None):
  """MSE(E^w + E^R, E^S) (section 3.2).

  Args:
    ngram_embedding: E^w `[batch, dim]`.
    rest_embedding: E^R `[batch, dim]`.
    sentence_embedding: E^S `[batch, dim]`.
    normalization: one of `NORMALIZATIONS` (see the module docstring).
    weights: optional `[batch]` weights (0 leaves an example out); the loss
      is then the weighted mean over examples.

  Returns:
    A scalar float32 loss.
  """
  if normalization not in NORMALIZATIONS:
    raise ValueError(f"normalization must be one of "
                     f"{', '.join(NORMALIZATIONS)}, got {normalization!r}.")
  vectors = [tf.cast(v, tf.float32) for v in
             (ngram_embedding, rest_embedding, sentence_embedding)]
  if normalization != "none":
    vectors = [tf.math.l2_normalize(v, axis=-1) for v in vectors]
  ngram, rest, sentence = vectors
  combined = ngram + rest
  if normalization == "unit_renormalized_sum":
    combined = tf.math.l2_normalize(combined, axis=-1)
  per_example = tf.reduce_mean(tf.square(combined - sentence), axis=-1)
  if weights is None:
    return tf.reduce_mean(per_example)
  weights = tf.cast(weights, tf.float32)
  return tf.math.divide_no_nan(tf.reduce_sum(per_example * weights),
                               tf.reduce_sum(weights))
