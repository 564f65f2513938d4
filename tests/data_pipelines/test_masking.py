"""BERT masking of s2 (paper section 2): counts, specials, 80/10/10."""
import cmlm.data_pipelines  # noqa: F401  (selects Keras 2 before TensorFlow loads)

import numpy as np
import pytest
import tensorflow as tf

from cmlm.data_pipelines import masking

PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4
SPECIALS = [PAD, UNK, CLS, SEP, MASK]
VOCAB_SIZE = 100


def packed_batch(batch_size, seq_length, seed=0):
  """[CLS] tokens [SEP] [PAD]..., with some [UNK] and [SEP] inside."""
  rng = np.random.default_rng(seed)
  word_ids = np.zeros([batch_size, seq_length], np.int32)
  for row in range(batch_size):
    length = rng.integers(3, seq_length + 1)
    word_ids[row, 1:length - 1] = rng.integers(5, VOCAB_SIZE, length - 2)
    word_ids[row, 1:length - 1][rng.random(length - 2) < 0.1] = UNK
    word_ids[row, [0, length - 1]] = CLS, SEP
  return word_ids, (word_ids != PAD).astype(np.int32)


def mask(word_ids, input_mask, predictions=8, rate=0.3125, seed=None):
  outputs = masking.mask_tokens(
      word_ids, input_mask, max_predictions_per_seq=predictions,
      masking_rate=rate, mask_token_id=MASK, vocab_size=VOCAB_SIZE,
      special_token_ids=SPECIALS, seed=seed)
  return [np.asarray(output) for output in outputs]


def test_masked_count_is_exact_and_unused_slots_are_zero():
  word_ids, input_mask = packed_batch(64, 24)
  _, positions, lm_ids, weights = mask(word_ids, input_mask, predictions=8)
  candidates = ((input_mask == 1) & ~np.isin(word_ids, SPECIALS)).sum(1)
  # The rate counts every real token, [CLS] and [SEP] too (as BERT).
  expected = np.minimum(np.minimum(8, np.maximum(1, np.round(
      0.3125 * input_mask.sum(1)))), candidates)
  np.testing.assert_array_equal(weights.sum(1), expected)
  for row, count in enumerate(expected.astype(int)):
    assert np.all(weights[row, :count] == 1) and np.all(weights[row, count:] == 0)
    assert np.all(positions[row, count:] == 0) and np.all(lm_ids[row, count:] == 0)
    assert list(positions[row, :count]) == sorted(set(positions[row, :count]))


def test_masked_lm_ids_are_the_original_ids_at_the_positions():
  word_ids, input_mask = packed_batch(32, 24)
  _, positions, lm_ids, weights = mask(word_ids, input_mask)
  used = weights > 0
  original = np.take_along_axis(word_ids, positions, axis=1)
  np.testing.assert_array_equal(lm_ids[used], original[used])


def test_special_tokens_and_padding_are_never_masked_or_changed():
  word_ids, input_mask = packed_batch(256, 16)
  masked, positions, _, weights = mask(word_ids, input_mask, predictions=14,
                                       rate=1.0)
  chosen = np.take_along_axis(word_ids, positions, axis=1)[weights > 0]
  assert not np.isin(chosen, SPECIALS).any()
  special = np.isin(word_ids, SPECIALS)
  np.testing.assert_array_equal(masked[special], word_ids[special])
  # With rate 1.0, every candidate (up to P) is chosen: none left over.
  assert (weights.sum(1) == np.minimum(
      14, ((input_mask == 1) & ~special).sum(1))).all()


def test_chosen_tokens_are_80_mask_10_random_10_unchanged():
  word_ids, input_mask = packed_batch(1024, 64, seed=1)
  masked, positions, lm_ids, weights = mask(word_ids, input_mask,
                                            predictions=20, rate=0.5)
  used = weights > 0
  new_ids = np.take_along_axis(masked, positions, axis=1)[used]
  old_ids = lm_ids[used]
  assert used.sum() > 10000
  to_mask = np.mean(new_ids == MASK)
  unchanged = np.mean(new_ids == old_ids)
  random = np.mean((new_ids != MASK) & (new_ids != old_ids))
  assert to_mask == pytest.approx(0.8, abs=0.02)
  assert unchanged == pytest.approx(0.1 + 0.1 / 95, abs=0.015)
  assert random == pytest.approx(0.1 * 94 / 95, abs=0.015)
  replacements = new_ids[new_ids != MASK]
  assert not np.isin(replacements, SPECIALS).any()
  assert len(np.unique(replacements)) > 80  # Drawn across the vocabulary.
  # Outside the chosen positions nothing changes.
  untouched = np.ones_like(word_ids, bool)
  np.put_along_axis(untouched, positions, ~used, axis=1)
  untouched[:, 0] = True  # Slot position 0 ([CLS]) is never a used one.
  np.testing.assert_array_equal(masked[untouched], word_ids[untouched])


def test_counts_round_and_cap():
  word_ids = np.array([[CLS] + [7] * 10 + [SEP] + [PAD] * 4,
                       [CLS, 9, SEP] + [PAD] * 13,
                       [CLS, SEP] + [PAD] * 14,
                       [CLS] + [8] * 14 + [SEP]], np.int32)
  _, _, _, weights = mask(word_ids, (word_ids != PAD).astype(np.int32),
                          predictions=4, rate=0.3125)
  # 12 tokens: round(3.75) = 4; 3: max(1, round(0.94)) = 1; no candidates;
  # 16 tokens: min(4, round(5)) = 4.
  np.testing.assert_array_equal(weights.sum(1), [4, 1, 0, 4])


@pytest.mark.parametrize('num_tokens,expected', [(256, 80), (128, 40),
                                                 (26, 8)])
def test_full_256_token_s2_masks_the_papers_80(num_tokens, expected):
  """Section 3: 80 of 256 tokens; a shorter s2 proportionally fewer."""
  word_ids = np.zeros([1, 256], np.int32)
  word_ids[0, 1:num_tokens - 1] = 7
  word_ids[0, [0, num_tokens - 1]] = CLS, SEP
  _, _, _, weights = mask(word_ids, (word_ids != PAD).astype(np.int32),
                          predictions=80, rate=80 / 256)
  assert weights.sum() == expected


def test_stateless_seed_is_reproducible_and_xla_compiles():
  word_ids, input_mask = packed_batch(8, 16)
  first = mask(word_ids, input_mask, seed=tf.constant([3, 4]))
  again = mask(word_ids, input_mask, seed=tf.constant([3, 4]))
  other = mask(word_ids, input_mask, seed=tf.constant([3, 5]))
  for a, b in zip(first, again):
    np.testing.assert_array_equal(a, b)
  assert not np.array_equal(first[1], other[1])

  compiled = tf.function(
      lambda ids, m: masking.mask_tokens(
          ids, m, max_predictions_per_seq=8, masking_rate=0.3125,
          mask_token_id=MASK, vocab_size=VOCAB_SIZE,
          special_token_ids=SPECIALS, seed=tf.constant([3, 4])),
      jit_compile=True)
  # XLA may pick another stateless RNG algorithm: compare what is not random.
  _, positions, lm_ids, weights = compiled(word_ids, input_mask)
  np.testing.assert_array_equal(weights, first[3])
  np.testing.assert_array_equal(
      lm_ids, np.take_along_axis(word_ids, positions.numpy(), 1) * weights)
