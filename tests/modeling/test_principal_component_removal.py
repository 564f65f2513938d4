"""Principal component removal (paper section 5.2)."""
import numpy as np
import pytest
import tensorflow as tf

from cmlm.modeling import principal_component_removal as pcr


def _biased_embeddings(seed, bias_direction, n=200, dim=8):
  rng = np.random.default_rng(seed)
  return (rng.normal(size=[n, dim]) +
          rng.normal(size=[n, 1]) * 5.0 * bias_direction)


def test_first_component_is_the_direction_of_largest_variance():
  direction = np.eye(8)[3]
  component = pcr.first_principal_component(_biased_embeddings(0, direction))
  assert abs(component @ direction) > 0.98
  assert np.linalg.norm(component) == pytest.approx(1.0)


def test_the_component_is_the_shared_language_direction_not_centred():
  # Each sentence = noise + a large offset every sentence of the language
  # shares (along e0) + its own spread along e1 (variance 9 > offset's 0).
  rng = np.random.default_rng(8)
  embeddings = rng.normal(size=[300, 8]) * 0.1
  embeddings[:, 0] += 10.0
  embeddings[:, 1] += rng.normal(size=300) * 3.0
  component = pcr.first_principal_component(embeddings)
  assert abs(component[0]) > 0.99  # the paper's uncentred singular vector
  removed = pcr.remove_component(embeddings, component)
  assert np.abs(removed.mean(axis=0)[0]) < 0.5  # the language offset went
  assert np.std(removed[:, 1]) > 2.5  # the per-sentence spread stays


def test_removal_makes_embeddings_orthogonal_to_the_component():
  embeddings = _biased_embeddings(1, np.eye(8)[0])
  component = pcr.first_principal_component(embeddings)
  removed = pcr.remove_component(embeddings, component)
  np.testing.assert_allclose(removed @ component, 0.0, atol=1e-9)
  # Only that direction changes: the rest of each vector is kept.
  np.testing.assert_allclose(removed - embeddings,
                             -np.outer(embeddings @ component, component))


def test_each_language_loses_its_own_component_and_round_trips(tmp_path):
  components = pcr.LanguageComponents.fit({
      "de": _biased_embeddings(2, np.eye(8)[1]),
      "en": _biased_embeddings(3, np.eye(8)[5])})
  components.save(str(tmp_path))
  loaded = pcr.LanguageComponents.load(str(tmp_path))
  assert loaded.languages == ["de", "en"]
  np.testing.assert_allclose(loaded.components, components.components)
  sample = np.random.default_rng(4).normal(size=[3, 8]).astype(np.float32)
  german = loaded.remove(sample, "de")
  np.testing.assert_allclose(german @ loaded.components[0], 0, atol=1e-6)
  with pytest.raises(ValueError, match="No principal component .* 'fr'"):
    loaded.remove(sample, "fr")


def test_in_graph_removal_matches_numpy_and_skips_unknown_codes():
  components = pcr.LanguageComponents.fit({
      "de": _biased_embeddings(5, np.eye(8)[1]),
      "en": _biased_embeddings(6, np.eye(8)[2])})
  module = pcr.PrincipalComponentRemoval(components)
  sample = np.random.default_rng(7).normal(size=[3, 8]).astype(np.float32)
  out = module(tf.constant(sample), tf.constant(["en", "de", "xx"])).numpy()
  np.testing.assert_allclose(out[0], components.remove(sample[:1], "en")[0],
                             atol=1e-6)
  np.testing.assert_allclose(out[1], components.remove(sample[1:2], "de")[0],
                             atol=1e-6)
  np.testing.assert_allclose(out[2], sample[2])


def test_missing_components_file_is_a_clear_error(tmp_path):
  with pytest.raises(FileNotFoundError, match="python -m cmlm pcr"):
    pcr.LanguageComponents.load(str(tmp_path))
