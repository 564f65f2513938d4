"""Sentence pooling over a transformer's `sequence_output`.

CMLM computes the sentence vector v "from the sequence outputs by average
pooling" (paper section 2); appendix A, table 9 compares MEAN with CLS and MAX
pooling. All three are offered here; padding never contributes.
"""
import tensorflow as tf
import tf_keras

POOLING_MODES = ("mean", "cls", "max")


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
    # [batch, seq_length, 1]
    mask = tf.cast(input_mask, sequence_output.dtype)[:, :, tf.newaxis]
    if self.mode == "max":
      lowest = tf.cast(sequence_output.dtype.min, sequence_output.dtype)
      masked = sequence_output * mask + lowest * (1.0 - mask)
      return tf.reduce_max(masked, axis=1)
    total = tf.reduce_sum(sequence_output * mask, axis=1)
    count = tf.maximum(tf.reduce_sum(mask, axis=1), 1.0)
    return total / count

  def get_config(self):
    return dict(super().get_config(), mode=self.mode)
