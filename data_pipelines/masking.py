"""BERT-style masking of the second sentence s2.

CMLM (Yang et al., 2021, section 2): "The second sentence s2 is then masked
following the procedure described in the original BERT paper, including
random replacement and the use of unchanged tokens." Section 3 masks 80 of
256 tokens (31.3%), more than BERT's 15%.

Each sequence masks min(P, c, max(1, round(masking_rate * n))) of its c
candidate tokens (real tokens that are not special), where n counts all its
real tokens, [CLS] and [SEP] included (as BERT's `create_pretraining_data`
does), and P is `max_predictions_per_seq`: a full 256-token s2 at 80/256
masks exactly the paper's 80, a shorter s2 proportionally fewer. Every chosen token becomes [MASK] with probability
0.8, a random non-special token with probability 0.1, and stays unchanged
with probability 0.1. All shapes are static, so the function runs inside
`tf.data`, `tf.function` and XLA.
"""
from typing import Optional, Sequence, Tuple, Union

import tensorflow as tf

MASK_TOKEN_PROBABILITY = 0.8
RANDOM_TOKEN_PROBABILITY = 0.1


def _uniform(shape, seed, dtype=tf.float32, maxval=None):
  """Stateful uniform numbers, or stateless ones when `seed` is a [2] tensor."""
  if seed is None:
    return tf.random.uniform(shape, maxval=maxval, dtype=dtype)
  return tf.random.stateless_uniform(shape, seed, maxval=maxval, dtype=dtype)


def _random_non_special_ids(shape, vocab_size, special_ids, seed):
  """Draws token ids uniformly from the vocabulary minus `special_ids`."""
  # Draw from [0, vocab_size - #special) and step over each special id in
  # ascending order; this maps the draw onto the non-special ids one to one.
  ids = _uniform(shape, seed, tf.int32, maxval=vocab_size - len(special_ids))
  for special_id in special_ids:
    ids += tf.cast(ids >= special_id, tf.int32)
  return ids


def mask_tokens(
    input_word_ids: tf.Tensor,
    input_mask: tf.Tensor,
    *,
    max_predictions_per_seq: int,
    masking_rate: float,
    mask_token_id: int,
    vocab_size: int,
    special_token_ids: Union[Sequence[int], tf.Tensor],
    seed: Optional[tf.Tensor] = None,
) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
  """Masks tokens of packed sequences for masked language modeling.

  Args:
    input_word_ids: int32 [batch, seq_length] token ids.
    input_mask: [batch, seq_length], 1 on real tokens and 0 on padding.
    max_predictions_per_seq: P, the most tokens masked per sequence.
    masking_rate: share of the candidate tokens to mask.
    mask_token_id: id of [MASK].
    vocab_size: random replacements are drawn from [0, vocab_size).
    special_token_ids: ids never masked and never drawn as replacements
      (at least [PAD], [CLS] and [SEP]; [MASK] is always added); known when
      the graph is built.
    seed: None for stateful random numbers, or an int [2] tensor for
      reproducible stateless ones.

  Returns:
    masked_word_ids: int32 [batch, seq_length], `input_word_ids` with the
      chosen tokens replaced.
    masked_lm_positions: int32 [batch, P], positions of the chosen tokens in
      increasing order; unused slots hold 0.
    masked_lm_ids: int32 [batch, P], the original ids there; unused slots 0.
    masked_lm_weights: float32 [batch, P], 1.0 for used slots, else 0.0.
  """
  special_ids = tf.get_static_value(tf.convert_to_tensor(special_token_ids))
  if special_ids is None:
    raise ValueError('special_token_ids must be known when the graph is '
                     'built (a list of ints or a constant tensor).')
  special_ids = sorted(set(int(i) for i in special_ids.reshape([-1])) |
                       {mask_token_id})
  if special_ids[0] < 0 or special_ids[-1] >= vocab_size:
    raise ValueError(f'special_token_ids {special_ids} are not all ids of a '
                     f'vocabulary of size {vocab_size}.')
  input_word_ids = tf.cast(input_word_ids, tf.int32)
  seq_length = input_word_ids.shape[-1]
  if seq_length is not None and max_predictions_per_seq > seq_length:
    raise ValueError(f'max_predictions_per_seq={max_predictions_per_seq} '
                     f'exceeds the sequence length {seq_length}.')
  if seed is not None:
    seed = tf.random.experimental.stateless_split(
        tf.cast(seed, tf.int64), num=3)
  seeds = [None] * 3 if seed is None else tf.unstack(seed)

  # Candidates: real tokens that are not special.  [batch, seq_length]
  is_special = tf.reduce_any(
      input_word_ids[:, :, tf.newaxis] == tf.constant(special_ids, tf.int32),
      axis=-1)
  is_candidate = tf.logical_and(tf.cast(input_mask, tf.bool),
                                tf.logical_not(is_special))
  num_candidates = tf.reduce_sum(tf.cast(is_candidate, tf.int32), axis=1)
  num_tokens = tf.reduce_sum(tf.cast(input_mask, tf.float32), axis=1)
  num_to_mask = tf.cast(tf.round(masking_rate * num_tokens), tf.int32)
  num_to_mask = tf.minimum(max_predictions_per_seq, tf.maximum(1, num_to_mask))
  num_to_mask = tf.minimum(num_to_mask, num_candidates)  # [batch]

  # Random scores in [0, 1) on candidates, -1 elsewhere: the top P are the
  # candidates in random order, and the first `num_to_mask` of them are used.
  scores = tf.where(is_candidate,
                    _uniform(tf.shape(input_word_ids), seeds[0]), -1.0)
  _, positions = tf.math.top_k(scores, k=max_predictions_per_seq)  # [batch, P]
  is_used = (tf.range(max_predictions_per_seq)[tf.newaxis, :] <
             num_to_mask[:, tf.newaxis])
  # Used positions in increasing order, then unused slots (sorted to the end
  # by a key past any position), which become 0.
  sort_key = tf.where(is_used, positions, tf.shape(input_word_ids)[1])
  positions = tf.where(is_used, tf.sort(sort_key, axis=1), 0)
  masked_lm_ids = tf.where(
      is_used, tf.gather(input_word_ids, positions, batch_dims=1), 0)
  masked_lm_weights = tf.cast(is_used, tf.float32)

  # 80% [MASK], 10% a random token, 10% unchanged, per chosen token.
  draw = _uniform(tf.shape(positions), seeds[1])
  random_ids = _random_non_special_ids(
      tf.shape(positions), vocab_size, special_ids, seeds[2])
  replacements = tf.where(
      draw < MASK_TOKEN_PROBABILITY, mask_token_id,
      tf.where(draw < MASK_TOKEN_PROBABILITY + RANDOM_TOKEN_PROBABILITY,
               random_ids, masked_lm_ids))
  # Scatter by one-hot sums (used positions are distinct).
  one_hot = tf.one_hot(positions, tf.shape(input_word_ids)[1],
                       dtype=tf.int32) * tf.cast(is_used, tf.int32)[..., None]
  is_replaced = tf.reduce_max(one_hot, axis=1) > 0  # [batch, seq_length]
  replaced_ids = tf.reduce_sum(one_hot * replacements[..., None], axis=1)
  masked_word_ids = tf.where(is_replaced, replaced_ids, input_word_ids)
  return (masked_word_ids, tf.cast(positions, tf.int32), masked_lm_ids,
          masked_lm_weights)
