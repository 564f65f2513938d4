"""A vocabulary with a repeated token fails in one line naming both lines."""
import pytest

import cmlm.data_pipelines  # noqa: F401  (Keras 2 before TensorFlow loads)
from cmlm.data_pipelines import tokenization
from cmlm.data_pipelines import vocabulary
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
