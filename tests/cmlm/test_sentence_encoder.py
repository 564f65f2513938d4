"""`from cmlm import SentenceEncoder`: every model kind, sentence-transformers'
`encode` arguments, MTEB's extras, and an installed copy outside the tree."""
import os
import subprocess
import sys

import numpy as np
import pytest

import cmlm
from cmlm.sentence_encoder import SentenceEncoder
from cmlm.inference import quantization
from tests import helpers
from tests.export import export_helpers

SENTENCES = export_helpers.SENTENCES


def test_cmlm_exposes_the_class_lazily():
  assert cmlm.SentenceEncoder is SentenceEncoder
  assert "SentenceEncoder" in dir(cmlm)
  with pytest.raises(AttributeError, match="no attribute 'Nope'"):
    cmlm.Nope  # pylint: disable=pointless-statement
  # The command line does not pay for it: `import cmlm` loads no TensorFlow.
  completed = subprocess.run(
      [sys.executable, "-c", "import sys, cmlm; "
       "print('tensorflow' in sys.modules)"],
      cwd=export_helpers.REPO_ROOT, capture_output=True, text=True,
      check=True)
  assert completed.stdout.strip() == "False"


@pytest.mark.slow
def test_every_model_kind_gives_the_trained_encoder_s_embeddings(tiny):
  expected = export_helpers.unit(tiny.in_memory_embeddings(SENTENCES))
  export_dir = tiny.result.export_dir
  kinds = [export_dir, os.path.dirname(tiny.result.serving_dir),
           tiny.model_dir,
           f"{export_dir}/encoder,{export_dir}/preprocessor"]
  for kind in kinds:
    model = SentenceEncoder(kind)
    embeddings = model.encode(SENTENCES, batch_size=2,
                              normalize_embeddings=True, precision="float32",
                              show_progress_bar=None)
    assert isinstance(embeddings, np.ndarray) and embeddings.dtype == np.float32
    np.testing.assert_allclose(embeddings, expected, atol=1e-5, rtol=0,
                               err_msg=kind)


def test_encode_follows_sentence_transformers_semantics(tiny):
  raw_model = SentenceEncoder(tiny.model_dir)  # a run: raw embeddings
  raw = tiny.in_memory_embeddings(SENTENCES)
  assert not raw_model.normalizes_in_graph
  np.testing.assert_allclose(raw_model.encode(SENTENCES, normalize_embeddings=
                                              False), raw, atol=1e-5)
  # One string in, one vector out; MTEB's keyword arguments are ignored.
  single = raw_model.encode(SENTENCES[1], task_name="STSBenchmark",
                            prompt_type="query", device="cpu")
  np.testing.assert_allclose(single, raw[1], atol=1e-5)
  # MTEB 2: a DataLoader of {"text": [...]} batches, with its keywords.
  batches = [{"text": SENTENCES[:2]}, {"text": SENTENCES[2:]}]
  np.testing.assert_allclose(
      raw_model.encode(batches, task_metadata=None, hf_split="test",
                       hf_subset="default", prompt_type=None), raw, atol=1e-5)
  assert raw_model.get_sentence_embedding_dimension() == raw.shape[1]
  # truncate, then normalise, then quantize.
  truncated = raw_model.encode(SENTENCES, truncate_dim=8,
                               normalize_embeddings=True)
  np.testing.assert_allclose(truncated, export_helpers.unit(raw[:, :8]), atol=1e-5)
  packed = raw_model.encode(SENTENCES, precision="ubinary")
  np.testing.assert_array_equal(packed, quantization.quantize(raw, "ubinary"))
  prompted = raw_model.encode(["x"], prompt="query: ")
  np.testing.assert_allclose(prompted, tiny.in_memory_embeddings(
      ["query: x"]), atol=1e-5)
  assert raw_model.encode([]).shape == (0, raw.shape[1])
  with pytest.raises(ValueError, match="defines no prompts"):
    raw_model.encode(SENTENCES, prompt_name="query")
  with pytest.raises(ValueError, match="precision must be one of"):
    raw_model.encode(SENTENCES, precision="int4")


