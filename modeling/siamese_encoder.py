"""The siamese encoder: transformer + pooling (paper section 2).

One `BertEncoderV2` built with `with_dense_inputs=True` serves both CMLM
passes: it embeds s1 into the sentence vector v, and it reads the masked s2
with the projected vectors P(v) appended to s2's token embeddings. At inference
only the first pass is kept (section 2, "At inference time ...").
"""
from typing import Optional

import tensorflow as tf
import tf_keras

from cmlm.modeling.pooling import SentencePooling
from cmlm.modeling.pooling_heads import PoolingHead
from cmlm.modeling.projection_head import ProjectionHead
from official.modeling import tf_utils
from official.nlp.configs import encoders
from official.nlp.modeling import networks

SENTENCE_REPRESENTATIONS = ("pooled", "proj")


def build_transformer(config: encoders.BertEncoderConfig,
                      num_conditioning_vectors: int = 0,
                      seq_length: Optional[int] = None
                      ) -> networks.BertEncoderV2:
  """Builds Model Garden's BERT encoder able to take appended dense vectors.

  Args:
    config: Model Garden's BERT encoder config (its field names are the
      ecosystem's: hidden_size, num_layers, num_attention_heads, ...).
    num_conditioning_vectors: N, the vectors appended to s2's embeddings;
      position embeddings must cover seq_length + N.
    seq_length: the longest token sequence that will be fed, if known.
  """
  if config.embedding_size not in (None, config.hidden_size):
    raise ValueError(
        "CMLM appends hidden-size vectors to the token embeddings, so "
        f"encoder.embedding_size must equal hidden_size ({config.hidden_size})"
        f" or be unset, got {config.embedding_size}.")
  if seq_length is not None and (
      seq_length + num_conditioning_vectors > config.max_position_embeddings):
    raise ValueError(
        f"seq_length {seq_length} + {num_conditioning_vectors} conditioning "
        "vectors exceeds encoder.max_position_embeddings "
        f"({config.max_position_embeddings}); raise it.")
  transformer = networks.BertEncoderV2(
      vocab_size=config.vocab_size,
      hidden_size=config.hidden_size,
      num_layers=config.num_layers,
      num_attention_heads=config.num_attention_heads,
      intermediate_size=config.intermediate_size,
      activation=tf_utils.get_activation(config.hidden_activation),
      dropout_rate=config.dropout_rate,
      attention_dropout_rate=config.attention_dropout_rate,
      max_sequence_length=config.max_position_embeddings,
      type_vocab_size=config.type_vocab_size,
      initializer=tf_keras.initializers.TruncatedNormal(
          stddev=config.initializer_range),
      norm_first=config.norm_first,
      with_dense_inputs=True,
      name="transformer")
  return _build_and_freeze_pooler(transformer)


def _build_and_freeze_pooler(transformer: networks.BertEncoderV2
                             ) -> networks.BertEncoderV2:
  # Build the variables now (the MLM head ties to the embedding table), on
  # one-token zeros: a call on the symbolic `transformer.inputs` would first
  # convert every layer's `call` with AutoGraph, seconds of a process.
  transformer({name: tf.zeros([1 if dim is None else dim
                               for dim in spec.shape], spec.dtype)
               for name, spec in transformer.inputs.items()})
  # Sentence vectors come from `SentencePooling`; BERT's [CLS] pooler dense
  # layer is never on the path, so it is frozen rather than left without
  # gradients.
  transformer.pooler_layer.trainable = False
  return transformer


def build_from_input_shapes(model: tf_keras.Model, input_shapes) -> None:
  """Builds a model of int32 inputs by calling it on zeros of those shapes
  (unknown dimensions 1): Keras's `Model.build` feeds float placeholders,
  which the embedding lookup refuses."""
  model({key: tf.zeros([1 if dim is None else dim for dim in shape], tf.int32)
         for key, shape in input_shapes.items()})


def serialize_transformer(transformer: networks.BertEncoderV2) -> dict:
  """The transformer's Keras config, its layer name included (Model Garden's
  `BertEncoderV2.get_config` leaves the name out, and the variables' names
  follow it)."""
  serialized = tf_keras.layers.serialize(transformer)
  serialized["config"] = dict(serialized["config"], name=transformer.name)
  return serialized


def deserialize_transformer(config, custom_objects=None
                            ) -> networks.BertEncoderV2:
  """`serialize_transformer`'s inverse: built, its pooler frozen as in
  `build_transformer`. A transformer object passes through unchanged."""
  if not isinstance(config, dict):
    return config
  return _build_and_freeze_pooler(
      tf_keras.layers.deserialize(config, custom_objects=custom_objects))


