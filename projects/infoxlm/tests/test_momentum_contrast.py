"""XLCo's plain functions (momentum_contrast.py, InfoXLM eq. 6)."""
import numpy as np
import pytest
import tensorflow as tf

from cmlm.projects.infoxlm import momentum_contrast


def _random(shape, seed):
  return tf.constant(np.random.default_rng(seed).normal(size=shape),
                     tf.float32)


def test_infonce_is_cross_entropy_of_the_positive_against_the_queue():
  queries, keys, queue = _random([3, 4], 0), _random([3, 4], 1), _random(
      [5, 4], 2)
  losses, hits = momentum_contrast.infonce_with_queue_loss(
      queries, keys, queue, temperature=0.5)
  q, k, n = queries.numpy(), keys.numpy(), queue.numpy()
  for i in range(3):
    logits = np.concatenate([[q[i] @ k[i]], n @ q[i]]) / 0.5
    expected = -logits[0] + np.log(np.sum(np.exp(logits)))
    assert losses[i].numpy() == pytest.approx(expected, rel=1e-5)
    assert hits[i].numpy() == float(np.argmax(logits) == 0)


def test_temperature_one_is_the_papers_exp_of_dot_products():
  queries, keys, queue = _random([2, 3], 3), _random([2, 3], 4), _random(
      [4, 3], 5)
  losses, _ = momentum_contrast.infonce_with_queue_loss(
      queries, keys, queue, temperature=1.0)
  q, k, n = queries.numpy(), keys.numpy(), queue.numpy()
  expected = [-np.log(np.exp(q[i] @ k[i]) /
                      (np.exp(q[i] @ k[i]) + np.exp(n @ q[i]).sum()))
              for i in range(2)]
  np.testing.assert_allclose(losses.numpy(), expected, rtol=1e-5)


def test_only_the_queries_get_gradients_and_empty_slots_are_left_out():
  queries = tf.Variable(_random([2, 3], 6))
  keys, queue = tf.Variable(_random([2, 3], 7)), tf.Variable(_random([4, 3],
                                                                     8))
  valid = tf.constant([True, True, False, False])
  with tf.GradientTape() as tape:
    losses, _ = momentum_contrast.infonce_with_queue_loss(
        queries, keys, queue, queue_valid=valid)
    total = tf.reduce_sum(losses)
  grads = tape.gradient(total, [queries, keys, queue])
  assert grads[0] is not None and grads[1] is None and grads[2] is None
  # Slots marked empty change nothing: the same as a queue without them.
  half, _ = momentum_contrast.infonce_with_queue_loss(queries, keys,
                                                      queue[:2])
  np.testing.assert_allclose(losses.numpy(), half.numpy(), rtol=1e-6)


def test_enqueue_is_fifo_with_wrap_around():
  queue = tf.zeros([5, 2])
  pointer = tf.constant(0, tf.int64)
  # Key j of step s is 10 s + j.
  batches = [tf.constant([[10.0 * step, 0], [10.0 * step + 1, 0]])
             for step in range(1, 5)]
  for keys in batches:
    queue, pointer = momentum_contrast.enqueue(queue, pointer, keys)
  # 8 keys into 5 slots, in order: 10 11 | 20 21 | 30 (slot 4), 31 wraps to
  # slot 0 | 40 41 in slots 1-2; the oldest left are step 2's.
  np.testing.assert_array_equal(queue.numpy()[:, 0], [31, 40, 41, 21, 30])
  assert int(pointer) == 3


def test_momentum_update_moves_the_key_towards_the_query():
  key, query = tf.Variable([1.0, 2.0]), tf.Variable([3.0, -2.0])
  momentum_contrast.momentum_update([(key, query)], 0.75)
  np.testing.assert_allclose(key.numpy(), [1.5, 1.0])
  momentum_contrast.momentum_update([(key, query)], 0.0)
  np.testing.assert_allclose(key.numpy(), query.numpy())


def test_the_momentum_pairing_survives_a_shuffled_variable_order():
  # Two attention layers: query, key and value kernels all share one shape,
  # so a positional pairing of a reordered list would pass a shape check.
  from cmlm.modeling import model_builder  # pylint: disable=g-import-not-at-top
  from cmlm.modeling import siamese_encoder  # pylint: disable=g-import-not-at-top
  from tests import helpers  # pylint: disable=g-import-not-at-top
  query_side = model_builder.build_siamese_encoder(
      helpers.tiny_model_config()).transformer
  key_side = siamese_encoder.deserialize_transformer(
      siamese_encoder.serialize_transformer(query_side))
  for variable in key_side.weights:
    variable.assign(tf.zeros_like(variable))
  named_query = momentum_contrast.named_variables({"transformer": query_side})
  named_key = momentum_contrast.named_variables({"transformer": key_side})
  order = np.random.default_rng(0).permutation(len(named_query))
  shuffled = dict([list(named_query.items())[i] for i in order])
  assert list(shuffled) != list(named_query)
  pairs = momentum_contrast.pair_by_name(named_key, shuffled)
  momentum_contrast.momentum_update(pairs, 0.5)
  for name, key in named_key.items():
    np.testing.assert_allclose(key.numpy(), 0.5 * named_query[name].numpy(),
                               atol=1e-7)
  # By position, the shuffled list would pair some key variable with a
  # query variable of another name and the same shape, unnoticed.
  assert any(k != q and named_key[k].shape == shuffled[q].shape
             for k, q in zip(named_key, shuffled))
  with pytest.raises(ValueError, match="differ"):
    momentum_contrast.pair_by_name(
        {k: v for k, v in named_key.items() if "pooler" not in k},
        named_query)
