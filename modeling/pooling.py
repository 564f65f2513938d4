"""Sentence pooling over a transformer's `sequence_output`.

CMLM computes the sentence vector v "from the sequence outputs by average
pooling" (paper section 2); appendix A, table 9 compares MEAN with CLS and MAX
pooling. All three are offered here; padding never contributes.
"""
import tensorflow as tf
import tf_keras

POOLING_MODES = ("mean", "cls", "max")


def float_mask(input_mask, dtype):
  """`[batch, time, 1]` 1.0 at real tokens, 0.0 at padding.

  (`expand_dims`, not `[:, :, tf.newaxis]`: TFLite has no builtin for a
  strided slice that adds an axis, and the TFLite export needs one.)"""
  return tf.expand_dims(tf.cast(tf.not_equal(input_mask, 0), dtype), -1)


def masked_max_pool(states, input_mask):
  """maxpool{F}_T over the real tokens: `[batch, time, dim]` -> `[batch, dim]`
  (0 for a sentence with no token)."""
  mask = float_mask(input_mask, states.dtype)
  lowest = tf.cast(states.dtype.min, states.dtype)
  pooled = tf.reduce_max(tf.where(mask > 0, states, lowest), axis=1)
  has_tokens = tf.reduce_max(mask, axis=1) > 0  # [batch, 1]
  return tf.where(has_tokens, pooled, tf.zeros_like(pooled))


def masked_mean_pool(states, input_mask):
  """meanpool{E}_T over the real tokens."""
  mask = float_mask(input_mask, states.dtype)
  total = tf.reduce_sum(states * mask, axis=1)
  return total / tf.maximum(tf.reduce_sum(mask, axis=1), 1.0)


@tf_keras.utils.register_keras_serializable(package="cmlm")
class SentencePooling(tf_keras.layers.Layer):
  """Pools `[batch, seq_length, hidden]` to `[batch, hidden]`, ignoring padding.

  Args:
    mode: "mean" (default, table 9's best), "cls" (the first token's output) or
      "max" (element-wise maximum over the real tokens).
  """

  def __init__(self, mode: str = "mean", **kwargs):
    super().__init__(**kwargs)
    if mode not in POOLING_MODES:
      raise ValueError(
          f"pooling must be one of {', '.join(POOLING_MODES)}, got {mode!r}.")
    self.mode = mode

  def call(self, sequence_output, input_mask):
    if self.mode == "cls":
      return sequence_output[:, 0, :]
    if self.mode == "max":
      return masked_max_pool(sequence_output, input_mask)
    return masked_mean_pool(sequence_output, input_mask)

  def get_config(self):
    return dict(super().get_config(), mode=self.mode)
