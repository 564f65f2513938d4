"""Position reset for TLM through BertEncoderV2's `input_word_embeddings`
(masked_lm.py)."""
import numpy as np
import tensorflow as tf

from cmlm.projects.infoxlm import masked_lm
from cmlm.modeling import model_builder
from tests import helpers


def _encoder():
  return model_builder.build_siamese_encoder(helpers.tiny_model_config(),
                                              seq_length=10)


def test_reset_embeddings_equal_word_plus_given_positions():
  transformer = _encoder().transformer
  ids = tf.constant([[2, 7, 8, 3, 9, 10, 3, 0]], tf.int32)
  positions = tf.constant([[0, 1, 2, 3, 0, 1, 2, 7]], tf.int32)
  fed = masked_lm.position_reset_word_embeddings(transformer, ids, positions)
  table = masked_lm.position_embedding_table(transformer).numpy()
  words = transformer.get_embedding_table().numpy()[ids.numpy()[0]]
  # What the encoder then computes: fed + P[0..7] == words + P[positions].
  np.testing.assert_allclose(fed.numpy()[0] + table[:8],
                             words + table[positions.numpy()[0]], atol=1e-6)


def test_the_encoder_sees_reset_positions_and_identity_positions_change_nothing():
  encoder = _encoder()
  ids = tf.constant([[2, 7, 8, 3, 9, 10, 3, 0]], tf.int32)
  features = dict(input_word_ids=ids, input_mask=tf.cast(ids > 0, tf.int32),
                  input_type_ids=tf.constant([[0, 0, 0, 0, 1, 1, 1, 0]]),
                  masked_lm_positions=tf.constant([[1, 4]]))
  head = masked_lm.build_masked_lm_head(encoder.transformer)
  plain = masked_lm.masked_lm_outputs(encoder, head, features)["mlm_logits"]
  identity = masked_lm.masked_lm_outputs(
      encoder, head, dict(features, position_ids=tf.range(8)[None]))
  np.testing.assert_allclose(identity["mlm_logits"].numpy(), plain.numpy(),
                             atol=1e-5)
  reset = masked_lm.masked_lm_outputs(
      encoder, head, dict(features, position_ids=tf.constant(
          [[0, 1, 2, 3, 0, 1, 2, 7]])))["mlm_logits"]
  assert not np.allclose(reset.numpy(), plain.numpy(), atol=1e-4)
  # Gradients reach the position table only at the positions used.
  with tf.GradientTape() as tape:
    fed = masked_lm.position_reset_word_embeddings(
        encoder.transformer, ids, tf.zeros_like(ids))
    total = tf.reduce_sum(fed[0, 3])  # + the encoder's P[3]: P[0] in all
  table = masked_lm.position_embedding_table(encoder.transformer)
  gradient = tf.convert_to_tensor(tape.gradient(total, table)).numpy()
  assert np.all(gradient[0] == 1) and np.all(gradient[3] == -1)
  assert not gradient[[1, 2, 4, 5, 6, 7]].any()
