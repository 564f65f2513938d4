"""SimCSE's contrastive loss (cmlm_cse_2023.txt eq. 4) on hand-made vectors:
its closed forms, the duplicate mask, and the global batch across replicas."""
import math

import numpy as np
import pytest
import tensorflow as tf

from cmlm.projects.simcse_cse import contrastive_loss
from tests import helpers


@pytest.mark.parametrize("temperature", [0.05, 0.5, 2.0])
@pytest.mark.parametrize("batch", [2, 7])
def test_identical_embeddings_give_ln_n_at_any_temperature(temperature,
                                                           batch):
  views = tf.ones([batch, 6]) * 0.3
  loss = contrastive_loss.simcse_loss(views, views, temperature)
  assert float(loss) == pytest.approx(math.log(batch), rel=1e-6)


@pytest.mark.parametrize("temperature", [0.2, 0.5, 1.0])
def test_orthonormal_identical_views_give_the_closed_form(temperature):
  batch = 5
  # Rotated and scaled orthonormal rows: the cosine ignores the norm.
  q, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(8, 8)))
  views = tf.constant(q[:batch] * np.arange(1, batch + 1)[:, None],
                      tf.float32)
  expected = math.log(1 + (batch - 1) * math.exp(-1 / temperature))
  loss = contrastive_loss.simcse_loss(views, views, temperature)
  # float32: ln(1 + x) with x down to 4 e^-5 keeps ~3 digits.
  assert float(loss) == pytest.approx(expected, rel=1e-3)


def test_loss_is_cross_entropy_over_the_cosine_matrix_in_float32():
  rng = np.random.default_rng(1)
  a, b = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
  cosine = (a / np.linalg.norm(a, axis=1, keepdims=True)) @ (
      b / np.linalg.norm(b, axis=1, keepdims=True)).T / 0.05
  expected = np.mean(np.log(np.exp(cosine).sum(1)) - np.diag(cosine))
  loss = contrastive_loss.simcse_loss(tf.constant(a, tf.bfloat16),
                                      tf.constant(b, tf.bfloat16), 0.05)
  assert loss.dtype == tf.float32
  loss32 = contrastive_loss.simcse_loss(a.astype(np.float32),
                                        b.astype(np.float32), 0.05)
  assert float(loss32) == pytest.approx(expected, rel=1e-5)


def test_duplicate_sentences_are_not_negatives():
  rng = np.random.default_rng(2)
  views = rng.normal(size=(4, 5)).astype(np.float32)
  views[2] = views[0]  # row 2 is the same sentence as row 0
  ids = tf.constant([[2, 7, 3], [2, 8, 3], [2, 7, 3], [2, 9, 3]])
  same = contrastive_loss.same_sentence_mask(ids, ids)
  assert same.numpy().sum() == 6  # the diagonal and (0, 2), (2, 0)
  masked = float(contrastive_loss.simcse_loss(views, views, 1.0,
                                              same_sentence=same))
  unmasked = float(contrastive_loss.simcse_loss(views, views, 1.0))
  # By hand: rows 0 and 2 leave each other out of the softmax.
  logits = contrastive_loss.cosine_logits(views, views, 1.0).numpy()
  logits[0, 2] = logits[2, 0] = -np.inf
  expected = np.mean([np.log(np.exp(row).sum()) - row[i]
                      for i, row in enumerate(logits)])
  assert masked == pytest.approx(expected, rel=1e-5)
  # Unmasked, the duplicate is a negative as close as the positive.
  assert unmasked - masked > 0.1


def _loss_and_gradient(strategy, view_a, view_b, ids):
  loss = lambda a, b, sentence_ids: (
      contrastive_loss.cross_replica_simcse_loss(a, b, 0.05,
                                                 sentence_ids=sentence_ids))
  return helpers.replicated_loss_and_gradient(strategy, lambda: loss,
                                              (view_a, view_b, ids))


def test_two_replicas_with_half_batches_equal_one_replica_with_the_batch(
    two_cpu_strategies):
  """Negatives and duplicates come from the global batch (all_gather),
  labels offset by the replica's position."""
  one_device, mirrored = two_cpu_strategies
  rng = np.random.default_rng(3)
  view_a = rng.normal(size=(8, 5)).astype(np.float32)
  view_b = (view_a + 0.3 * rng.normal(size=(8, 5))).astype(np.float32)
  ids = np.arange(8 * 3, dtype=np.int32).reshape(8, 3)
  ids[6] = ids[1]  # a duplicate across the two replicas' halves
  one_loss, one_gradient = _loss_and_gradient(one_device, view_a, view_b, ids)
  two_loss, two_gradient = _loss_and_gradient(mirrored, view_a, view_b, ids)
  assert two_loss == pytest.approx(one_loss, rel=1e-5)
  np.testing.assert_allclose(two_gradient, one_gradient, rtol=1e-4, atol=1e-6)
  local_only = np.mean([float(contrastive_loss.simcse_loss(
      view_a[s], view_b[s], 0.05)) for s in (slice(0, 4), slice(4, 8))])
  assert abs(local_only - one_loss) > 1e-2  # local negatives would differ
