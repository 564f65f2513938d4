"""The demo's measures on toy models whose answer is known."""
import data_pipelines  # noqa: F401  (selects Keras 2 before TensorFlow loads)

import numpy as np
import tensorflow as tf

from cmlm import demo_measures
from tests import helpers

NUM_PAIRS, SEQ_LENGTH = 120, 6


def repeated_token_pairs(seed=0):
  """s1 and s2 are one token repeated; s2 fully masked: only s1 tells it."""
  rng = np.random.default_rng(seed)
  token = rng.integers(5, helpers.VOCAB_SIZE, size=[NUM_PAIRS, 1])
  ids = np.tile(token, [1, SEQ_LENGTH]).astype(np.int32)
  ids[:, 0], ids[:, -1] = 2, 3
  positions = np.tile(np.arange(1, SEQ_LENGTH - 1), [NUM_PAIRS, 1])
  masked = ids.copy()
  masked[:, 1:-1] = 4
  ones = np.ones_like(ids)
  features = dict(
      s1_input_word_ids=ids, s1_input_mask=ones, s1_input_type_ids=0 * ids,
      s2_input_word_ids=masked, s2_input_mask=ones, s2_input_type_ids=0 * ids,
      masked_lm_positions=positions.astype(np.int32),
      masked_lm_ids=np.take_along_axis(ids, positions, axis=1),
      masked_lm_weights=np.ones(positions.shape, np.float32))
  sources = np.arange(NUM_PAIRS) % 2
  return features, sources


def reads_s1(batch):
  """Predicts s2's tokens from s1 (a perfect use of the conditioning)."""
  token = batch["s1_input_word_ids"][:, 1]
  logits = 8.0 * tf.one_hot(token, helpers.VOCAB_SIZE)  # [batch, vocab]
  return tf.tile(logits[:, None, :], [1, SEQ_LENGTH - 2, 1])


def ignores_s1(batch):
  """The same model with the conditioning zeroed: s2's masks alone."""
  logits = tf.one_hot(batch["s2_input_word_ids"][:, 1] * 0 + 7,
                      helpers.VOCAB_SIZE)
  return tf.tile(logits[:, None, :], [1, SEQ_LENGTH - 2, 1])


def test_a_model_that_reads_s1_shows_a_large_gain_with_a_tight_interval():
  features, sources = repeated_token_pairs()
  result = demo_measures.conditioning_gain(reads_s1, features, sources)
  assert result["heldout_pairs"] == NUM_PAIRS
  assert result["heldout_mlm_loss"] < 0.05
  for key in ("conditioning_gain", "conditioning_gain_same_source",
              "conditioning_gain_other_source"):
    low, high = result[key + "_ci95"]
    assert 7.0 < low <= result[key] <= high  # about 8 nats: a wrong token


def test_a_model_with_conditioning_zeroed_shows_no_gain():
  features, sources = repeated_token_pairs()
  result = demo_measures.conditioning_gain(ignores_s1, features, sources)
  for key in ("conditioning_gain", "conditioning_gain_same_source",
              "conditioning_gain_other_source"):
    low, high = result[key + "_ci95"]
    assert abs(result[key]) < 1e-6 and low <= 0.0 <= high


def test_other_s1_is_never_the_own_or_an_identical_s1():
  features, sources = repeated_token_pairs(seed=1)
  s1 = features["s1_input_word_ids"]
  rng = np.random.default_rng(0)
  for which in ("any", "same", "other"):
    order = demo_measures.other_s1(s1, sources, rng, which)
    assert (order != np.arange(NUM_PAIRS)).all()
    assert not (s1[order] == s1).all(axis=1).any()
    if which == "same":
      assert (sources[order] == sources).all()
    if which == "other":
      assert (sources[order] != sources).all()
  order = demo_measures.other_s1(s1, sources, rng, "any")
  assert sorted(order) == list(range(NUM_PAIRS))  # a permutation


def test_retrieval_finds_the_s2_an_embedding_pairs_with_s1():
  pairs = [(f"a{i}", f"b{i}") for i in range(10)]
  basis = np.eye(10)
  def embed(texts):
    return basis[[int(t[1:]) for t in texts]]
  assert demo_measures.next_sequence_retrieval(embed, pairs) == 1.0
  shifted = [(f"a{i}", f"b{(i + 1) % 10}") for i in range(10)]
  assert demo_measures.next_sequence_retrieval(embed, shifted) == 0.0
