"""SimCSE's train-only MLP and CMLM-CSE's auxiliary network (paper sec. 3).

CMLM-CSE (Zhang and Chen 2023, "CMLM-CSE: Based on Conditional MLM
Contrastive Learning for Sentence Embeddings", doi:10.5121/csit.2023.130805)
adds to unsupervised SimCSE
an auxiliary network (section 3.2, figure 1) that must restore the masked
tokens of x' from the sentence embedding h:

  * the lexical feature extractor (`LexicalFeatureExtractor`): a frozen copy
    of the encoder's embeddings and lower K transformer layers (paper: 8 of
    BERT-base's 12), taken from the encoder when training starts and never
    updated; it reads the masked sentence x' and gives h';
  * the semantic feature fusioner (`SemanticFeatureFusioner`): h'' =
    [h, h'_{>0}] (h in place of position 0, eq. between 4 and 5), three
    trainable transformer blocks (Model Garden's `TransformerEncoderBlock`;
    the paper's text says "extractor" once, a slip), then an MLM output
    layer predicting x''s masked tokens (eq. 5, over the masked positions).

The MLM output layer is tied to the extractor's (frozen) word-embedding table
with its own trainable transform and bias, so only the encoder (through h),
the fusioner and the head train. Extractor, fusioner and MLP are objective
state and head: checkpointed, never exported.
"""
import json

import tensorflow as tf
import tf_keras

from cmlm.modeling.siamese_encoder import serialize_transformer
from official.modeling import tf_utils
from official.nlp.modeling import layers
from official.nlp.modeling import networks

PAPER_EXTRACTOR_SHARE = 8 / 12  # 8 of BERT-base's 12 layers (section 4.1)


def default_extractor_layers(num_layers: int) -> int:
  """The paper's 8-of-12 share of the encoder's layers, rounded (>= 1)."""
  return max(1, min(num_layers, round(num_layers * PAPER_EXTRACTOR_SHARE)))


@tf_keras.utils.register_keras_serializable(package="cmlm")
class SimcseMlp(tf_keras.layers.Layer):
  """SimCSE's MLP over the pooled vector (dense + tanh), used in training
  only ("mlp_only_train"): the exported encoder leaves it out."""

  def __init__(self, initializer="glorot_uniform", **kwargs):
    super().__init__(**kwargs)
    self.initializer = tf_keras.initializers.get(initializer)

  def build(self, input_shape):
    self.dense = tf_keras.layers.Dense(
        int(input_shape[-1]), activation="tanh",
        kernel_initializer=tf_utils.clone_initializer(self.initializer),
        name="dense")
    super().build(input_shape)

  def call(self, sentence_vector):
    return self.dense(sentence_vector)

  def get_config(self):
    return dict(super().get_config(),
                initializer=tf_keras.initializers.serialize(self.initializer))


@tf_keras.utils.register_keras_serializable(package="cmlm")
class LexicalFeatureExtractor(tf_keras.layers.Layer):
  """A frozen copy of an encoder's embeddings and lower `num_layers` layers.

  Args:
    transformer: the encoder's `BertEncoderV2` (its config is copied, not its
      variables; `copy_from` copies the values), or its serialized config.
    num_layers: K, the layers kept (paper: 8 of 12).
  """

  def __init__(self, transformer, num_layers: int, **kwargs):
    kwargs["trainable"] = False
    super().__init__(**kwargs)
    serialized = (transformer if isinstance(transformer, dict)
                  else serialize_transformer(transformer))
    total = serialized["config"]["num_layers"]
    if not 1 <= num_layers <= total:
      raise ValueError(f"The extractor's num_layers must be between 1 and "
                       f"the encoder's {total} layers, got {num_layers}.")
    # A JSON string: a dict attribute would be tracked by Keras.
    self._transformer_json = json.dumps(serialized)
    self.num_layers = num_layers
    config = dict(serialized["config"], num_layers=num_layers,
                  with_dense_inputs=False, name="extractor_transformer")
    self.transformer = networks.BertEncoderV2.from_config(config)
    self.transformer.trainable = False

  def build(self, input_shape):
    ids = tf.ones([1, 2], tf.int32)
    self.transformer(dict(input_word_ids=ids, input_mask=ids,
                          input_type_ids=tf.zeros_like(ids)))
    super().build(input_shape)

  @property
  def embedding_table(self):
    return self.transformer.get_embedding_table()

  def copy_from(self, transformer: networks.BertEncoderV2) -> None:
    """Sets every variable to the value of its twin in `transformer`: the
    embeddings and the lower `num_layers` transformer layers."""
    if not self.built:
      self.build(None)
    sources = _lower_layers(transformer, self.num_layers)
    targets = _lower_layers(self.transformer, self.num_layers)
    for source, target in zip(sources, targets):
      for from_variable, to_variable in zip(source.weights, target.weights):
        to_variable.assign(from_variable)

  def call(self, inputs):
    """h' `[batch, seq_length, hidden]`: the K-th layer's output for x'."""
    outputs = self.transformer(
        dict(input_word_ids=inputs["input_word_ids"],
             input_mask=inputs["input_mask"],
             input_type_ids=inputs["input_type_ids"]), training=False)
    return tf.stop_gradient(outputs["encoder_outputs"][-1])

  def get_config(self):
    return dict(super().get_config(),
                transformer=json.loads(self._transformer_json),
                num_layers=self.num_layers)


