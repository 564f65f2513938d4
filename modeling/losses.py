"""Plain loss functions: CMLM's masked-token cross-entropy (section 2) and
the NLI classifier's (section 4.3). The bitext retrieval loss is in
`bitext_loss.py`.

Kept as plain functions so they can be read and tested without a model.
"""
import tensorflow as tf


def conditional_mlm_loss(masked_lm_ids, mlm_logits, masked_lm_weights,
                         normalizer=None):
  """Weighted mean cross-entropy over the predicted positions of s2.

  Args:
    masked_lm_ids: int `[batch, num_predictions]`, the original token ids.
    mlm_logits: `[batch, num_predictions, vocab_size]`.
    masked_lm_weights: float `[batch, num_predictions]`; 0 marks an unused
      prediction slot (short sentences mask fewer tokens), which adds nothing.
    normalizer: what to divide the weighted sum by; defaults to this batch's
      weight sum. Under a distribution strategy pass the weight sum of the
      global batch so that replicas add up to the global-batch loss.

  Returns:
    A scalar float32 loss.
  """
  per_token = tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=tf.cast(masked_lm_ids, tf.int32),
      logits=tf.cast(mlm_logits, tf.float32))
  weights = tf.cast(masked_lm_weights, tf.float32)
  if normalizer is None:
    normalizer = tf.reduce_sum(weights)
  return tf.math.divide_no_nan(tf.reduce_sum(per_token * weights), normalizer)


def classification_loss(labels, logits):
  """Mean softmax cross-entropy of `logits` `[batch, classes]`, in float32."""
  return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=tf.cast(labels, tf.int32), logits=tf.cast(logits, tf.float32)))
