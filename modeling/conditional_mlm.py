"""The Conditional Masked Language Model (paper section 2, figure 1).

s1 -> encoder -> v -> P(v) = v_p, N vectors; v_p is appended to the token
embeddings of the masked s2 and the same encoder (siamese weights) reads them;
an MLM head tied to the word-embedding table predicts s2's masked tokens. The
N conditioning positions sit after s2's tokens and are cut off before the MLM
head, so they can never be predicted. The "skip" variant of table 7 also feeds
v_p beside s2's sequence outputs into the MLM head.

The forward pass is one function (`conditional_mlm_outputs`) over the shared
`SiameseEncoder` and CMLM's own head (`ConditionalMlmHead`), so the CMLM
objective and the `ConditionalMaskedLM` model run the same code.
"""
import json

import tensorflow as tf
import tf_keras

from cmlm.modeling.projection_head import ProjectionHead
from cmlm.modeling.siamese_encoder import SiameseEncoder
from cmlm.modeling.siamese_encoder import build_from_input_shapes
from cmlm.modeling.siamese_encoder import deserialize_transformer
from cmlm.modeling.siamese_encoder import serialize_transformer
from official.modeling import tf_utils
from official.nlp.modeling import layers


def s1_inputs(features):
  """The first sentence's encoder inputs, from the pipeline's features."""
  return {key: features[f"s1_{key}"]
          for key in ("input_word_ids", "input_mask", "input_type_ids")}


@tf_keras.utils.register_keras_serializable(package="cmlm")
class ConditionalMlmHead(tf_keras.layers.Layer):
  """CMLM's head: the MLM head tied to the word embeddings (+ table 7's skip).

  Holds no encoder weights: `conditional_mlm_outputs` runs the shared
  encoder and calls this head on s2's sequence output. Checkpointed as the
  CMLM objective's head; exported only as the encoder's `.mlm` subobject.

  Args:
    transformer: the shared `BertEncoderV2` whose embedding table the MLM
      output layer reuses.
    skip: the "skip" architecture of table 7.
    mlm_activation, mlm_initializer: the MLM head's transform layer.
  """

  def __init__(self, transformer, skip: bool = False, mlm_activation="gelu",
               mlm_initializer="glorot_uniform", **kwargs):
    super().__init__(**kwargs)
    # The transformer's config (for `get_config`), as a string: a dict would
    # be tracked, and the transformer itself checkpointed with the head.
    self._transformer_json = json.dumps(serialize_transformer(transformer))
    self.skip = skip
    self._mlm_activation = mlm_activation
    self._mlm_initializer = tf_keras.initializers.get(mlm_initializer)
    self.masked_lm = layers.MaskedLM(
        embedding_table=transformer.get_embedding_table(),
        activation=tf_utils.get_activation(mlm_activation),
        initializer=self._mlm_initializer, name="cls/predictions")
    hidden_size = transformer.get_config()["hidden_size"]
    if skip:
      self.skip_fusion = tf_keras.layers.Dense(
          hidden_size,
          kernel_initializer=tf_utils.clone_initializer(self._mlm_initializer),
          name="skip_fusion")

  def call(self, s2_sequence, positions, projections):
    """MLM logits `[batch, num_predictions, vocab]` at `positions` of s2."""
    if self.skip:
      s2_sequence, positions = self._fuse_skip(s2_sequence, positions,
                                               projections)
    return self.masked_lm(s2_sequence, masked_positions=positions)

  def _fuse_skip(self, s2_sequence, positions, projections):
    """Table 7's "skip": v_p joins s2's sequence outputs at the MLM head."""
    # [batch, num_predictions, hidden]
    gathered = tf.gather(s2_sequence, positions, batch_dims=1)
    num_predictions = tf.shape(positions)[1]
    # [batch, num_projections * hidden]
    flat = tf.reshape(projections,
                      [tf.shape(projections)[0], -1])
    # [batch, num_predictions, num_projections * hidden]
    tiled = tf.tile(flat[:, tf.newaxis, :], [1, num_predictions, 1])
    fused = self.skip_fusion(tf.concat([gathered, tiled], axis=-1))
    batch_positions = tf.broadcast_to(tf.range(num_predictions)[tf.newaxis],
                                      tf.shape(positions))
    return fused, batch_positions

  def get_config(self):
    activation = self._mlm_activation
    if not isinstance(activation, str):
      activation = tf_keras.activations.serialize(activation)
    return dict(super().get_config(),
                transformer=json.loads(self._transformer_json), skip=self.skip,
                mlm_activation=activation,
                mlm_initializer=tf_keras.initializers.serialize(
                    self._mlm_initializer))

  @classmethod
  def from_config(cls, config, custom_objects=None):
    """A transformer config builds a fresh transformer (untied from any
    other); `ConditionalMaskedLM.from_config` passes its encoder's instead."""
    config = dict(config)
    config["transformer"] = deserialize_transformer(config["transformer"],
                                                    custom_objects)
    return cls(**config)


