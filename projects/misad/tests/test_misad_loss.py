"""MiSAD's loss MSE(E^w + E^R, E^S) (Li et al. 2020, section 3.2)."""
import numpy as np
import pytest
import tensorflow as tf

from cmlm.projects.misad import misad_loss


def _vectors(seed=0, batch=4, dim=8):
  rng = np.random.default_rng(seed)
  return [tf.constant(rng.normal(size=[batch, dim]), tf.float32)
          for _ in range(2)]


def test_zero_when_the_sum_equals_the_sentence_without_normalization():
  ngram, rest = _vectors()
  loss = misad_loss.misad_loss(ngram, rest, ngram + rest, "none")
  assert float(loss) == pytest.approx(0.0, abs=1e-12)
  assert float(misad_loss.misad_loss(ngram, rest, ngram - rest, "none")) > 0.1


def test_reference_code_form_is_zero_when_the_unit_sum_points_along_s():
  ngram, rest = _vectors(1)
  unit_sum = (tf.math.l2_normalize(ngram, -1) +
              tf.math.l2_normalize(rest, -1))
  sentence = 3.0 * unit_sum  # any length: only the direction counts
  loss = misad_loss.misad_loss(ngram, rest, sentence, "unit_renormalized_sum")
  assert float(loss) == pytest.approx(0.0, abs=1e-10)
  # The paper's literal form is not 0 for the same vectors.
  assert float(misad_loss.misad_loss(ngram, rest, sentence, "unit")) > 1e-3


def test_paper_form_cannot_reach_zero_when_all_three_are_equal():
  vector, _ = _vectors(2, dim=16)
  loss = misad_loss.misad_loss(vector, vector, vector, "unit")
  # |2u - u|^2 / dim with |u| = 1.
  assert float(loss) == pytest.approx(1.0 / 16, rel=1e-5)


def test_is_the_mean_over_batch_and_dimensions_and_honours_weights():
  ngram, rest = _vectors(3, batch=3, dim=5)
  sentence = tf.zeros_like(ngram)
  per_example = np.mean((ngram + rest).numpy() ** 2, axis=-1)
  loss = misad_loss.misad_loss(ngram, rest, sentence, "none")
  assert float(loss) == pytest.approx(per_example.mean(), rel=1e-5)
  weighted = misad_loss.misad_loss(ngram, rest, sentence, "none",
                                   weights=tf.constant([1.0, 0.0, 1.0]))
  assert float(weighted) == pytest.approx(per_example[[0, 2]].mean(),
                                          rel=1e-5)


def test_gradient_reaches_all_three_vectors():
  ngram, rest = _vectors(4)
  sentence = tf.Variable(tf.ones_like(ngram))
  ngram, rest = tf.Variable(ngram), tf.Variable(rest)
  with tf.GradientTape() as tape:
    loss = misad_loss.misad_loss(ngram, rest, sentence)
  for gradient in tape.gradient(loss, [ngram, rest, sentence]):
    assert float(tf.reduce_max(tf.abs(gradient))) > 0


def test_unknown_normalization_is_an_error():
  ngram, rest = _vectors()
  with pytest.raises(ValueError, match="normalization must be one of"):
    misad_loss.misad_loss(ngram, rest, rest, "l2")


@pytest.mark.parametrize("degrees", [0, 30, 60, 90, 120, 150])
def test_default_is_zero_wherever_the_vector_equation_holds(degrees):
  # E^w and E^R at any angle, E^S = E^w + E^R (eq. 2): the loss the paper
  # intends is 0 there. The literal unit form is 0 only at 120 degrees.
  angle = np.radians(degrees)
  ngram = tf.constant([[1.0, 0.0, 0.0]])
  rest = tf.constant([[np.cos(angle), np.sin(angle), 0.0]], tf.float32)
  sentence = ngram + rest
  assert float(misad_loss.misad_loss(ngram, rest, sentence)) == pytest.approx(
      0.0, abs=1e-7)
  literal = float(misad_loss.misad_loss(ngram, rest, sentence, "unit"))
  if degrees == 120:
    assert literal == pytest.approx(0.0, abs=1e-7)
  else:
    assert literal > 1e-3


def test_default_does_not_pull_the_ngram_and_its_rest_apart():
  # With E^S along E^w + E^R the default has no gradient on the angle
  # between E^w and E^R; the literal form pushes them towards 120 degrees.
  ngram = tf.Variable([[1.0, 0.0]])
  rest = tf.Variable([[0.0, 1.0]])  # 90 degrees apart
  for normalization, moves in (("unit_renormalized_sum", False),
                               ("unit", True)):
    with tf.GradientTape() as tape:
      loss = misad_loss.misad_loss(ngram, rest, tf.stop_gradient(
          ngram + rest), normalization)
    gradient = tape.gradient(loss, rest).numpy()
    assert (np.abs(gradient).max() > 1e-4) == moves, normalization


def test_collapse_cosines_are_one_at_the_collapsed_point_and_lower_off_it():
  rng = np.random.default_rng(0)
  one = np.tile(rng.normal(size=(1, 16)), (6, 1))  # every vector the same
  # The collapsed point: E^w = E^R = E^S, one vector for all sentences.
  collapsed = misad_loss.collapse_cosines(one, 2 * one, one)
  assert collapsed["within"] == pytest.approx(1.0)
  assert collapsed["across"] == pytest.approx(1.0)
  # Distinct random vectors: both near 0, far below 1.
  ngram, rest, sentence = rng.normal(size=(3, 6, 16))
  apart = misad_loss.collapse_cosines(ngram, rest, sentence)
  assert abs(apart["within"]) < 0.3 and abs(apart["across"]) < 0.3
  # The loss's useful minimum: E^S along E^w + E^R, sentences distinct:
  # "within" is high but below 1, "across" stays low.
  unit = lambda v: v / np.linalg.norm(v, axis=-1, keepdims=True)
  sentence = unit(ngram) + unit(rest)
  assert misad_loss.misad_loss(ngram, rest, sentence).numpy() < 1e-6
  useful = misad_loss.collapse_cosines(ngram, rest, sentence)
  assert 0.3 < useful["within"] < 0.9
  assert abs(useful["across"]) < 0.3


def test_collapse_cosines_refuses_mismatched_shapes():
  with pytest.raises(ValueError, match="same shape"):
    misad_loss.collapse_cosines(np.ones((3, 4)), np.ones((3, 4)),
                                np.ones((2, 4)))
