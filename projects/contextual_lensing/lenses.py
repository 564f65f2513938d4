"""Contextual lenses: reductions of a frozen core's token states to one vector.

Kiros & Chan 2020 ("Contextual Lensing of Universal Sentence
Representations", arXiv:2002.10018, section 3) split a sentence vector into s = Psi_L(Psi_B(S; Theta_B); Theta_L):
the core Psi_B (any transformer of the garden, its variables frozen) gives the
token states E `[batch, time, hidden]`, and a small "lens" Psi_L with its own
parameters reduces E to a fixed-size vector. The three lenses of section 3:

  * `MeanPoolLens`: s = meanpool{E}_T, no parameters (the "uniform" baseline).
  * `SimpleLens`: F^(i) = ReLU(W E^(i) + b), s = maxpool{F}_T (output size D).
  * `GatedConvLens`: InferLite's gated convolutions (equations 1-4):
      H_0 = phi(W_0,h E + b),  H_i = phi(W_i,h * H_{i-1} + b)  (i = 1..M)
      G_0, G_i likewise (the controller); H_M ends in tanh, G_M in sigmoid,
      F' = H_M (.) G_M + G_0,  F = ReLU(W_f F' + b_f),  s = maxpool{F}_T.

Padding never leaks: every layer's states are zeroed at padded positions
(a convolution then sees the same zeros past a sentence's end whether the
batch is padded further or not), and max-pooling ignores them, so adding
padding leaves a lens's output unchanged. `binary_vectors` thresholds a
ReLU + max-pool lens output into sparse binary vectors (section 4.2:
threshold 1.0, about 2.5% active).

Each lens is a registered pooling head of the core
(`cmlm.modeling.pooling_heads`): `task.model.pooling_head.type` = "mean",
"simple" or "gated_conv", with the fields of `LensConfig`. The encoder holds
it as its `pooling_head`; a lens adds to the serving SavedModel the signature
of its binary vectors:

    signature serving_binary:
      inputs:  sentences        tf.string  [batch]
      outputs: binary           tf.float32 [batch, D]  1.0 where s >= threshold
               active_fraction  tf.float32 [batch]     the share of 1.0s

thresholded on the lens output itself (before any L2 normalisation) at
`binary_threshold`, which the SavedModel keeps as the variable
`binary_threshold`. Hamming or Jaccard similarity of these vectors is what
`cmlm eval --binary_threshold` scores.
"""
import dataclasses
from typing import List, Sequence

import tensorflow as tf
import tf_keras

from cmlm.data_pipelines.tokenization import STRING_BATCH
from cmlm.modeling import pooling
from cmlm.modeling import pooling_heads

LENS_TYPES = ("mean", "simple", "gated_conv")
BINARY_SIGNATURE_NAME = "serving_binary"
BINARY_OUTPUT_NAME = "binary"
ACTIVE_FRACTION_NAME = "active_fraction"


@dataclasses.dataclass
class LensConfig(pooling_heads.PoolingHeadConfig):
  """`task.model.pooling_head` of a lens over the core's token states.

  Attributes:
    type: "mean", "simple" or "gated_conv" (section 3).
    output_size: D, the sentence vector's size (the paper: 1024 or 4096).
    gating_size: the width of the encoder and controller layers of
      GatedConv (table 3: 128, 256 or 512).
    num_conv_layers: M, the convolutions after H_0 and G_0 (1 or more).
    kernel_widths: each convolution's width; one width is used for all M.
    dropout_rate: dropout on E while training (table 3's "embedding
      dropout": 0, 0.1 or 0.2).
    binary_threshold: sparse binary vectors are `s >= binary_threshold`
      (section 4.2: 1.0).
  """
  type: str = "gated_conv"
  output_size: int = 1024
  gating_size: int = 256
  num_conv_layers: int = 1
  kernel_widths: List[int] = dataclasses.field(default_factory=lambda: [3])
  dropout_rate: float = 0.0
  binary_threshold: float = 1.0

  def validate(self):
    super().validate()
    for field in ("output_size", "gating_size", "num_conv_layers"):
      if getattr(self, field) < 1:
        raise ValueError(f"model.pooling_head.{field} must be at least 1, got "
                         f"{getattr(self, field)}.")
    widths = list(self.kernel_widths)
    if (len(widths) not in (1, self.num_conv_layers)
        or any(w < 1 for w in widths)):
      raise ValueError(
          "model.pooling_head.kernel_widths must be one positive width or "
          f"num_conv_layers ({self.num_conv_layers}) of them, got {widths}.")
    if not 0.0 <= self.dropout_rate < 1.0:
      raise ValueError("model.pooling_head.dropout_rate must be in [0, 1), got "
                       f"{self.dropout_rate}.")


