"""The demo's measures on toy models whose answer is known."""
import cmlm.data_pipelines  # noqa: F401  (selects Keras 2 before TensorFlow loads)

import numpy as np
import pytest
import tensorflow as tf

from cmlm.evaluation import demo_measures
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


def _one_hot_embed(texts):
  return np.eye(10)[[int(t[1:]) for t in texts]]


def test_retrieval_ranks_the_s2_an_embedding_pairs_with_s1_first():
  pairs = [(f"a{i}", f"b{i}") for i in range(10)]
  ranks = demo_measures.retrieval_ranks(_one_hot_embed, pairs)
  assert ranks.tolist() == [1] * 10
  measures = demo_measures.retrieval_measures(ranks)
  assert measures["retrieval_top1"] == 1.0
  assert measures["retrieval_mrr"] == 1.0
  shifted = [(f"a{i}", f"b{(i + 1) % 10}") for i in range(10)]
  ranks = demo_measures.retrieval_ranks(_one_hot_embed, shifted)
  assert demo_measures.retrieval_measures(ranks)["retrieval_top1"] == 0.0
  assert (ranks > 1).all()


def test_retrieval_ranks_count_the_candidates_scored_above_the_true_s2():
  # Unit vectors on a quarter circle: s2 j at 10j degrees, s1 i at 10i + 12,
  # so s2 i+1 (2 degrees off) and s2 i+2 (8) beat the true s2 i (12) where
  # they exist.
  def embed(texts):
    degrees = np.array([10 * int(t[1:]) + (12 if t[0] == "a" else 0)
                        for t in texts])
    radians = np.deg2rad(degrees)
    return np.stack([np.cos(radians), np.sin(radians)], axis=1)
  pairs = [(f"a{i}", f"b{i}") for i in range(8)]
  ranks = demo_measures.retrieval_ranks(embed, pairs)
  assert ranks.tolist() == [3, 3, 3, 3, 3, 3, 2, 1]
  measures = demo_measures.retrieval_measures(ranks)
  assert measures["retrieval_median_rank"] == 3.0
  assert measures["retrieval_mrr"] == pytest.approx((6 / 3 + 1 / 2 + 1) / 8)


def test_a_collapsed_encoder_ranks_at_chance_not_first():
  pairs = [(f"a{i}", f"b{i}") for i in range(9)]
  constant = lambda texts: np.ones([len(texts), 4]) / 2  # one vector for all
  ranks = demo_measures.retrieval_ranks(constant, pairs)
  assert ranks.tolist() == [5.0] * 9  # the middle of 9 tied places
  assert demo_measures.retrieval_measures(ranks)["retrieval_top1"] == 0.0


def test_retrieval_gain_interval_excludes_zero_only_for_a_real_change():
  rng = np.random.default_rng(0)
  before = rng.integers(1, 200, size=300)
  gain, (low, high) = demo_measures.retrieval_gain(before, before)
  assert gain == 0.0 and low == 0.0 and high == 0.0
  better = np.maximum(1, before // 4)  # every pair ranked 4x higher
  gain, (low, high) = demo_measures.retrieval_gain(before, better)
  assert 0 < low < gain < high
  assert gain == pytest.approx(np.mean(1 / better - 1 / before))
  noise = rng.permutation(before)  # same ranks, shuffled across pairs
  _, (low, high) = demo_measures.retrieval_gain(before, noise)
  assert low < 0 < high
