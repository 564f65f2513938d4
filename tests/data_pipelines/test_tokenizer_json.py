"""tokenizer.json tokenizes as the garden's in-graph TF Text tokenizer
(data_pipelines/tokenizer_json.py), read back by Hugging Face's `tokenizers`
as any runtime reads it."""
import cmlm.data_pipelines  # noqa: F401  (selects Keras 2 before TensorFlow loads)

import numpy as np
import pytest
import tensorflow as tf

from cmlm.data_pipelines import tokenization
from cmlm.data_pipelines import tokenizer_json
from cmlm.data_pipelines import vocabulary
from tests.data_pipelines import fuzz_text

COUNT = 20_000
SEQ_LENGTH = 24  # most fuzzed strings are longer: truncation is tested too

Tokenizer = pytest.importorskip("tokenizers").Tokenizer


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory):
  vocab_file = str(tmp_path_factory.mktemp("fuzz") / "vocab.txt")
  vocab = fuzz_text.fuzz_vocab(vocab_file)
  return vocab_file, vocab, fuzz_text.fuzz_strings(COUNT, seed=0)


def _first_difference(strings, ours, theirs, vocab):
  for text, a, b in zip(strings, ours, theirs):
    if list(a) != list(b):
      return (f"{text[:200]!r}: tokenizer.json {[vocab[i] for i in a][:40]} "
              f"in-graph {[vocab[i] for i in b][:40]}")
  return None


@pytest.mark.slow
@pytest.mark.parametrize("text_normalization", ["tf_text", "huggingface"])
def test_tokenizer_json_gives_the_in_graph_ids_on_fuzzed_text(
    fuzzed, text_normalization, tmp_path):
  vocab_file, vocab, strings = fuzzed
  # The fuzzed words reach TF Text's 100-byte limit before 100 characters.
  assert any(len(w) <= 100 < len(w.encode()) for s in strings
             for w in s.split())
  for lower_case in (True, False):
    config = tokenization.TokenizationConfig(
        vocab_file=vocab_file, lower_case=lower_case,
        text_normalization=text_normalization, seq_length=SEQ_LENGTH)
    in_graph = tokenization.build_wordpiece_tokenizer(config)
    pieces = in_graph.tokenize(tf.constant(strings))  # one call, 20,000 rows
    packed = in_graph.pack(pieces)["input_word_ids"].numpy()
    path = str(tmp_path / f"{lower_case}.json")
    tokenizer_json.write_tokenizer_json(config, path)
    tokenizer = Tokenizer.from_file(path)
    # As written: [CLS] ... [SEP], cut to SEQ_LENGTH, padded with [PAD].
    tokenizer.enable_padding(pad_id=0, pad_token=vocabulary.PAD,
                             length=SEQ_LENGTH)
    ours = np.array([e.ids for e in tokenizer.encode_batch(strings)])
    assert ours.shape == packed.shape
    assert np.array_equal(ours, packed), _first_difference(
        strings, ours, packed, vocab)
    # Whole, not cut: every word piece of every string.
    tokenizer.no_truncation()
    tokenizer.no_padding()
    ours = [e.ids for e in tokenizer.encode_batch(
        strings, add_special_tokens=False)]
    theirs = pieces.to_list()
    assert sum(map(len, theirs)) > 10 * COUNT
    share_unk = sum(i == 1 for row in theirs for i in row) / sum(
        map(len, theirs))
    assert share_unk < 0.6  # mostly real pieces, not [UNK] alone
    assert ours == theirs, _first_difference(strings, ours, theirs, vocab)


def test_special_tokens_are_text_and_decoding_gives_the_normalised_text(
    fuzzed):
  _, vocab, _ = fuzzed
  tokenizer = tokenizer_json.build_huggingface_tokenizer(vocab, 64, lower_case=True)
  cls, sep = vocab.index("[CLS]"), vocab.index("[SEP]")
  ids = tokenizer.encode("[CLS] Straße").ids
  assert ids[0] == cls and ids[-1] == sep
  assert cls not in ids[1:-1]  # "[CLS]" in the text is "[", "cls", "]"
  # [CLS] and [SEP] are no added tokens either: decoding keeps them.
  assert tokenizer.decode(ids[1:-1]) == "[ cls ] strasse"
  assert tokenizer_json.byte_level("привет") != "привет"
  assert tokenizer.decode(tokenizer.encode(
      "привет мир", add_special_tokens=False).ids) == "привет мир"


def test_bad_settings_are_one_clear_error(fuzzed):
  _, vocab, _ = fuzzed
  with pytest.raises(ValueError, match="text_normalization must be one of"):
    tokenizer_json.build_huggingface_tokenizer(vocab, 8, text_normalization="icu")
  with pytest.raises(ValueError, match="leaves no room"):
    tokenizer_json.build_huggingface_tokenizer(vocab, 2)
  with pytest.raises(vocabulary.VocabularyError, match=r"lacks .*\[MASK\]"):
    tokenizer_json.build_huggingface_tokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]"], 8)
