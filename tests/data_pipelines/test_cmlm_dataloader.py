"""The CMLM input pipeline: features, swap, sharding, TFRecords, TFDS."""
import cmlm.data_pipelines  # noqa: F401  (selects Keras 2 before TensorFlow loads)

import copy
import os
import tempfile

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from cmlm.data_pipelines import cmlm_dataloader
from cmlm.data_pipelines import corpus
from cmlm.data_pipelines import embedded_corpus
from cmlm.data_pipelines import pair_tfrecords
from cmlm.data_pipelines import sequence_packing
from cmlm.data_pipelines import tokenization
from cmlm.data_pipelines import vocabulary
from tests.data_pipelines import data_helpers as helpers

SEQ_LENGTH, PREDICTIONS = 16, 4
# The run's tokenization (task.tokenization), given to loaders beside the
# data config.
TOKENIZATION_KEYS = ('vocab_file', 'lower_case', 'text_normalization',
                     'seq_length')


def split_config(values):
  """(CmlmDataConfig, TokenizationConfig) of one dict of both's fields."""
  tokenizing = {k: values.pop(k) for k in TOKENIZATION_KEYS if k in values}
  return (cmlm_dataloader.CmlmDataConfig(**values),
          tokenization.TokenizationConfig(**tokenizing))


def config(tmp_path, **overrides):
  """(data config, tokenization config) for `build_cmlm_dataset`."""
  values = dict(vocab_file=helpers.write_tiny_vocab(tmp_path),
                seq_length=SEQ_LENGTH, max_predictions_per_seq=PREDICTIONS,
                global_batch_size=8, is_training=False, drop_remainder=False,
                swap_order_probability=0.0, pair_unit='sentence')
  if 'input_path' not in overrides and 'tfds_name' not in overrides:
    values['input_path'] = helpers.write_numbered_corpus(tmp_path / 'c', 30)
  values.update(overrides)
  return split_config(values)


def all_pairs(params, input_context=None):
  dataset = cmlm_dataloader.build_cmlm_dataset(*params, input_context)
  return helpers.restored_pairs(dataset.as_numpy_iterator())


def test_embedded_corpus_gives_documented_keys_dtypes_and_static_shapes():
  params = split_config(dict(
      input_path=embedded_corpus.CORPUS_EN,
      vocab_file=embedded_corpus.VOCAB_EN_UNCASED, seq_length=64,
      max_predictions_per_seq=20, global_batch_size=4, is_training=True,
      heldout_percent=5, split='train', seed=1, pair_unit='sentence'))
  loader = cmlm_dataloader.CmlmDataLoader(*params)
  dataset = loader.load()
  int32, float32 = tf.int32, tf.float32
  assert {k: (s.dtype, s.shape.as_list())
          for k, s in dataset.element_spec.items()} == {
              **{f's{i}_input_{name}': (int32, [4, 64]) for i in (1, 2)
                 for name in ('word_ids', 'mask', 'type_ids')},
              'masked_lm_positions': (int32, [4, 20]),
              'masked_lm_ids': (int32, [4, 20]),
              'masked_lm_weights': (float32, [4, 20])}
  stats = loader.corpus_stats
  assert stats.files == 60 and stats.pairs > 6000
  assert stats.skipped_single_sentence_documents > 0
  features = next(iter(dataset))
  assert np.all(features['s1_input_word_ids'][:, 0] == 2)  # [CLS]
  assert np.all(features['masked_lm_weights'][:, 0] == 1.0)
  assert np.any(features['s2_input_word_ids'] == 4)  # [MASK]


