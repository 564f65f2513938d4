"""MiSAD's loss (Li et al. 2020, section 3.2): L_MiSAD = MSE(E^w + E^R, E^S).

E^w, E^R and E^S are the sentence representations of the n-gram w alone, of
the rest R of the sentence (S without w) and of the whole sentence S.

`normalization` says where unit length is imposed. The paper says E^w, E^R
and E^S "are all normalized to unit lengths", and wants the vector equation
vector(w) + vector(R) = vector(S) (eq. 2). Read literally, with unit vectors
u_w, u_R, u_S: |u_w + u_R - u_S|^2 = 0 needs |u_w + u_R| = 1, i.e.
2 + 2 cos(u_w, u_R) = 1: it is 0 exactly when u_w and u_R are 120 degrees
apart (cos = -1/2) and u_S = u_w + u_R. That form pulls every n-gram and its
remainder to 120 degrees, which eq. 2 does not ask for (with u_w = u_R = u_S
it is 1/dim, not 0). So:
  * "unit_renormalized_sum" (the default; the reference code, `run_mse.py`):
    the sum u_w + u_R is normalised again before the MSE, so the loss is a
    distance between directions, 0 whenever u_w + u_R points along u_S, at
    any angle between u_w and u_R;
  * "unit": the literal reading above (minimum only at 120 degrees), kept as
    an option to reproduce it;
  * "none": the raw vectors, MSE(E^w + E^R, E^S).

The MSE is the mean over the batch and the dimensions (PyTorch's
`MSELoss()`), in float32.
"""
import tensorflow as tf

NORMALIZATIONS = ("unit", "unit_renormalized_sum", "none")


def misad_loss(ngram_embedding, rest_embedding, sentence_embedding,
               normalization: str = "unit_renormalized_sum", weights=None):
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