def test_bad_sentences_name_the_argument_the_index_and_the_type(tiny,
                                                                tmp_path):
  """The API speaks of its own arguments (no `--flag` words) and says which
  sentence is wrong and what it takes."""
  model = SentenceEncoder(tiny.model_dir)
  for sentences, error, words in [
      (None, TypeError, "sentences must be a string or a sequence of "
                        "strings, got NoneType."),
      (123, TypeError, "sentences must be a string or a sequence of "
                       "strings, got int."),
      (b"x", TypeError, "sentences is bytes, not a string or a sequence of "
                        "strings; decode it first"),
      (["a", b"x"], TypeError, "sentences[1] is bytes; expected str (decode "
                               "bytes to str first)."),
      (["a", "b", 7], TypeError, "sentences[2] is int; expected str."),
      (["a", "b\ud800c"], ValueError, "sentences[1] is not valid Unicode: "
                                      "character 1 is a lone surrogate"),
      # MTEB 2's batches and sentences in one list: named, not indexed into.
      ([{"text": "a"}, "x"], TypeError, "sentences mixes batches and "
                                        "sentences: sentences[0] is a dict "
                                        "(a batch {'text': [...]}), "
                                        "sentences[1] is str;"),
      (["x", {"text": ["a"]}], TypeError, "sentences mixes batches and "
                                          "sentences: sentences[1] is a dict"),
      ([{"text": ["a"]}, {"text": "bc"}], TypeError,
       "sentences[1]['text'] is str; a batch's 'text' is a list"),
      ([{"sentences": ["a"]}], TypeError,
       "sentences[0] is a batch without 'text' (keys: sentences)")]:
    with pytest.raises(error) as raised:
      model.encode(sentences)
    assert str(raised.value).startswith(words), str(raised.value)
  missing = str(tmp_path / "nowhere")
  with pytest.raises(FileNotFoundError) as raised:
    SentenceEncoder(missing)
  assert str(raised.value) == f"model={missing} does not exist."
  with pytest.raises(ValueError) as raised:
    SentenceEncoder(missing + ",x", checkpoint="c")
  assert "--" not in str(raised.value)
  assert str(raised.value).startswith("checkpoint applies to a training run")


def test_raw_output_is_refused_where_the_graph_normalises(tiny):
  serving = SentenceEncoder(os.path.dirname(tiny.result.serving_dir))
  assert serving.normalizes_in_graph
  default = serving.encode(SENTENCES)  # as the model gives them: unit
  np.testing.assert_allclose(np.linalg.norm(default, axis=1), 1, atol=1e-5)
  with pytest.raises(ValueError, match="L2-normalises its embeddings in its "
                     "graph"):
    serving.encode(SENTENCES, normalize_embeddings=False)


@pytest.mark.slow
def test_installed_wheel_works_outside_the_repository(tiny, installed_garden,
                                                      tmp_path):
  """pyproject.toml: a wheel built without network, installed into a
  directory, puts one top-level package, `cmlm`, there; used from a folder
  that holds packages of its own named like the garden's layers
  (training/, export/, ...), it imports from the wheel, not from them.
  (tests/cmlm/test_installed_package.py: it trains, exports, evaluates.)"""
  site = installed_garden
  assert sorted(n for n in os.listdir(site) if not n.endswith(".dist-info")
                and n != "bin") == ["cmlm"]
  assert (os.path.isfile(os.path.join(site, "cmlm", "experiments", "configs",
                                      "cmlm_tiny.yaml")))
  user = helpers.user_project(str(tmp_path))
  script = (
      "import sys, numpy as np\n"
      "from cmlm import SentenceEncoder\n"
      "import cmlm, cmlm.export\n"
      "projects = [m for n, m in sys.modules.items() "
      "if n.startswith('cmlm.projects.')]  # registered: every project\n"
      "assert projects and all(m.__file__.startswith(sys.argv[1]) for m in "
      "[cmlm, cmlm.export] + projects), cmlm.export.__file__\n"
      "e = SentenceEncoder(sys.argv[2]).encode(['a', 'b c'], batch_size=32, "
      "normalize_embeddings=True, precision='float32', "
      "show_progress_bar=None)\n"
      "np.save(sys.argv[3], e)\n")
  out = tmp_path / "e.npy"
  completed = subprocess.run(
      [sys.executable, "-c", script, site, tiny.result.export_dir,
       str(out)], cwd=user, env=helpers.installed_env(site),
      capture_output=True, text=True, timeout=300)
  assert completed.returncode == 0, completed.stderr[-3000:]
  np.testing.assert_allclose(np.load(out), export_helpers.unit(tiny.in_memory_embeddings(
      ["a", "b c"])), atol=1e-5)
