"""`python -m cmlm pcr`: components fitted from a trained model, saved beside it."""
import os
import shutil

import numpy as np
import pytest

from cmlm import pcr
from cmlm.modeling import embedder
from cmlm.data_pipelines import tokenization
from cmlm.modeling import principal_component_removal
from tests import helpers
from tests.training import import_helpers as tiny_bert


@pytest.fixture(scope="module")
def trained_dir(tiny_run, tmp_path_factory):
  """A copy of the session's tiny trained run (conftest's `tiny_run`): pcr
  writes pcr_components.json into the run, and `tiny_run` is read-only."""
  model_dir = str(tmp_path_factory.mktemp("pcr_run") / "run")
  shutil.copytree(tiny_run[0], model_dir)
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
  two = _lines(tmp_path / "two.txt", ["one", "two"])
  with pytest.raises(ValueError, match=r"^--sample_size must be 2 or more \("
                     r"a principal component is fitted on them\), got 1\.$"):
    pcr.fit_for_model(str(tmp_path / "no_run"), f"xx={two}", sample_size=1)


def test_an_input_not_of_one_file_a_language_is_one_line(tmp_path, capsys):
  text = _lines(tmp_path / "s.txt", ["one", "two"])
  form = ("--input takes one file a language, e.g. "
          "--input=en=sample_en.txt,de=sample_de.txt.")
  for given, fault in ((f"en={text},en={text}",
                        f"--input names the language en twice ({text}, "
                        f"{text}); {form}"),
                       (text, f"{text!r} is not LANGUAGE=FILE; {form}")):
    status, stderr = helpers.run_command(
        ["pcr", f"--model_dir={tmp_path}", f"--input={given}"], capsys)
    assert (status, stderr) == (2, [f"cmlm pcr: error: {fault}"])


@pytest.mark.slow
def test_components_round_trip_through_the_serving_export(trained_dir,
                                                          tmp_path):
  """`serving_pcr` removes the fitted component of each sentence's language."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from cmlm.export import exporter  # pylint: disable=g-import-not-at-top
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
  # TF Serving's warm-up covers serving_pcr too, with the fitted codes.
  from cmlm.export import warmup  # pylint: disable=g-import-not-at-top
  requests = warmup.read_warmup_requests(result.serving_dir)
  assert {r.model_spec.signature_name for r in requests} == {
      "serving_default", "serving_pcr"}
  for request in requests:
    inputs = {k: tf.constant(tf.make_ndarray(v))
              for k, v in request.inputs.items()}
    if "languages" in inputs:
      assert set(inputs["languages"].numpy()) <= {b"en", b"up"}
    outputs = serving.signatures[request.model_spec.signature_name](**inputs)
    assert outputs["embedding"].shape[0] == inputs["sentences"].shape[0]


# Words of the tiny BERT's vocabulary broken by control characters (NUL,
# BEL): Hugging Face's BERT normalizer deletes them, TF Text splits the word
# there, so the two normalizations give different ids.
HF_SAMPLES = {
    "aa": ["the ca\x00t sat on the m\x00at", "a d\x00og ran fa\x07st",
           "the big red ca\x00t", "a sma\x07ll blue d\x00og sat",
           "the c\x07at and the do\x00g ran"],
    "bb": ["a re\x07d mat and a bl\x00ue cat", "the do\x00g sat sl\x00ow",
           "big ca\x07ts ran", "the m\x07at on the d\x00og",
           "a fa\x00st red do\x07g"],
}


@pytest.fixture(scope="module")
def huggingface_run(tmp_path_factory):
  """A tiny Hugging Face BERT imported as a run (text_normalization
  "huggingface", as the exported preprocessor then serves it)."""
  from cmlm.experiments import registry_imports  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  from cmlm.training import import_run  # pylint: disable=g-import-not-at-top
  root = tmp_path_factory.mktemp("pcr_hf")
  tiny_bert.write_tiny_bert(str(root / "hf"))
  result = import_run.import_model(str(root / "hf"), str(root / "model"))
  assert result.params.task.tokenization.text_normalization == "huggingface"
  return result.model_dir


def _aligned(components, reference):
  """`components` with each row's sign turned towards `reference`'s (a
  principal component is defined up to its sign)."""
  signs = np.sign(np.sum(components * reference, axis=1, keepdims=True))
  return components * np.where(signs == 0, 1, signs)


@pytest.mark.slow
def test_components_are_fitted_under_the_runs_text_normalization(
    huggingface_run, tmp_path):
  """pcr embeds with the run's tokenization (task.tokenization), text
  normalization included: the components the exported model serves."""
  from cmlm.training import run_dir  # pylint: disable=g-import-not-at-top
  params = run_dir.load_params(huggingface_run)
  encoder = run_dir.restore_encoder(
      params, run_dir.find_checkpoint(huggingface_run))
  config = params.task.tokenization

  def fitted_under(text_normalization):
    tokenizer = tokenization.WordPieceTokenizer(
        config.vocab_file, config.seq_length, lower_case=config.lower_case,
        text_normalization=text_normalization)
    return tokenizer, principal_component_removal.LanguageComponents.fit({
        lang: embedder.encoder_embedder(encoder, tokenizer).embed(
            sentences, batch_size=256)
        for lang, sentences in HF_SAMPLES.items()})

  hf_tokenizer, expected = fitted_under("huggingface")
  tf_text_tokenizer, tf_text = fitted_under("tf_text")
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  for sentences in HF_SAMPLES.values():  # every sentence tokenizes otherwise
    ids = [tokenizer.tokenize(tf.constant(sentences)).to_list()
           for tokenizer in (hf_tokenizer, tf_text_tokenizer)]
    assert all(a != b for a, b in zip(*ids)), ids

  spec = ",".join(f"{lang}={_lines(tmp_path / f'{lang}.txt', sentences)}"
                  for lang, sentences in HF_SAMPLES.items())
  fitted = pcr.fit_for_model(huggingface_run, spec)
  assert fitted.languages == expected.languages == sorted(HF_SAMPLES)
  np.testing.assert_allclose(_aligned(fitted.components, expected.components),
                             expected.components, atol=1e-5)
  # ... and not the components of TF Text's normalization.
  cosines = np.abs(np.sum(fitted.components * tf_text.components, axis=1))
  assert np.all(cosines < 1 - 1e-3), cosines
