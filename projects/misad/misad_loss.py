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
`MSELoss()`), in float32. `collapse_cosines` measures how near trained
vectors are to the loss's collapsed point (E^w = E^R = E^S), which also
scores 0.
"""
import numpy as np
import tensorflow as tf

from cmlm.modeling.vectors import cosine_similarity
from cmlm.modeling.vectors import paired_cosine_similarity

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


def collapse_cosines(ngram_embedding, rest_embedding, sentence_embedding
                     ) -> dict:
  """How close E^w, E^R, E^S are to the loss's collapsed point.

  The loss is also 0 when E^w = E^R = E^S for every sentence (and, taken
  further, when every sentence has the same vector): a minimum that learns
  nothing. Two means of cosines tell the two apart from a useful minimum:

    * "within": per sentence, the mean of the 3 pairwise cosines of E^w,
      E^R and E^S, averaged over sentences (1 when the three are one
      direction);
    * "across": the mean cosine of E^S between distinct sentences (1 when
      every sentence has one vector).

  Args: `[n, dim]` arrays (numpy or tensors) of n >= 2 sentences.
  Returns: {"within": float, "across": float}.
  """
  vectors = [np.asarray(v, np.float64) for v in
             (ngram_embedding, rest_embedding, sentence_embedding)]
  if vectors[0].ndim != 2 or len(vectors[0]) < 2 or any(
      v.shape != vectors[0].shape for v in vectors):
    raise ValueError("collapse_cosines needs three [n, dim] arrays of the "
                     f"same shape, n >= 2; got {[v.shape for v in vectors]}.")
  ngram, rest, sentence = vectors
  within = np.mean([paired_cosine_similarity(a, b, np.float64) for a, b in
                    ((ngram, rest), (ngram, sentence), (rest, sentence))])
  n = len(sentence)
  gram = cosine_similarity(sentence, sentence, np.float64)  # [n, n]
  across = (gram.sum() - np.trace(gram)) / (n * (n - 1))
  return {"within": float(within), "across": float(across)}