def test_a_corpus_read_again_as_it_was_is_not_packed_again(tmp_path,
                                                          monkeypatch):
  """`text_pairs` keeps a small corpus's pairs: read again unchanged, its
  sentences are not tokenized again and the caller gets its own copies;
  read another way (sequence length, split), edited, or with a file added,
  it is read again."""
  counted = []
  token_counter = sequence_packing.token_counter

  def counting_counter(*args, **kwargs):
    count = token_counter(*args, **kwargs)
    return lambda sentences: counted.append(len(sentences)) or count(sentences)
  monkeypatch.setattr(sequence_packing, 'token_counter', counting_counter)
  params, tokenizing = config(tmp_path, pair_unit='sequence')
  vocab = vocabulary.read_vocabulary(tokenizing.vocab_file)
  read = lambda p=params, t=tokenizing: cmlm_dataloader.text_pairs(p, t, vocab)

  pairs, stats, _ = read()
  assert counted  # packed: every sentence's tokens counted
  counted.clear()
  again, again_stats, _ = read()
  assert (again, again_stats) == (pairs, stats) and not counted
  again.append(('s1', 's2'))
  again_stats.pairs = 0
  assert read()[:2] == (pairs, stats)  # the kept pairs are not the caller's

  shorter = copy.deepcopy(tokenizing)
  shorter.seq_length = SEQ_LENGTH // 2
  assert read(t=shorter)[0] != pairs and counted
  counted.clear()
  heldout = copy.deepcopy(params)
  heldout.split, heldout.heldout_percent = 'heldout', 50
  read(p=heldout)
  assert counted
  counted.clear()
  corpus_file = os.path.join(params.input_path, 'part00.txt')
  with open(corpus_file, 'a', encoding='utf-8') as f:
    f.write('\nEdited one. Edited two.\n')
  edited = read()[0]
  assert counted and edited[-1] == ('Edited one.', 'Edited two.')
  counted.clear()
  helpers.write_numbered_corpus(tmp_path / 'c', 4, num_files=2)  # part01.txt
  assert len(read()[0]) != len(edited) and counted


def test_order_is_swapped_about_half_the_time_and_never_at_zero(tmp_path):
  # Every s1 is 'sentence N one.' and every s2 'sentence N two.' unswapped.
  path = helpers.write_numbered_corpus(tmp_path / 'c', 1000, num_sentences=2)
  one = helpers.TINY_VOCAB.index('one')
  for probability, low, high in [(0.5, 0.44, 0.56), (0.0, 0, 0), (1.0, 1, 1)]:
    params = config(tmp_path, input_path=path, global_batch_size=50,
                    swap_order_probability=probability, seed=3)
    s1 = np.concatenate([f['s1_input_word_ids'] for f in
                         cmlm_dataloader.build_cmlm_dataset(*params)])
    swapped = np.mean(~np.any(s1 == one, axis=1))
    assert len(s1) == 1000 and low <= swapped <= high, probability


def test_input_pipelines_get_disjoint_shards_that_cover_the_data(tmp_path):
  for num_files in (1, 3):  # Text is sharded by pair, however many files.
    path = helpers.write_numbered_corpus(tmp_path / f'c{num_files}', 30,
                                         num_files=num_files)
    params = config(tmp_path, input_path=path)
    everything = all_pairs(params)
    shards = [all_pairs(params, tf.distribute.InputContext(
        num_input_pipelines=2, input_pipeline_id=i)) for i in (0, 1)]
    assert len(everything) == len(set(everything)) == 60
    assert not set(shards[0]) & set(shards[1])
    assert sorted(shards[0] + shards[1]) == sorted(everything)
    assert abs(len(shards[0]) - len(shards[1])) <= 1


def test_tfrecord_pairs_equal_text_pairs_and_shard_by_file(tmp_path):
  path = helpers.write_numbered_corpus(tmp_path / 'c', 30)
  paths, stats = pair_tfrecords.write_pair_tfrecords(
      path, str(tmp_path / 'records' / 'pairs'), num_shards=3)
  assert [os.path.basename(p) for p in paths] == [
      f'pairs.tfrecord-0000{i}-of-00003' for i in range(3)]
  s1, s2 = pair_tfrecords.parse_pair_examples(
      tf.stack(list(tf.data.TFRecordDataset(paths))))
  text_pairs, _ = corpus.load_sentence_pairs(path)
  assert sorted(zip([s.decode() for s in s1.numpy()],
                    [s.decode() for s in s2.numpy()])) == sorted(text_pairs)
  assert stats.pairs == len(text_pairs) == 60

  from_text = all_pairs(config(tmp_path, input_path=path))
  glob = str(tmp_path / 'records' / 'pairs.tfrecord-*')
  assert sorted(all_pairs(config(tmp_path, input_path=glob))) == sorted(
      from_text)
  shards = [all_pairs(config(tmp_path, input_path=glob),
                      tf.distribute.InputContext(3, i, 1)) for i in range(3)]
  assert sorted(sum(shards, [])) == sorted(from_text)
  assert all(len(shard) == 20 for shard in shards)


