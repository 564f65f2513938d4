"""The paper's data unit (section 3): consecutive sequences of whole
sentences, packed to the token budget, and the exact mask count."""
import cmlm.data_pipelines  # noqa: F401  (selects Keras 2 before TensorFlow loads)

import json

import numpy as np
import pytest
import tensorflow as tf

from cmlm.data_pipelines import cmlm_dataloader
from cmlm.data_pipelines import corpus
from cmlm.data_pipelines import pair_tfrecords
from cmlm.data_pipelines import sequence_packing
from cmlm.data_pipelines import tokenization
from tests.data_pipelines import data_helpers as helpers

SEQ_LENGTH = 16  # 14 tokens between [CLS] and [SEP]


def tiny_tokenization(tmp_path):
  return tokenization.TokenizationConfig(
      vocab_file=helpers.write_tiny_vocab(tmp_path), seq_length=SEQ_LENGTH)


@pytest.mark.parametrize('counts,max_tokens', [
    ([3, 4, 5, 2, 9, 1, 1, 1], 10), ([20, 1, 1], 10), ([1, 1], 10),
    ([4] * 10, 4), ([2, 3, 40, 3], 8)])
def test_spans_are_consecutive_cover_the_document_and_fit(counts, max_tokens):
  spans = sequence_packing.pack_sentences(counts, max_tokens)
  assert spans[0][0] == 0 and spans[-1][1] == len(counts)
  for (_, end), (begin, _) in zip(spans[:-1], spans[1:]):
    assert end == begin  # consecutive, never overlapping
  for begin, end in spans:
    assert end > begin
    # Within the budget, unless one sentence alone is longer.
    assert sum(counts[begin:end]) <= max_tokens or end - begin == 1
  # Greedy: the next sentence would not have fitted into a span.
  for (begin, end), _ in zip(spans[:-1], spans[1:]):
    if len(spans) > 2 or sum(counts) > max_tokens:
      assert sum(counts[begin:end + 1]) > max_tokens


def test_a_document_within_one_budget_is_cut_where_halves_balance():
  assert sequence_packing.pack_sentences([1, 1], 10) == [(0, 1), (1, 2)]
  assert sequence_packing.pack_sentences([2, 2, 5, 1], 20) == [(0, 3), (3, 4)] \
      or sequence_packing.pack_sentences([2, 2, 5, 1], 20) == [(0, 2), (2, 4)]
  assert sequence_packing.pack_sentences([6, 1, 1, 1, 1, 2], 20) == [
      (0, 1), (1, 6)]


def test_pairs_are_consecutive_sequences_of_one_document(tmp_path):
  count = sequence_packing.token_counter(tiny_tokenization(tmp_path))
  # 'Sentence 7 one.' is 4 tokens: 3 fit in 14, a fourth does not.
  documents = [[f'Sentence {n} {w}.' for w in helpers.ORDINALS]
               for n in range(6)]
  stats = corpus.CorpusStats()
  pairs = list(sequence_packing.sequence_pairs(
      documents, count, SEQ_LENGTH - 2, stats, block_sentences=5))
  assert stats.pairs == len(pairs) == 6
  for s1, s2 in pairs:
    document = {int(s.split()[1]) for s in (s1 + ' ' + s2).split('.') if s}
    assert len(document) == 1  # never crosses a document boundary
    text = ' '.join(documents[document.pop()])
    assert text.startswith(s1 + ' ' + s2)  # consecutive, s1 then s2
    assert max(count([s1, s2])) <= SEQ_LENGTH - 2
  assert pairs[0][0] == 'Sentence 0 one. Sentence 0 two. Sentence 0 three.'


def test_pipeline_sequence_pairs_and_tfrecords_agree(tmp_path):
  path = helpers.write_numbered_corpus(tmp_path / 'c', 10, num_sentences=4)
  token_config = tiny_tokenization(tmp_path)
  data = cmlm_dataloader.CmlmDataConfig(
      input_path=path, max_predictions_per_seq=4, global_batch_size=4,
      is_training=False, drop_remainder=False, swap_order_probability=0.0,
      pair_unit='sequence')
  from_text = helpers.restored_pairs(cmlm_dataloader.build_cmlm_dataset(
      data, token_config).as_numpy_iterator())
  assert len(from_text) == 10
  tokenizer = tokenization.build_wordpiece_tokenizer(token_config)
  expected = sequence_packing.sequence_pairs(
      corpus.sentence_documents(corpus.read_documents(path)),
      sequence_packing.token_counter(token_config), SEQ_LENGTH - 2)
  ids = lambda text: tuple(tokenizer.tokenize_and_pack(
      tf.constant([text]))['input_word_ids'].numpy()[0])
  assert sorted(from_text) == sorted((ids(a), ids(b)) for a, b in expected)

  prefix = str(tmp_path / 'records' / 'pairs')
  paths, stats = pair_tfrecords.write_pair_tfrecords(
      path, prefix, num_shards=2, pair_unit='sequence',
      tokenization_config=token_config)
  assert stats.pairs == 10
  assert json.load(open(prefix + '.pairs.json'))['pair_unit'] == 'sequence'
  data.input_path = prefix + '.tfrecord-*'
  from_records = helpers.restored_pairs(cmlm_dataloader.build_cmlm_dataset(
      data, token_config).as_numpy_iterator())
  assert sorted(from_records) == sorted(from_text)
  data.pair_unit = 'sentence'
  with pytest.raises(ValueError, match='hold sequence pairs'):
    cmlm_dataloader.build_cmlm_dataset(data, token_config)
  with pytest.raises(ValueError, match='give its tokenization_config'):
    pair_tfrecords.write_pair_tfrecords(path, prefix, 1, pair_unit='sequence')
  with pytest.raises(ValueError, match="pair_unit='pages' must be"):
    data.pair_unit = 'pages'
    cmlm_dataloader.CmlmDataLoader(data, token_config)


def test_a_full_s2_gets_exactly_the_fixed_mask_count(tmp_path):
  # 7-token sentences: two fill a sequence (16 with [CLS] and [SEP]), and
  # 16 * 0.25 = 4 masks; one is 9 tokens long: round(2.25) = 2 masks.
  sentence = 'The cat sat on the mat.'
  path = tmp_path / 'corpus.txt'
  path.write_text('\n\n'.join([' '.join([sentence] * 4),
                                ' '.join([sentence] * 3)] * 4))
  path = str(path)
  data = cmlm_dataloader.CmlmDataConfig(
      input_path=path, max_predictions_per_seq=4, masking_rate=0.25,
      global_batch_size=8, is_training=False, drop_remainder=False,
      swap_order_probability=0.0, pair_unit='sequence')
  features = next(cmlm_dataloader.build_cmlm_dataset(
      data, tiny_tokenization(tmp_path)).as_numpy_iterator())
  lengths = features['s2_input_mask'].sum(1)
  masks = features['masked_lm_weights'].sum(1)
  np.testing.assert_array_equal(masks, np.round(0.25 * lengths))
  assert sorted(set(zip(lengths, masks))) == [(9, 2), (SEQ_LENGTH, 4)]
