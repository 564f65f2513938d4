"""The projection P(v) of CMLM (paper section 2 and appendix C).

The sentence vector v in R^h is projected into N spaces, one of them the
identity: v_p = P(v) in R^{N x h}. Appendix C gives each projection as a
three-layer MLP, FC(h, 2h, ReLU) -> FC(2h, 2h, ReLU) -> FC(2h, h, None). The
N - 1 non-identity MLPs have their own weights and run as one batched einsum
per layer, so N costs no Python loop.
"""
import tensorflow as tf
import tf_keras

from official.modeling import tf_utils


@tf_keras.utils.register_keras_serializable(package="cmlm")
class ProjectionHead(tf_keras.layers.Layer):
  """Maps `[batch, hidden]` to `[batch, num_projections, hidden]`.

  Slot 0 of the output is v itself (the identity projection); slot i > 0 is
  the i-th MLP of appendix C applied to v.

  Args:
    num_projections: N, the number of projected vectors including v itself
      (paper: 15, the best of table 7).
    initializer: kernel initializer of the three layers.
  """

  def __init__(self, num_projections: int = 15,
               initializer="glorot_uniform", **kwargs):
    super().__init__(**kwargs)
    if num_projections < 1:
      raise ValueError(
          f"num_projections must be at least 1, got {num_projections}.")
    self.num_projections = num_projections
    self.initializer = tf_keras.initializers.get(initializer)

  def build(self, input_shape):
    hidden = int(input_shape[-1])
    mlps = self.num_projections - 1
    layer = lambda equation, width, activation, name: (
        tf_keras.layers.EinsumDense(
            equation, output_shape=(mlps, width), activation=activation,
            bias_axes="pk",
            kernel_initializer=tf_utils.clone_initializer(self.initializer),
            name=name))
    self.mlp = []
    if mlps:
      self.mlp = [
          layer("bh,phk->bpk", 2 * hidden, "relu", "fc_1"),  # FC(h, 2h, ReLU)
          layer("bph,phk->bpk", 2 * hidden, "relu", "fc_2"),  # FC(2h, 2h, ReLU)
          layer("bph,phk->bpk", hidden, None, "fc_3"),  # FC(2h, h, None)
      ]
    super().build(input_shape)

  def call(self, sentence_vector):
    # [batch, 1, hidden]
    identity = sentence_vector[:, tf.newaxis, :]
    if not self.mlp:
      return identity
    x = sentence_vector
    for layer in self.mlp:
      x = layer(x)
    # [batch, num_projections, hidden]
    return tf.concat([identity, tf.cast(x, identity.dtype)], axis=1)

  def get_config(self):
    return dict(super().get_config(), num_projections=self.num_projections,
                initializer=tf_keras.initializers.serialize(self.initializer))