def test_tfrecord_writing_leaves_nothing_behind_on_error(tmp_path):
  helpers.write_numbered_corpus(tmp_path / 'c', 10)
  (tmp_path / 'c' / 'zz_bad.txt').write_bytes(b'Broken \xff text. Here.\n')
  (tmp_path / 'out').mkdir()
  with pytest.raises(corpus.CorpusError, match='zz_bad.txt.*not UTF-8'):
    pair_tfrecords.write_pair_tfrecords(
        str(tmp_path / 'c'), str(tmp_path / 'out' / 'pairs'), num_shards=2)
  assert os.listdir(tmp_path / 'out') == []


def _mock_documents(self, split, **unused_kwargs):
  del self, unused_kwargs
  number = {'train': 0, 'test': 100}[str(split)]
  texts = [helpers.numbered_document(n) for n in range(number, number + 20)]
  return tf.data.Dataset.from_tensor_slices(
      {'text': texts, 'label': np.zeros(20, np.int64)})


def test_tfds_source_yields_pairs_and_shards_them(tmp_path, monkeypatch):
  # TFDS's mock asks GCS for the dataset's info through a temporary folder
  # that it leaves: in the test's folder, not the system's.
  (tmp_path / 'system_tmp').mkdir()
  monkeypatch.setattr(tempfile, 'tempdir', str(tmp_path / 'system_tmp'))
  with tfds.testing.mock_data(num_examples=3):  # Random text: plumbing only.
    assert len(list(corpus.tfds_documents('imdb_reviews', 'train', 'text'))) == 3
  with tfds.testing.mock_data(as_dataset_fn=_mock_documents):
    params = config(tmp_path, tfds_name='imdb_reviews', tfds_split='train')
    everything = all_pairs(params)
    shards = [all_pairs(params, tf.distribute.InputContext(2, i, 1))
              for i in (0, 1)]
    with pytest.raises(corpus.CorpusError, match="no feature 'review'"):
      cmlm_dataloader.build_cmlm_dataset(
          *config(tmp_path, tfds_name='imdb_reviews', tfds_split='test',
                 text_feature='review'))
  assert len(everything) == 40
  assert not set(shards[0]) & set(shards[1])
  assert sorted(shards[0] + shards[1]) == sorted(everything)


def test_same_seed_gives_the_same_batches(tmp_path):
  params = config(tmp_path, is_training=True, seed=7,
                  swap_order_probability=0.5)
  first, second = [list(cmlm_dataloader.build_cmlm_dataset(*params).take(3)
                        .as_numpy_iterator()) for _ in range(2)]
  for a, b in zip(first, second):
    for key in cmlm_dataloader.FEATURE_KEYS:
      np.testing.assert_array_equal(a[key], b[key])


@pytest.mark.parametrize('overrides, message', [
    (dict(max_predictions_per_seq=15),
     'max_predictions_per_seq=15 masked tokens do not fit in seq_length=16'),
    (dict(split='dev'), "split 'dev' is not one of"),
    (dict(split='heldout'), 'heldout_percent=0 selects no documents'),
    (dict(swap_order_probability=1.5), 'swap_order_probability=1.5 is not a'),
    (dict(masking_rate=0.0), 'masking_rate=0.0 must be in'),
    (dict(vocab_file=''), 'vocab_file is empty'),
    (dict(vocab_file='/no/vocab.txt'), "'/no/vocab.txt' does not exist"),
    (dict(tfds_name='imdb_reviews', input_path='a.txt'),
     'set exactly one of input_path'),
    (dict(tfds_name='imdb_reviews'), 'tfds_split must name a split'),
    (dict(global_batch_size=0), 'global_batch_size=0 must be 1 or more'),
])
def test_bad_configs_are_clear_errors_before_reading(tmp_path, overrides,
                                                     message):
  with pytest.raises(ValueError, match=message):
    cmlm_dataloader.CmlmDataLoader(*config(tmp_path, **overrides))


def test_corpus_without_pairs_is_a_clear_error(tmp_path):
  (tmp_path / 'one.txt').write_text('Only one sentence here.\n')
  with pytest.raises(corpus.CorpusError, match='has no sentence pairs'):
    cmlm_dataloader.build_cmlm_dataset(
        *config(tmp_path, input_path=str(tmp_path / 'one.txt')))