def binary_vectors(lens_output, threshold: float = 1.0):
  """Sparse binary vectors (section 4.2): 1.0 where `lens_output >=
  threshold`, else 0.0 (float32, so Hamming and Jaccard are matrix
  products)."""
  return tf.cast(lens_output >= threshold, tf.float32)


class _Lens(pooling_heads.PoolingHead):
  """`lens(sequence_output, input_mask, training)` -> `[batch, output_size]`,
  and the `serving_binary` signature of its binary vectors.

  Args:
    binary_threshold: where `serving_binary` thresholds the lens output.
  """

  def __init__(self, binary_threshold: float = 1.0, **kwargs):
    super().__init__(**kwargs)
    self.binary_threshold = binary_threshold

  def get_config(self):
    return dict(super().get_config(), binary_threshold=self.binary_threshold)

  def serving_signatures(self, serving_model):
    """`serving_binary` (see the module docstring) on `serving_model`, an
    `export.serving.TextEmbedding`, which keeps the threshold variable."""
    serving_model.binary_threshold = tf.Variable(
        self.binary_threshold, trainable=False, dtype=tf.float32,
        name="binary_threshold")

    @tf.function(input_signature=[STRING_BATCH], autograph=False)
    def serve_binary(sentences):
      """`[batch]` strings -> sparse binary vectors of the lens output."""
      embedding = serving_model.raw_embedding(sentences)  # [batch, D]
      binary = binary_vectors(embedding, serving_model.binary_threshold)
      return {BINARY_OUTPUT_NAME: binary,
              ACTIVE_FRACTION_NAME: tf.reduce_mean(binary, axis=1)}
    serving_model.serve_binary = serve_binary
    return {BINARY_SIGNATURE_NAME: serve_binary.get_concrete_function()}


@tf_keras.utils.register_keras_serializable(package="cmlm")
class MeanPoolLens(_Lens):
  """s = meanpool{E}_T (section 3, "Average Pooling"): no parameters."""

  def call(self, sequence_output, input_mask, training=None):
    del training
    return pooling.masked_mean_pool(sequence_output, input_mask)


@tf_keras.utils.register_keras_serializable(package="cmlm")
class SimpleLens(_Lens):
  """s = maxpool{ReLU(W E + b)}_T (section 3, "Simple (Single Layer)").

  Args:
    output_size: D.
    dropout_rate: dropout on E while training.
  """

  def __init__(self, output_size: int, dropout_rate: float = 0.0,
               kernel_initializer="glorot_uniform", **kwargs):
    super().__init__(**kwargs)
    self.output_size = output_size
    self.dropout_rate = dropout_rate
    self._initializer = tf_keras.initializers.get(kernel_initializer)
    self.dropout = tf_keras.layers.Dropout(dropout_rate)
    self.dense = tf_keras.layers.Dense(output_size, activation="relu",
                                       kernel_initializer=self._initializer,
                                       name="dense")

  def call(self, sequence_output, input_mask, training=None):
    states = self.dropout(sequence_output, training=training)
    # [batch, time, output_size]
    return pooling.masked_max_pool(self.dense(states), input_mask)

  def get_config(self):
    return dict(super().get_config(), output_size=self.output_size,
                dropout_rate=self.dropout_rate,
                kernel_initializer=tf_keras.initializers.serialize(
                    self._initializer))