def _lower_layers(transformer, num_layers):
  """The embedding layers and the first `num_layers` transformer layers."""
  # pylint: disable=protected-access
  embedding = [transformer._embedding_layer,
               transformer._position_embedding_layer,
               transformer._type_embedding_layer,
               transformer._embedding_norm_layer]
  if transformer._embedding_projection is not None:
    embedding.append(transformer._embedding_projection)
  return embedding + list(transformer.transformer_layers[:num_layers])


@tf_keras.utils.register_keras_serializable(package="cmlm")
class SemanticFeatureFusioner(tf_keras.layers.Layer):
  """h'' = [h, h'_{>0}] -> transformer blocks -> MLM logits at x''s masks.

  Args:
    vocab_size: the MLM output's size (the tied embedding table's rows).
    num_layers: transformer blocks (paper: 3).
    num_attention_heads, intermediate_size, activation, dropout_rate,
    attention_dropout_rate, norm_first: as the encoder's (Model Garden
      names).
    initializer: kernel initializer.
  """

  def __init__(self, vocab_size: int, num_layers: int = 3,
               num_attention_heads: int = 12, intermediate_size: int = 3072,
               activation="gelu", dropout_rate: float = 0.1,
               attention_dropout_rate: float = 0.1, norm_first: bool = False,
               initializer="glorot_uniform", **kwargs):
    super().__init__(**kwargs)
    if num_layers < 1:
      raise ValueError(f"The fusioner needs at least 1 transformer block, "
                       f"got num_layers={num_layers}.")
    self.vocab_size, self.num_layers = vocab_size, num_layers
    self.num_attention_heads = num_attention_heads
    self.intermediate_size = intermediate_size
    self.activation = activation
    self.dropout_rate = dropout_rate
    self.attention_dropout_rate = attention_dropout_rate
    self.norm_first = norm_first
    self.initializer = tf_keras.initializers.get(initializer)
    self.blocks = [
        layers.TransformerEncoderBlock(
            num_attention_heads=num_attention_heads,
            inner_dim=intermediate_size,
            inner_activation=tf_utils.get_activation(activation),
            output_dropout=dropout_rate, attention_dropout=attention_dropout_rate,
            norm_first=norm_first,
            kernel_initializer=tf_utils.clone_initializer(self.initializer),
            name=f"block_{i}") for i in range(num_layers)]
    self.attention_mask = layers.SelfAttentionMask(name="attention_mask")

  def build(self, input_shape):
    hidden = int(input_shape[-1])
    self.transform = tf_keras.layers.Dense(
        hidden, activation=tf_utils.get_activation(self.activation),
        kernel_initializer=tf_utils.clone_initializer(self.initializer),
        name="mlm_transform")
    self.transform_norm = tf_keras.layers.LayerNormalization(
        axis=-1, epsilon=1e-12, name="mlm_transform_norm")
    self.output_bias = self.add_weight("mlm_output_bias",
                                       shape=[self.vocab_size],
                                       initializer="zeros")
    super().build(input_shape)

  @staticmethod
  def fused_inputs(sentence_embedding, lexical_features):
    """h'' = [h, h'_{>0}]: h in place of position 0 of h'."""
    # [batch, 1, hidden] + [batch, seq_length - 1, hidden]
    head = tf.cast(sentence_embedding, lexical_features.dtype)[:, tf.newaxis]
    return tf.concat([head, lexical_features[:, 1:]], axis=1)

  def call(self, sentence_embedding, lexical_features, input_mask,
           masked_lm_positions, embedding_table, training=None):
    """MLM logits `[batch, num_predictions, vocab]`, float32."""
    x = self.fused_inputs(sentence_embedding, lexical_features)
    mask = self.attention_mask(x, input_mask)  # [batch, seq, seq]
    for block in self.blocks:
      x = block([x, mask], training=training)
    # [batch, num_predictions, hidden]
    x = tf.gather(x, masked_lm_positions, batch_dims=1)
    x = self.transform_norm(self.transform(x))
    # The tied table is the frozen extractor's: it gets no gradient.
    table = tf.stop_gradient(tf.cast(embedding_table, x.dtype))
    logits = tf.matmul(x, table, transpose_b=True)
    return tf.cast(logits, tf.float32) + self.output_bias

  def get_config(self):
    return dict(super().get_config(), vocab_size=self.vocab_size,
                num_layers=self.num_layers,
                num_attention_heads=self.num_attention_heads,
                intermediate_size=self.intermediate_size,
                activation=self.activation, dropout_rate=self.dropout_rate,
                attention_dropout_rate=self.attention_dropout_rate,
                norm_first=self.norm_first,
                initializer=tf_keras.initializers.serialize(self.initializer))


@tf_keras.utils.register_keras_serializable(package="cmlm")
class CmlmCseHead(tf_keras.layers.Layer):
  """CMLM-CSE's trainable parts beside the encoder: the fusioner with its
  MLM output, and SimCSE's train-only MLP when asked for. Calling it runs
  the fusioner."""

  def __init__(self, fusioner, mlp: bool = False, **kwargs):
    super().__init__(**kwargs)
    if isinstance(fusioner, dict):
      fusioner = tf_keras.layers.deserialize(fusioner)
    self.fusioner = fusioner
    self.mlp = SimcseMlp(initializer=fusioner.initializer,
                         name="simcse_mlp") if mlp else None

  def call(self, sentence_embedding, lexical_features, input_mask,
           masked_lm_positions, embedding_table, training=None):
    return self.fusioner(sentence_embedding, lexical_features, input_mask,
                         masked_lm_positions, embedding_table,
                         training=training)

  def get_config(self):
    return dict(super().get_config(),
                fusioner=tf_keras.layers.serialize(self.fusioner),
                mlp=self.mlp is not None)
