"""VSE++'s max-violation hinge, the Ranker of contextual lensing."""
import numpy as np
import pytest
import tensorflow as tf

from cmlm.projects.contextual_lensing import ranking_loss
from tests import helpers

# Unit vectors with easy cosines: S[i, j] = a_i . b_j =
#   [[0.8, 0.0, 1.0 ],
#    [0.6, 1.0, 0.0 ],
#    [0.96, 0.8, 0.6]]
SOURCE = [[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]]
TARGET = [[0.8, 0.6], [0.0, 1.0], [1.0, 0.0]]


def test_equals_the_hand_computed_3x3_example():
  # margin 0.2; hardest wrong target of each source (rows, j != i):
  #   1: max(0.2-0.8+0.0, 0.2-0.8+1.0) = 0.4   2: max(-0.2, -0.8)+ = 0
  #   3: max(0.2-0.6+0.96, 0.2-0.6+0.8) = 0.56
  # hardest wrong source of each target (columns):
  #   1: max(0.2-0.8+0.6, 0.2-0.8+0.96) = 0.36  2: max(-0.8, 0.0)+ = 0
  #   3: max(0.2-0.6+1.0, 0.2-0.6+0.0) = 0.6
  # (0.4 + 0 + 0.56 + 0.36 + 0 + 0.6) / 3 = 0.64
  loss = ranking_loss.max_violation_loss(tf.constant(SOURCE),
                                         tf.constant(TARGET), margin=0.2)
  assert float(loss) == pytest.approx(0.64, abs=1e-6)
  # Cosine: the vectors' lengths do not matter.
  scaled = ranking_loss.max_violation_loss(
      tf.constant(SOURCE) * [[3.0], [0.5], [2.0]], tf.constant(TARGET) * 7.0,
      margin=0.2)
  assert float(scaled) == pytest.approx(0.64, abs=1e-6)


def test_only_the_hardest_negative_counts():
  source, target = tf.constant(SOURCE), tf.constant(TARGET)
  with tf.GradientTape() as tape:
    tape.watch(target)
    loss = ranking_loss.max_violation_loss(source, target, margin=0.2)
  gradient = tape.gradient(loss, target).numpy()
  # Target 2 (row 1) is never a hardest violating negative nor violated.
  np.testing.assert_allclose(gradient[1], 0.0, atol=1e-7)
  # Orthogonal, matched pairs: no violation below a margin of 1 (the gap
  # between a positive's cosine 1 and a negative's 0), alpha - 1 above.
  eye = tf.eye(3)
  assert float(ranking_loss.max_violation_loss(eye, eye, 0.9)) == 0.0
  assert float(ranking_loss.max_violation_loss(eye, eye, 1.5)) == (
      pytest.approx(2 * 0.5))


def test_two_replicas_with_half_batches_equal_one_replica_with_the_batch(
    two_cpu_strategies):
  one_device, mirrored = two_cpu_strategies
  rng = np.random.default_rng(0)
  source, target = (tf.constant(rng.normal(size=[8, 5]), tf.float32)
                    for _ in range(2))
  build = lambda: (lambda a, b: ranking_loss.cross_replica_max_violation_loss(
      a, b, margin=0.3))
  one_loss, one_gradient = helpers.replicated_loss_and_gradient(
      one_device, build, (source, target))
  two_loss, two_gradient = helpers.replicated_loss_and_gradient(
      mirrored, build, (source, target))
  assert two_loss == pytest.approx(one_loss, rel=1e-5)
  np.testing.assert_allclose(two_gradient, one_gradient, rtol=1e-4, atol=1e-6)


def test_a_duplicated_pair_in_the_batch_is_not_a_negative(two_cpu_strategies):
  # Rows 0 and 2 share their English side (ids [7, 8]); row 2's target is
  # as near source 0 as its own target: without the mask it violates.
  source_ids = tf.constant([[7, 8], [5, 6], [7, 8], [9, 9]])
  target_ids = tf.constant([[1, 2], [3, 4], [1, 3], [2, 2]])
  duplicates = ranking_loss.duplicate_pairs(source_ids, target_ids)
  np.testing.assert_array_equal(duplicates.numpy(), [
      [1, 0, 1, 0], [0, 1, 0, 0], [1, 0, 1, 0], [0, 0, 0, 1]])
  source = tf.constant([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [-1.0, 0.0]])
  target = tf.constant([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [-1.0, 0.0]])
  masked = ranking_loss.max_violation_loss(source, target, 0.2,
                                           duplicates=duplicates)
  assert float(masked) == pytest.approx(0.0, abs=1e-6)
  unmasked = ranking_loss.max_violation_loss(source, target, 0.2)
  assert float(unmasked) == pytest.approx(4 * 0.2 / 4)  # rows 0 and 2, 2 ways
  # The same across two replicas, the duplicate in the other half.
  one_device, mirrored = two_cpu_strategies
  build = lambda: ranking_loss.cross_replica_max_violation_loss
  for strategy in (one_device, mirrored):
    loss, _ = helpers.replicated_loss_and_gradient(
        strategy, lambda: (lambda a, b, s, t: build()(a, b, 0.2, s, t)),
        (source, target, source_ids, target_ids), dim=2)
    assert loss == pytest.approx(0.0, abs=1e-6)
    unmasked, _ = helpers.replicated_loss_and_gradient(
        strategy, lambda: (lambda a, b: build()(a, b, 0.2)),
        (source, target), dim=2)
    assert unmasked > 0.1
