"""The additive margin softmax bitext retrieval loss (paper section 4.2)."""
import numpy as np
import pytest
import tensorflow as tf

from cmlm.modeling import bitext_loss
from tests import helpers


def _vectors(batch=6, dim=5, seed=0):
  rng = np.random.default_rng(seed)
  return (tf.constant(rng.normal(size=[batch, dim]), tf.float32),
          tf.constant(rng.normal(size=[batch, dim]), tf.float32))


def _paper_formula(source, target, margin, scale):
  """L_s + L_t written as in section 4.2, with numpy, on cosine phi."""
  s = source / np.linalg.norm(source, axis=1, keepdims=True)
  t = target / np.linalg.norm(target, axis=1, keepdims=True)
  phi = s @ t.T
  def one_side(phi):
    positive = np.exp(scale * (np.diag(phi) - margin))
    negatives = np.exp(scale * phi).sum(axis=1) - np.exp(scale * np.diag(phi))
    return -np.mean(np.log(positive / (positive + negatives)))
  return one_side(phi) + one_side(phi.T)


def test_loss_is_the_papers_bidirectional_formula():
  source, target = _vectors()
  loss = bitext_loss.additive_margin_loss(source, target, margin=0.3,
                                          scale=10.0)
  assert float(loss) == pytest.approx(
      _paper_formula(source.numpy(), target.numpy(), 0.3, 10.0), rel=1e-5)


def test_margin_lowers_only_the_positive_logits():
  source, target = _vectors()
  positives = tf.range(6)
  with_margin = bitext_loss.additive_margin_logits(source, target, positives,
                                                   margin=0.3, scale=10.0)
  without = bitext_loss.additive_margin_logits(source, target, positives,
                                               margin=0.0, scale=10.0)
  np.testing.assert_allclose(with_margin - without, -3.0 * np.eye(6),
                             atol=1e-5)


def test_both_directions_are_present():
  source, target = _vectors()
  loss = bitext_loss.additive_margin_loss(source, target)
  swapped = bitext_loss.additive_margin_loss(target, source)
  assert float(loss) == pytest.approx(float(swapped), rel=1e-6)
  positives = tf.range(6)
  one_direction = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
      positives, bitext_loss.additive_margin_logits(
          tf.math.l2_normalize(source, -1), tf.math.l2_normalize(target, -1),
          positives, 0.3, 10.0)))
  assert float(loss) > float(one_direction) + 0.1


def test_margin_raises_the_loss_and_aligned_pairs_lower_it():
  source, target = _vectors()
  assert float(bitext_loss.additive_margin_loss(source, target, margin=0.3)) > (
      float(bitext_loss.additive_margin_loss(source, target, margin=0.0)))
  aligned = bitext_loss.additive_margin_loss(source, source + 0.01)
  assert float(aligned) < float(bitext_loss.additive_margin_loss(source, target))


def _loss_and_gradient(strategy, source, target):
  return helpers.replicated_loss_and_gradient(
      strategy, lambda: bitext_loss.AdditiveMarginBitextLoss(margin=0.3,
                                                             scale=10.0),
      (source, target))


def test_two_replicas_with_half_batches_equal_one_replica_with_the_batch(
    two_cpu_strategies):
  """Negatives come from the global batch, gathered across replicas."""
  one_device, mirrored = two_cpu_strategies
  source, target = _vectors(batch=8)
  one_loss, one_gradient = _loss_and_gradient(one_device, source, target)
  two_loss, two_gradient = _loss_and_gradient(mirrored, source, target)
  assert two_loss == pytest.approx(one_loss, rel=1e-5)
  np.testing.assert_allclose(two_gradient, one_gradient, rtol=1e-4, atol=1e-6)
  per_replica_only = (
      float(bitext_loss.additive_margin_loss(source[:4], target[:4])) +
      float(bitext_loss.additive_margin_loss(source[4:], target[4:]))) / 2
  assert abs(per_replica_only - one_loss) > 1e-2  # local negatives differ


def test_layer_config_round_trip():
  layer = bitext_loss.AdditiveMarginBitextLoss(margin=0.2, scale=5.0)
  clone = bitext_loss.AdditiveMarginBitextLoss.from_config(layer.get_config())
  assert (clone.margin, clone.scale, clone.normalize) == (0.2, 5.0, True)
