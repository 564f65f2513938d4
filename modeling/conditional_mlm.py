"""The Conditional Masked Language Model (paper section 2, figure 1).

s1 -> encoder -> v -> P(v) = v_p, N vectors; v_p is appended to the token
embeddings of the masked s2 and the same encoder (siamese weights) reads them;
an MLM head tied to the word-embedding table predicts s2's masked tokens. The
N conditioning positions sit after s2's tokens and are cut off before the MLM
head, so they can never be predicted. The "skip" variant of table 7 also feeds
v_p beside s2's sequence outputs into the MLM head.
"""
import tensorflow as tf
import tf_keras

from modeling.projection_head import ProjectionHead
from modeling.sentence_encoder import SentenceEncoder
from official.modeling import tf_utils
from official.nlp.modeling import layers


def s1_inputs(features):
  """The first sentence's encoder inputs, from the pipeline's features."""
  return {key: features[f"s1_{key}"]
          for key in ("input_word_ids", "input_mask", "input_type_ids")}


class ConditionalMaskedLM(tf_keras.Model):
  """Sentence encoder + projection head + MLM head, trained end to end.

  Inputs (the data pipeline's features): `s1_input_word_ids`, `s1_input_mask`,
  `s1_input_type_ids`, `s2_input_word_ids` (already masked), `s2_input_mask`,
  `s2_input_type_ids`, all int32 `[batch, seq_length]`, and
  `masked_lm_positions` int32 `[batch, num_predictions]`, indices into s2.
  Outputs: `mlm_logits` `[batch, num_predictions, vocab_size]`,
  `sentence_embedding` `[batch, hidden]` (s1's), `projections`
  `[batch, num_projections, hidden]`.

  Args:
    encoder: the `SentenceEncoder` whose transformer and pooling are shared by
      both passes.
    projection_head: P of appendix C.
    skip: the "skip" architecture of table 7.
    mlm_activation, mlm_initializer: the MLM head's transform layer.
  """

  def __init__(self, encoder: SentenceEncoder,
               projection_head: ProjectionHead, skip: bool = False,
               mlm_activation="gelu", mlm_initializer="glorot_uniform",
               **kwargs):
    super().__init__(**kwargs)
    self.encoder = encoder
    self.projection_head = projection_head
    self.skip = skip
    transformer = encoder.transformer
    self.masked_lm = layers.MaskedLM(
        embedding_table=transformer.get_embedding_table(),
        activation=tf_utils.get_activation(mlm_activation),
        initializer=mlm_initializer, name="cls/predictions")
    if skip:
      self.skip_fusion = tf_keras.layers.Dense(
          encoder.hidden_size,
          kernel_initializer=tf_utils.clone_initializer(
              tf_keras.initializers.get(mlm_initializer)),
          name="skip_fusion")

  def call(self, features, training=None):
    vector, _ = self.encoder.sentence_vector(s1_inputs(features),
                                             training=training)
    # [batch, num_projections, hidden]
    projections = self.projection_head(vector)
    num_projections = tf.shape(projections)[1]
    batch_size = tf.shape(projections)[0]
    s2_word_ids = features["s2_input_word_ids"]
    s2_outputs = self.encoder.transformer(
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
    positions = features["masked_lm_positions"]
    if self.skip:
      s2_sequence, positions = self._fuse_skip(s2_sequence, positions,
                                               projections)
    mlm_logits = self.masked_lm(s2_sequence, masked_positions=positions)
    return dict(mlm_logits=mlm_logits, sentence_embedding=vector,
                projections=projections)

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

  @property
  def checkpoint_items(self):
    """What a checkpoint holds beside the whole model, for later reuse."""
    return dict(encoder=self.encoder, projection_head=self.projection_head,
                masked_lm=self.masked_lm)