@tf_keras.utils.register_keras_serializable(package="cmlm")
class GatedConvLens(_Lens):
  """InferLite's gated convolutional encoder (section 3, equations 1-4).

  Encoder H and controller G each: a pointwise layer (H_0, G_0), then M
  convolutions over time; inner layers are ReLU, the last H tanh and the
  last G sigmoid. Fusion F' = H_M (.) G_M + G_0 (the residual gate), then
  F = ReLU(W_f F' + b_f) and s = maxpool{F}_T.

  Args:
    output_size: D.
    gating_size: the width of every H and G layer.
    num_conv_layers: M >= 1.
    kernel_widths: the width of each of the M convolutions (one for all).
    dropout_rate: dropout on E while training.
  """

  def __init__(self, output_size: int, gating_size: int = 256,
               num_conv_layers: int = 1,
               kernel_widths: Sequence[int] = (3,),
               dropout_rate: float = 0.0,
               kernel_initializer="glorot_uniform", **kwargs):
    super().__init__(**kwargs)
    kernel_widths = list(kernel_widths)
    if num_conv_layers < 1:
      raise ValueError("GatedConvLens needs num_conv_layers >= 1, got "
                       f"{num_conv_layers}.")
    if len(kernel_widths) == 1:
      kernel_widths = kernel_widths * num_conv_layers
    if len(kernel_widths) != num_conv_layers:
      raise ValueError(f"GatedConvLens got {len(kernel_widths)} kernel widths "
                       f"for {num_conv_layers} convolutions.")
    self.output_size = output_size
    self.gating_size = gating_size
    self.num_conv_layers = num_conv_layers
    self.kernel_widths = kernel_widths
    self.dropout_rate = dropout_rate
    self._initializer = tf_keras.initializers.get(kernel_initializer)
    self.dropout = tf_keras.layers.Dropout(dropout_rate)
    dense = lambda units, activation, name: tf_keras.layers.Dense(
        units, activation=activation, kernel_initializer=self._initializer,
        name=name)
    self.encoder_input = dense(gating_size, "relu", "encoder_0")  # H_0
    self.controller_input = dense(gating_size, "relu", "controller_0")  # G_0
    self.encoder_convolutions = []
    self.controller_convolutions = []
    for i, width in enumerate(kernel_widths, start=1):
      last = i == num_conv_layers
      for stack, activation, name in (
          (self.encoder_convolutions, "tanh" if last else "relu", "encoder"),
          (self.controller_convolutions, "sigmoid" if last else "relu",
           "controller")):
        stack.append(tf_keras.layers.Conv1D(
            gating_size, width, padding="same", activation=activation,
            kernel_initializer=self._initializer, name=f"{name}_{i}"))
    self.fusion = dense(output_size, "relu", "fusion")  # W_f, phi_f

  def call(self, sequence_output, input_mask, training=None):
    mask = pooling.float_mask(input_mask, sequence_output.dtype)  # [batch, time, 1]
    states = self.dropout(sequence_output, training=training) * mask
    # [batch, time, gating_size] each; zeroed at padding after every layer.
    encoded = self.encoder_input(states) * mask
    gate_0 = self.controller_input(states) * mask
    gate = gate_0
    for encoder_convolution, controller_convolution in zip(
        self.encoder_convolutions, self.controller_convolutions):
      encoded = encoder_convolution(encoded) * mask
      gate = controller_convolution(gate) * mask
    fused = encoded * gate + gate_0  # F' (equation 3)
    # [batch, time, output_size] (equation 4)
    return pooling.masked_max_pool(self.fusion(fused), input_mask)

  def get_config(self):
    return dict(super().get_config(), output_size=self.output_size,
                gating_size=self.gating_size,
                num_conv_layers=self.num_conv_layers,
                kernel_widths=list(self.kernel_widths),
                dropout_rate=self.dropout_rate,
                kernel_initializer=tf_keras.initializers.serialize(
                    self._initializer))


@pooling_heads.register_pooling_head("mean", LensConfig)
@pooling_heads.register_pooling_head("simple", LensConfig)
@pooling_heads.register_pooling_head("gated_conv", LensConfig)
def build_lens(config: LensConfig) -> _Lens:
  """The lens `config` describes, as the encoder's pooling head."""
  if config.type == "mean":
    return MeanPoolLens(binary_threshold=config.binary_threshold,
                        name="pooling_head")
  if config.type == "simple":
    return SimpleLens(config.output_size, config.dropout_rate,
                      binary_threshold=config.binary_threshold,
                      name="pooling_head")
  return GatedConvLens(config.output_size, config.gating_size,
                       config.num_conv_layers, list(config.kernel_widths),
                       config.dropout_rate,
                       binary_threshold=config.binary_threshold,
                       name="pooling_head")
