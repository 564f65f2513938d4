"""Vocabulary checks and in-graph WordPiece tokenization and packing."""
import cmlm.data_pipelines  # noqa: F401  (selects Keras 2 before TensorFlow loads)

import os

import numpy as np
import pytest
import tensorflow as tf

from cmlm.data_pipelines import embedded_corpus
from cmlm.data_pipelines import tokenization
from cmlm.data_pipelines import vocabulary
from tests.data_pipelines import data_helpers as helpers

CLS, SEP = 2, 3


def ids(*tokens):
  return [helpers.TINY_VOCAB.index(token) for token in tokens]


def test_missing_vocab_file_is_a_clear_error(tmp_path):
  path = tmp_path / 'absent.txt'
  with pytest.raises(vocabulary.VocabularyError,
                     match=f"The vocabulary file '{path}' does not exist"):
    vocabulary.load_vocab(str(path))
  # A directory was TensorFlow's FailedPreconditionError, a traceback.
  with pytest.raises(vocabulary.VocabularyError,
                     match=f"The vocabulary file '{tmp_path}' is a directory"):
    vocabulary.load_vocab(str(tmp_path))


def test_vocab_without_special_tokens_names_them_and_the_file(tmp_path):
  path = helpers.write_tiny_vocab(
      tmp_path, ['[PAD]', '[UNK]', '[CLS]', 'the', 'cat'])
  with pytest.raises(vocabulary.VocabularyError) as error:
    vocabulary.load_vocab(path)
  assert str(error.value).startswith(
      f"The vocabulary file '{path}' lacks the special token(s) [SEP], "
      '[MASK];')


def test_vocab_needs_pad_as_id_zero(tmp_path):
  path = helpers.write_tiny_vocab(tmp_path, helpers.TINY_VOCAB[1:] + ['[PAD]'])
  with pytest.raises(vocabulary.VocabularyError, match='\\[PAD\\] must be id 0'):
    vocabulary.load_vocab(path)


def test_embedded_vocab_is_valid_uncased_wordpiece():
  vocab = vocabulary.load_vocab(embedded_corpus.VOCAB_EN_UNCASED)
  assert vocab[:5] == list(vocabulary.SPECIAL_TOKENS)
  assert len(vocab) == len(set(vocab)) > 8000
  assert {'elizabeth', 'darcy', 'constitution', '##s'} <= set(vocab)
  assert not any(token != token.lower() for token in vocab[5:])


def test_write_vocab_is_atomic_and_round_trips(tmp_path):
  path = tmp_path / 'out' / 'vocab.txt'
  vocabulary.write_vocab(helpers.TINY_VOCAB, str(path))
  assert vocabulary.load_vocab(str(path)) == helpers.TINY_VOCAB
  assert os.listdir(tmp_path / 'out') == ['vocab.txt']  # No temporary left.


def test_build_wordpiece_vocab_puts_reserved_tokens_first():
  sentences = ['The cat sat on the mat.', 'The dogs ran and the cats sat.'] * 5
  vocab = vocabulary.build_wordpiece_vocab(sentences, vocab_size=60)
  assert vocab[:5] == list(vocabulary.SPECIAL_TOKENS)
  assert {'the', 'cat', 'sat', '##s'} <= set(vocab)
  assert 'The' not in vocab  # lower_case=True


def test_tokenizer_packs_cls_tokens_sep_and_pads(tmp_path):
  tokenizer = tokenization.WordPieceTokenizer(
      helpers.write_tiny_vocab(tmp_path), seq_length=8)
  packed = tokenizer.tokenize_and_pack(tf.constant(['The cats sat.', 'Zebra!']))
  np.testing.assert_array_equal(packed['input_word_ids'], [
      [CLS] + ids('the', 'cat', '##s', 'sat', '.') + [SEP, 0],
      [CLS] + ids('[UNK]', '!') + [SEP, 0, 0, 0, 0]])
  np.testing.assert_array_equal(packed['input_mask'], [
      [1] * 7 + [0], [1] * 4 + [0] * 4])
  np.testing.assert_array_equal(packed['input_type_ids'], np.zeros([2, 8]))
  assert all(v.dtype == tf.int32 for v in packed.values())


def test_tokenizer_truncates_to_seq_length_keeping_sep(tmp_path):
  tokenizer = tokenization.WordPieceTokenizer(
      helpers.write_tiny_vocab(tmp_path), seq_length=5)
  packed = tokenizer.tokenize_and_pack(
      tf.constant(['the cat sat on the mat and the dog ran']))
  np.testing.assert_array_equal(
      packed['input_word_ids'], [[CLS] + ids('the', 'cat', 'sat') + [SEP]])
  np.testing.assert_array_equal(packed['input_mask'], [[1] * 5])


def test_tokenizer_works_in_tf_data_and_saved_model(tmp_path):
  tokenizer = tokenization.WordPieceTokenizer(
      helpers.write_tiny_vocab(tmp_path), seq_length=6, lower_case=True)
  batches = tf.data.Dataset.from_tensor_slices(['A cat.', 'Two dogs.'] * 3)
  batches = batches.batch(4).map(tokenizer.tokenize_and_pack)
  assert batches.element_spec['input_word_ids'].shape.as_list() == [None, 6]
  expected = tokenizer.tokenize_and_pack(tf.constant(['A cat.']))

  module = tf.Module()
  module.tokenizer = tokenizer
  module.pack = tf.function(
      tokenizer.tokenize_and_pack,
      input_signature=[tf.TensorSpec([None], tf.string)])
  tf.saved_model.save(module, str(tmp_path / 'preprocessor'))
  os.remove(tmp_path / 'vocab.txt')  # The SavedModel carries it as an asset.
  restored = tf.saved_model.load(str(tmp_path / 'preprocessor'))
  np.testing.assert_array_equal(
      restored.pack(tf.constant(['A cat.']))['input_word_ids'],
      expected['input_word_ids'])
