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
