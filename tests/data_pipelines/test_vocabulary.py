"""Vocabularies: a repeated token fails in one line naming both lines; a
corpus without a word is refused."""
import os

import pytest

import cmlm.data_pipelines  # noqa: F401  (Keras 2 before TensorFlow loads)
from cmlm.data_pipelines import tokenization
from cmlm.data_pipelines import vocabulary
from tests import helpers as commands
from tests.data_pipelines import data_helpers as helpers


def test_a_repeated_token_names_the_file_token_and_both_lines(tmp_path):
  tokens = helpers.TINY_VOCAB + ["cat"]  # "cat" is already on line 12
  path = helpers.write_tiny_vocab(tmp_path, tokens)
  first = helpers.TINY_VOCAB.index("cat") + 1
  with pytest.raises(vocabulary.VocabularyError) as raised:
    vocabulary.load_vocab(path)
  message = str(raised.value)
  assert "\n" not in message
  assert path in message and "'cat'" in message
  assert f"lines {first} and {len(tokens)}" in message
  # The tokenizer checks before building its lookup table (which used to
  # fail with "HashTable has different value for same key").
  with pytest.raises(vocabulary.VocabularyError, match="twice"):
    tokenization.WordPieceTokenizer(path, seq_length=8)


def test_repeated_empty_lines_are_named_as_such(tmp_path):
  path = helpers.write_tiny_vocab(tmp_path, helpers.TINY_VOCAB + ["", ""])
  with pytest.raises(vocabulary.VocabularyError, match="an empty line"):
    vocabulary.load_vocab(path)


def test_written_vocabularies_leave_out_tokens_holding_white_space(tmp_path):
  """A learner can keep 's' + U+00A0 beside 's' (text with no-break spaces):
  such a token never matches (text is split on white space) and a stripped
  read of the file would see it twice, so it is not written."""
  path = str(tmp_path / "vocab.txt")
  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "s", "s\u00a0",
            "a b", "##s"]
  vocabulary.write_vocab(tokens, path)
  assert vocabulary.load_vocab(path) == ["[PAD]", "[UNK]", "[CLS]", "[SEP]",
                                         "[MASK]", "s", "##s"]


def test_a_corpus_without_a_word_is_refused_and_nothing_is_written(tmp_path):
  """NUL and control bytes, or white space alone, give the learner no word:
  one error naming the corpus (not the learner's StopIteration), for one
  corpus and for a language of a multilingual one; no vocabulary file."""
  from cmlm.data_pipelines import multilingual_vocab  # pylint: disable=g-import-not-at-top
  control = tmp_path / "control.txt"
  control.write_bytes(b"\x00\x00\x01\x02\n\x03\x04 \x05\n\n\x00\n \t\n")
  output = tmp_path / "vocab.txt"
  with pytest.raises(vocabulary.VocabularyError,
                     match=r"control.txt holds no word: 2 document"):
    vocabulary.build_vocab_from_corpus(str(control), str(output), 100)
  english = tmp_path / "en.txt"
  english.write_text("The house is red. The car is blue.\n")
  with pytest.raises(vocabulary.VocabularyError,
                     match=r"de=.*control.txt holds no word"):
    multilingual_vocab.build_vocab_from_language_corpora(
        f"en={english},de={control}", str(output), 100)
  assert sorted(os.listdir(tmp_path)) == ["control.txt", "en.txt"]


def test_the_command_refuses_what_it_would_do_wrong_before_reading(
    tmp_path, capsys):
  """`vocab` keeps an existing file unless --overwrite (a trained run reads
  its vocabulary by path), and refuses a size with no room for a word, or
  a smoothing exponent out of [0, 1], before it reads any corpus."""
  corpus_dir = tmp_path / "corpus"
  corpus_dir.mkdir()
  (corpus_dir / "a.txt").write_text("The cat sat.\n\nA dog ran home.\n")
  output = tmp_path / "vocab.txt"
  output.write_text("keep me\n")
  argv = ["vocab", f"--input={corpus_dir}", f"--output={output}",
          "--vocab_size=40"]
  assert commands.run_command(argv, capsys) == (2, [
      f"cmlm vocab: error: {output} already exists; pass --overwrite to "
      "replace it (a run trained with it would no longer match its "
      "tokens)."])
  assert output.read_text() == "keep me\n"
  assert commands.run_command(argv + ["--overwrite"], capsys)[0] == 0
  assert output.read_text().startswith("[PAD]\n[UNK]\n")
  # Not UTF-8: reading it would be an error of its own, so the answers
  # below come before it is read.
  unread = tmp_path / "unread.txt"
  unread.write_bytes(b"\xff\xfe not text\n")
  assert commands.run_command(
      ["vocab", f"--input={unread}", f"--output={tmp_path / 'v.txt'}",
       "--vocab_size=5"],
      capsys) == (2, [
          "cmlm vocab: error: vocab_size=5 must be more than the 5 reserved "
          "tokens ([PAD], [UNK], [CLS], [SEP], [MASK])."])
  assert commands.run_command(
      ["vocab", f"--input=en={unread}", f"--output={tmp_path / 'v.txt'}",
       "--smoothing_exponent=2"],
      capsys) == (2, ["cmlm vocab: error: smoothing_exponent=2.0 must be in "
                      "[0, 1]."])
  assert commands.run_command(
      ["vocab", f"--input={tmp_path / 'none'}", f"--output={tmp_path}"],
      capsys) == (2, [
          f"cmlm vocab: error: --output={tmp_path} is a directory; name a "
          "file."])
  assert not (tmp_path / "v.txt").exists()
