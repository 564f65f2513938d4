"""`python -m cmlm pcr`: components fitted from a trained model, saved beside it."""
import os

import numpy as np
import pytest

from cmlm import pcr
from cmlm import train
from modeling import principal_component_removal
from tests import test_cmlm_task


@pytest.fixture(scope="module")
def trained_dir(tmp_path_factory):
  model_dir = str(tmp_path_factory.mktemp("pcr_run"))
  train.run(test_cmlm_task._tiny_experiment(2), model_dir)
  return model_dir


def _lines(path, lines):
  path.write_text("\n".join(lines) + "\n", encoding="utf-8")
  return str(path)


@pytest.mark.slow
def test_fit_writes_one_unit_component_per_language(trained_dir, tmp_path):
  en = _lines(tmp_path / "en.txt", [f"the house number {i} ." for i in
                                    range(20)])
  shout = _lines(tmp_path / "up.txt", [f"THE LETTER {i} !" for i in range(20)])
  components = pcr.fit_for_model(trained_dir, f"en={en},up={shout}",
                                 sample_size=10)
  assert components.languages == ["en", "up"]
  np.testing.assert_allclose(np.linalg.norm(components.components, axis=1), 1,
                             rtol=1e-5)
  saved = principal_component_removal.LanguageComponents.load(trained_dir)
  np.testing.assert_allclose(saved.components, components.components)
  assert os.path.exists(os.path.join(trained_dir, "pcr_components.json"))


def test_too_few_sentences_is_a_clear_error(tmp_path):
  one = _lines(tmp_path / "one.txt", ["just one"])
  with pytest.raises(ValueError, match="needs 2 or more"):
    pcr.read_samples(f"xx={one}", 10)


@pytest.mark.slow
def test_components_round_trip_through_the_serving_export(trained_dir,
                                                          tmp_path):
  """`serving_pcr` removes the fitted component of each sentence's language."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from export import exporter  # pylint: disable=g-import-not-at-top
  en = _lines(tmp_path / "en.txt", [f"the house number {i} ." for i in
                                    range(20)])
  up = _lines(tmp_path / "up.txt", [f"THE LETTER {i} !" for i in range(20)])
  components = pcr.fit_for_model(trained_dir, f"en={en},up={up}")
  result = exporter.export_run(trained_dir, str(tmp_path / "export"))
  serving = tf.saved_model.load(result.serving_dir)
  sentences = tf.constant(["the house .", "THE LETTER !", "a garden ."])
  plain = serving.signatures["serving_default"](sentences=sentences)
  removed = serving.signatures["serving_pcr"](
      sentences=sentences, languages=tf.constant(["en", "up", "xx"]))
  plain, removed = plain["embedding"].numpy(), removed["embedding"].numpy()
  assert abs(removed[0] @ components.components[0]) < 1e-5
  assert abs(removed[1] @ components.components[1]) < 1e-5
  np.testing.assert_allclose(removed[2], plain[2], atol=1e-6)  # unknown code
  expected = components.remove(plain[:1], "en")
  expected /= np.linalg.norm(expected)
  np.testing.assert_allclose(removed[:1], expected, atol=1e-5)