@tf_keras.utils.register_keras_serializable(package="cmlm")
class SiameseEncoder(tf_keras.Model):
  """Text ids in, sentence embedding out; TF-Hub's encoder interface.

  The paper's siamese encoder (section 2, footnote 2): the one transformer
  that embeds s1 and reads the masked s2. Inputs: a dict of int32
  `[batch, seq_length]` tensors `input_word_ids`, `input_mask`,
  `input_type_ids`. Outputs: `default` and `pooled_output` (the sentence
  embedding), `sequence_output`, `encoder_outputs`.

  With a `pooling_head` (a registered trained head, `modeling/pooling_heads`)
  the sentence embedding is the head's reduction of `sequence_output`
  instead of `pooling`. With `trainable_core=False` the transformer (and
  projection head) is frozen: its variables are not trainable (no
  gradients, no optimizer slots) and it always runs with `training=False`
  (no dropout); only the pooling head and the objectives' heads train.

  Args:
    transformer: a `BertEncoderV2` (see `build_transformer`).
    pooling: "mean", "cls" or "max" (table 9).
    sentence_representation: "pooled" uses v itself; "proj" uses the mean of
      the N projected vectors, v_s = 1/N sum_i v_p^(i) (table 7, "proj").
    projection_head: the CMLM projection P (None: the run trains no CMLM);
      required for "proj".
    pooling_head: a `PoolingHead`, or None.
    trainable_core: False freezes the transformer and projection head.
  """

  def __init__(self, transformer: networks.BertEncoderV2,
               pooling: str = "mean",
               sentence_representation: str = "pooled",
               projection_head: Optional[ProjectionHead] = None,
               pooling_head: Optional[PoolingHead] = None,
               trainable_core: bool = True,
               **kwargs):
    super().__init__(**kwargs)
    if pooling_head is not None and sentence_representation == "proj":
      raise ValueError('A pooling head replaces the pooled sentence vector; '
                       'it cannot be combined with '
                       'sentence_representation="proj".')
    if sentence_representation not in SENTENCE_REPRESENTATIONS:
      raise ValueError(
          "sentence_representation must be one of "
          f"{', '.join(SENTENCE_REPRESENTATIONS)}, got "
          f"{sentence_representation!r}.")
    if sentence_representation == "proj" and projection_head is None:
      raise ValueError('sentence_representation="proj" needs the projection '
                       "head of the CMLM model.")
    self.transformer = transformer
    self.pooling = SentencePooling(pooling, name="pooling")
    self.sentence_representation = sentence_representation
    if projection_head is not None and not projection_head.weights:
      # Built now, whole: a checkpoint of the encoder holds P even when no
      # objective of the run calls it (a later CMLM stage restores it).
      projection_head(tf.zeros([1, self.hidden_size]))
    self.projection_head = projection_head
    self.pooling_head = pooling_head
    self.trainable_core = trainable_core
    if not trainable_core:
      transformer.trainable = False
      if projection_head is not None:
        projection_head.trainable = False

  @property
  def hidden_size(self) -> int:
    return self.transformer.get_config()["hidden_size"]

  def sentence_vector(self, inputs, training=None):
    """Returns (v `[batch, hidden]`, the transformer's outputs) for `inputs`
    (v is the `pooling` of the sequence output, also under a pooling head)."""
    outputs = self.transformer(
        dict(input_word_ids=inputs["input_word_ids"],
             input_mask=inputs["input_mask"],
             input_type_ids=inputs["input_type_ids"]),
        training=training if self.trainable_core else False)
    vector = self.pooling(outputs["sequence_output"], inputs["input_mask"])
    return vector, outputs

  def call(self, inputs, training=None):
    vector, outputs = self.sentence_vector(inputs, training=training)
    if self.pooling_head is not None:
      # [batch, time, hidden] -> [batch, output_size]
      vector = self.pooling_head(outputs["sequence_output"],
                                 inputs["input_mask"], training=training)
    elif self.sentence_representation == "proj":
      # [batch, num_projections, hidden] -> [batch, hidden]
      vector = tf.reduce_mean(self.projection_head(vector), axis=1)
    return dict(default=vector, pooled_output=vector,
                sequence_output=outputs["sequence_output"],
                encoder_outputs=outputs["encoder_outputs"])

  def get_config(self):
    serialize = lambda layer: (None if layer is None else
                               tf_keras.layers.serialize(layer))
    return dict(super().get_config(), name=self.name, trainable=self.trainable,
                transformer=serialize_transformer(self.transformer),
                pooling=self.pooling.mode,
                sentence_representation=self.sentence_representation,
                projection_head=serialize(self.projection_head),
                pooling_head=serialize(self.pooling_head),
                trainable_core=self.trainable_core)

  @classmethod
  def from_config(cls, config, custom_objects=None):
    config = dict(config)
    config["transformer"] = deserialize_transformer(config["transformer"],
                                                    custom_objects)
    for key in ("projection_head", "pooling_head"):
      if isinstance(config.get(key), dict):
        config[key] = tf_keras.layers.deserialize(
            config[key], custom_objects=custom_objects)
    return cls(**config)

  def build_from_config(self, config):
    build_from_input_shapes(self, config["input_shape"])