def conditional_mlm_outputs(encoder: SiameseEncoder,
                            head: ConditionalMlmHead, features,
                            training=None):
  """CMLM's forward pass (section 2, figure 1) over the shared encoder.

  s1 -> v -> P(v) (the encoder's projection head, appendix C); P(v) is
  appended after the masked s2's token embeddings (segment B) and the same
  transformer reads both; `head` predicts s2's masked tokens from s2's
  positions only.

  Returns:
    `mlm_logits` `[batch, num_predictions, vocab_size]`, `sentence_embedding`
    `[batch, hidden]` (s1's v) and `projections`
    `[batch, num_projections, hidden]`.
  """
  vector, _ = encoder.sentence_vector(s1_inputs(features), training=training)
  # [batch, num_projections, hidden]
  projections = encoder.projection_head(vector)
  num_projections = tf.shape(projections)[1]
  batch_size = tf.shape(projections)[0]
  s2_word_ids = features["s2_input_word_ids"]
  s2_outputs = encoder.transformer(
      dict(input_word_ids=s2_word_ids,
           input_mask=features["s2_input_mask"],
           input_type_ids=features["s2_input_type_ids"],
           dense_inputs=projections,
           dense_mask=tf.ones([batch_size, num_projections], tf.int32),
           # The conditioning vectors carry the other sentence: segment B.
           dense_type_ids=tf.ones([batch_size, num_projections], tf.int32)),
      training=training)
  # [batch, seq_length + num_projections, hidden] -> s2's positions only,
  # [batch, seq_length, hidden]: the conditioning positions are never read.
  s2_length = tf.shape(s2_word_ids)[1]
  s2_sequence = s2_outputs["sequence_output"][:, :s2_length, :]
  mlm_logits = head(s2_sequence, features["masked_lm_positions"],
                    projections)
  return dict(mlm_logits=mlm_logits, sentence_embedding=vector,
              projections=projections)


def unconditioned_mlm_outputs(encoder: SiameseEncoder,
                              head: ConditionalMlmHead, features,
                              training=None):
  """Plain MLM over the same encoder and head: s2 alone, no s1, no P(v).

  The baseline CMLM is compared with (section 3.2's MLM / "BERT (CC)"): the
  conditioning removed, everything else equal. Returns `mlm_logits`.
  """
  if head.skip:
    raise ValueError("The skip head (table 7) reads the projections of s1; "
                     "it cannot run without the conditioning.")
  s2_outputs = encoder.transformer(
      dict(input_word_ids=features["s2_input_word_ids"],
           input_mask=features["s2_input_mask"],
           input_type_ids=features["s2_input_type_ids"]), training=training)
  return dict(mlm_logits=head(s2_outputs["sequence_output"],
                              features["masked_lm_positions"], None))


@tf_keras.utils.register_keras_serializable(package="cmlm")
class ConditionalMaskedLM(tf_keras.Model):
  """Sentence encoder + CMLM head as one Keras model (section 2).

  Inputs (the data pipeline's features): `s1_input_word_ids`, `s1_input_mask`,
  `s1_input_type_ids`, `s2_input_word_ids` (already masked), `s2_input_mask`,
  `s2_input_type_ids`, all int32 `[batch, seq_length]`, and
  `masked_lm_positions` int32 `[batch, num_predictions]`, indices into s2.
  Outputs: those of `conditional_mlm_outputs`. Training runs the same
  forward pass through the CMLM objective (`objectives/cmlm.py`); this model
  serves direct use, tests and the `.mlm` export.

  Args:
    encoder: the `SiameseEncoder` (with its projection head, P of
      appendix C) whose transformer and pooling both passes share.
    head: the `ConditionalMlmHead`.
  """

  def __init__(self, encoder: SiameseEncoder, head: ConditionalMlmHead,
               **kwargs):
    super().__init__(**kwargs)
    self.encoder = encoder
    self.head = head

  @property
  def projection_head(self) -> ProjectionHead:
    return self.encoder.projection_head

  @property
  def masked_lm(self):
    return self.head.masked_lm

  @property
  def skip(self) -> bool:
    return self.head.skip

  def call(self, features, training=None):
    return conditional_mlm_outputs(self.encoder, self.head, features,
                                   training=training)

  def get_config(self):
    head = self.head.get_config()
    del head["transformer"]  # the encoder's: tied again by `from_config`
    return dict(super().get_config(), name=self.name, trainable=self.trainable,
                encoder=tf_keras.layers.serialize(self.encoder), head=head)

  @classmethod
  def from_config(cls, config, custom_objects=None):
    config = dict(config)
    encoder = config["encoder"]
    if isinstance(encoder, dict):
      encoder = tf_keras.layers.deserialize(encoder,
                                            custom_objects=custom_objects)
    head = config["head"]
    if isinstance(head, dict):
      head = ConditionalMlmHead.from_config(
          dict(head, transformer=encoder.transformer))
    return cls(**dict(config, encoder=encoder, head=head))

  def build_from_config(self, config):
    build_from_input_shapes(self, config["input_shape"])
