"""Masked language modeling over the shared encoder: MMLM and TLM (InfoXLM
sections 3.1-3.2, eq. 2; XLM, Conneau and Lample 2019).

TLM feeds the concatenated translation pair "[CLS] x [SEP] y [SEP]" with
segment ids by side and positions reset at the start of y, as XLM does.
Model Garden's `BertEncoderV2` computes absolute positions itself and takes
no position ids; it does take `input_word_embeddings` in place of its own
lookup. `position_reset_word_embeddings` uses that: it feeds

    word_embedding(ids) + P[position_ids] - P[0 .. L-1]

so that the encoder's own `+ P[0 .. L-1]` leaves exactly
word_embedding + P[position_ids] (+ type embedding). Gradients reach the
embedding table and P exactly as with native position ids (the two P[0..L-1]
terms cancel), and the encoder, its checkpoints and its export are unchanged.

The MLM head is Model Garden's `layers.MaskedLM`, its output layer tied to
the word-embedding table (eq. 2's g_theta_E), as the CMLM head's is.
"""
import tensorflow as tf
import tf_keras

from cmlm.modeling.siamese_encoder import SiameseEncoder
from official.modeling import tf_utils
from official.nlp.modeling import layers


def build_masked_lm_head(transformer, activation: str = "gelu",
                         initializer_range: float = 0.02,
                         name: str = "cls/predictions") -> layers.MaskedLM:
  """BERT's MLM head (dense + layer norm, then logits against the tied
  word-embedding table, plus a bias)."""
  return layers.MaskedLM(
      embedding_table=transformer.get_embedding_table(),
      activation=tf_utils.get_activation(activation),
      initializer=tf_keras.initializers.TruncatedNormal(
          stddev=initializer_range),
      name=name)


def position_embedding_table(transformer) -> tf.Variable:
  """The `[max_sequence_length, width]` position table of a BertEncoderV2."""
  tables = [w for w in transformer.weights
            if "position_embedding" in w.name]
  if len(tables) != 1:
    raise ValueError("The transformer has no single position embedding "
                     f"table (found {[w.name for w in tables]}).")
  return tables[0]


def position_reset_word_embeddings(transformer, input_word_ids: tf.Tensor,
                                   position_ids: tf.Tensor) -> tf.Tensor:
  """Word embeddings `[batch, seq_length, width]` that make BertEncoderV2
  use `position_ids` (int `[batch, seq_length]`) instead of 0..L-1."""
  embeddings = transformer.get_embedding_layer()(input_word_ids)
  table = position_embedding_table(transformer)
  length = tf.shape(input_word_ids)[1]
  # [batch, seq_length, width] - [1, seq_length, width]
  correction = (tf.gather(table, position_ids) -
                table[tf.newaxis, :length, :])
  return embeddings + tf.cast(correction, embeddings.dtype)


def masked_lm_outputs(encoder: SiameseEncoder, head: layers.MaskedLM,
                      features, training=None):
  """MLM logits `[batch, num_predictions, vocab]` at `masked_lm_positions`.

  `features` holds `input_word_ids` (masked), `input_mask`,
  `input_type_ids`, `masked_lm_positions` and, for TLM, `position_ids`.
  """
  inputs = dict(input_word_ids=features["input_word_ids"],
                input_mask=features["input_mask"],
                input_type_ids=features["input_type_ids"])
  if "position_ids" in features:
    inputs["input_word_embeddings"] = position_reset_word_embeddings(
        encoder.transformer, features["input_word_ids"],
        features["position_ids"])
  outputs = encoder.transformer(inputs, training=training)
  logits = head(outputs["sequence_output"],
                masked_positions=features["masked_lm_positions"])
  return dict(mlm_logits=logits)
