"""The corpus-to-records pipeline on Beam (data_pipelines/beam_pairs.py):
the same pairs as the one-process writer, the same bytes for the same seed,
bad input skipped and counted, nothing published on failure.

The DirectRunner runs in this process (`--direct_num_workers=1`); one slow
test runs it with two worker processes.
"""
import collections
import gzip
import os

import numpy as np
import pytest

beam = pytest.importorskip(
    'apache_beam', reason='Apache Beam is an extra: pip install -r '
    'requirements-beam.txt (make test installs it)')

# pylint: disable=g-import-not-at-top,wrong-import-position
from cmlm.data_pipelines import beam_pairs
from cmlm.data_pipelines import cmlm_dataloader
from cmlm.data_pipelines import corpus
from cmlm.data_pipelines import pair_tfrecords
from cmlm.data_pipelines import tokenization
from tests.data_pipelines import data_helpers as helpers

IN_PROCESS = ['--runner=DirectRunner', '--direct_num_workers=1']
SHIPPED_CORPUS = os.path.join(os.path.dirname(__file__), '..', '..', 'data',
                              'corpus_en')
SHIPPED_VOCAB = os.path.join(SHIPPED_CORPUS, '..', 'vocab_en_uncased.txt')


def read_records(paths):
  """The (s1, s2) of every record of `paths`, in file order."""
  import tensorflow as tf
  pairs = []
  for batch in tf.data.TFRecordDataset(list(paths)).batch(4096):
    s1, s2 = pair_tfrecords.parse_pair_examples(batch)
    pairs.extend(zip((s.decode() for s in s1.numpy()),
                     (s.decode() for s in s2.numpy())))
  return pairs


def file_bytes(paths):
  return [open(path, 'rb').read() for path in paths]


def prepare(input_spec, prefix, args=IN_PROCESS, **config):
  config.setdefault('pair_unit', 'sentence')
  config.setdefault('num_shards', 3)
  return beam_pairs.prepare_pairs(str(input_spec), str(prefix),
                                  beam_pairs.PairsConfig(**config), args)


@pytest.mark.slow
@pytest.mark.parametrize('pair_unit', ['sentence', 'sequence'])
def test_shipped_corpus_gives_the_one_process_writers_pairs(tmp_path,
                                                            pair_unit):
  tokenizing = tokenization.TokenizationConfig(vocab_file=SHIPPED_VOCAB,
                                               seq_length=64)
  result = prepare(SHIPPED_CORPUS, tmp_path / 'beam', pair_unit=pair_unit,
                   tokenization_config=tokenizing, num_shards=4, seed=11)
  streamed, stats = pair_tfrecords.write_pair_tfrecords(
      SHIPPED_CORPUS, str(tmp_path / 'streamed'), 4, pair_unit=pair_unit,
      tokenization_config=tokenizing)
  beam_pairs_read = read_records(result.shard_paths)
  streamed_read = read_records(streamed)
  assert collections.Counter(beam_pairs_read) == collections.Counter(
      streamed_read)
  assert result.pairs == stats.pairs == len(beam_pairs_read) > 1000
  assert result.counts.get('documents') == stats.documents
  assert result.counts.get('sentences') == stats.sentences
  # Shuffled: not the corpus order the streamed writer deals out.
  assert beam_pairs_read != streamed_read
  # The seeded one-process writer makes the very same bytes.
  seeded, _ = pair_tfrecords.write_pair_tfrecords(
      SHIPPED_CORPUS, str(tmp_path / 'seeded'), 4, pair_unit=pair_unit,
      tokenization_config=tokenizing, seed=11)
  assert file_bytes(result.shard_paths) == file_bytes(seeded)


@pytest.mark.slow
def test_training_reads_the_same_first_batches_from_either_writer(tmp_path):
  vocab = helpers.write_tiny_vocab(tmp_path)
  text = helpers.write_numbered_corpus(tmp_path / 'corpus', 40, num_files=3)
  tokenizing = tokenization.TokenizationConfig(vocab_file=vocab, seq_length=16)
  result = prepare(text, tmp_path / 'beam', pair_unit='sequence',
                   tokenization_config=tokenizing, seed=5)
  one_process, _ = pair_tfrecords.write_pair_tfrecords(
      text, str(tmp_path / 'one'), 3, pair_unit='sequence',
      tokenization_config=tokenizing, seed=5)

  def first_batches(prefix):
    params = cmlm_dataloader.CmlmDataConfig(
        input_path=f'{prefix}.tfrecord-*', pair_unit='sequence',
        max_predictions_per_seq=4, global_batch_size=8, is_training=True,
        seed=3, shuffle_buffer_size=16, deterministic=True)
    dataset = cmlm_dataloader.build_cmlm_dataset(params, tokenizing)
    return list(dataset.take(3).as_numpy_iterator())
  beam_batches = first_batches(tmp_path / 'beam')
  for ours, theirs in zip(beam_batches, first_batches(tmp_path / 'one')):
    for key in cmlm_dataloader.FEATURE_KEYS:
      np.testing.assert_array_equal(ours[key], theirs[key])
  assert one_process[0].endswith('one.tfrecord-00000-of-00003')
  assert len(beam_batches) == 3


@pytest.mark.slow
def test_same_seed_same_bytes_on_two_worker_processes(tmp_path):
  text = helpers.write_numbered_corpus(tmp_path / 'corpus', 30, num_files=4)
  first = prepare(text, tmp_path / 'a', seed=1)
  again = prepare(text, tmp_path / 'b', seed=1, args=[
      '--runner=DirectRunner', '--direct_num_workers=2',
      '--direct_running_mode=multi_processing'])
  other_seed = prepare(text, tmp_path / 'c', seed=2)
  assert file_bytes(first.shard_paths) == file_bytes(again.shard_paths)
  assert file_bytes(first.shard_paths) != file_bytes(other_seed.shard_paths)
  assert sorted(read_records(first.shard_paths)) == sorted(
      read_records(other_seed.shard_paths))


def write_bad_corpus(directory):
  """Good text beside a binary file, mixed encodings, an empty file and a
  truncated gzip; returns the good text's path spec."""
  good = helpers.write_numbered_corpus(directory / 'good', 6)
  (directory / 'bad').mkdir()
  (directory / 'bad' / 'binary.txt').write_bytes(
      b'Looks like text. Is not.\x00\x01\x02' * 10)
  (directory / 'bad' / 'mixed.txt').write_bytes(
      'Sentence 90 one. Sentence 90 two.\ncaf\xe9 in Latin-1.\n'.encode(
          'latin-1') + b'\n' + b'Sentence 91 one. Sentence 91 two.\n')
  (directory / 'bad' / 'empty.txt').write_text('\n  \n')
  whole = gzip.compress(b'Sentence 95 one. Sentence 95 two.\n\n' * 50)
  (directory / 'bad' / 'cut.txt.gz').write_bytes(whole[:len(whole) // 2])
  (directory / 'nothing').mkdir()
  (directory / 'nothing' / 'blank.txt').write_text('\n')
  return good


def test_bad_files_are_skipped_counted_and_reported_by_language(tmp_path):
  good = write_bad_corpus(tmp_path)
  spec = (f'en={good},en={tmp_path / "bad"},'
          f'de={tmp_path / "nothing"}')
  result = prepare(spec, tmp_path / 'out' / 'pairs')
  counts = result.counts
  assert counts.get('files_binary', 'en') == 1
  assert counts.get('files_unreadable', 'en') == 1
  assert counts.get('lines_not_utf8', 'en') == 1
  assert counts.get('files_empty', 'en') == 1
  assert counts.get('files_empty', 'de') == 1
  assert counts.get('pairs', 'de') == 0
  pairs = read_records(result.shard_paths)
  sentences = {sentence for pair in pairs for sentence in pair}
  assert 'Sentence 90 one.' in sentences and 'Sentence 91 two.' in sentences
  assert not any('caf' in sentence or 'Is not' in sentence
                 for sentence in sentences)
  # The mixed file's Latin-1 line is skipped as skip_invalid_lines does.
  expected, _ = corpus.load_sentence_pairs(good)
  assert set(expected) < set(pairs)
  table = beam_pairs.beam_text.report_table(counts)
  assert table.splitlines()[0] == '|  | de | en | total |'
  assert '| files skipped: binary (a NUL byte) | 0 | 1 | 1 |' in table
  assert result.pairs_by_language == {'en': len(pairs)}


def test_nothing_is_published_when_there_is_no_pair_or_the_job_fails(
    tmp_path, monkeypatch):
  one_sentence = tmp_path / 'one'
  one_sentence.mkdir()
  (one_sentence / 'a.txt').write_text('Only one sentence here.\n')
  out = tmp_path / 'out'
  with pytest.raises(corpus.CorpusError, match='gave no sentence pairs'):
    prepare(one_sentence, out / 'pairs')
  # No shard, no manifest, no temporary dir, nor the directory made for them.
  assert not out.exists()
  text = helpers.write_numbered_corpus(tmp_path / 'corpus', 10)
  first = prepare(text, out / 'pairs', seed=1)
  before = file_bytes(first.shard_paths + [first.manifest_path])
  with pytest.raises(FileExistsError, match='--overwrite'):
    prepare(text, out / 'pairs', seed=2)

  def fail(document):
    raise RuntimeError('a worker died')
  monkeypatch.setattr(beam_pairs.beam_text.sentence_splitter,
                      'split_sentences', fail)
  with pytest.raises(Exception, match='a worker died'):
    beam_pairs.prepare_pairs(text, str(out / 'pairs'), beam_pairs.PairsConfig(
        pair_unit='sentence', num_shards=3, seed=2), IN_PROCESS,
                             overwrite=True)
  assert sorted(os.listdir(out)) == sorted(
      os.path.basename(p) for p in first.shard_paths + [first.manifest_path])
  assert file_bytes(first.shard_paths + [first.manifest_path]) == before


def test_overwrite_replaces_every_old_shard_and_the_manifest(tmp_path):
  text = helpers.write_numbered_corpus(tmp_path / 'corpus', 10)
  prepare(text, tmp_path / 'out' / 'pairs', num_shards=4)
  result = beam_pairs.prepare_pairs(
      text, str(tmp_path / 'out' / 'pairs'),
      beam_pairs.PairsConfig(pair_unit='sentence', num_shards=2), IN_PROCESS,
      overwrite=True)
  assert sorted(os.listdir(tmp_path / 'out')) == [
      'pairs.pairs.json', 'pairs.tfrecord-00000-of-00002',
      'pairs.tfrecord-00001-of-00002']
  assert len(read_records(result.shard_paths)) == result.pairs == 20


@pytest.mark.parametrize('spec, config, message', [
    ('', {}, 'The input is empty'),
    ('{tmp}/missing', {}, 'does not exist'),
    ('{tmp}/*.nothing', {}, 'matches no files'),
    ('en={tmp},{tmp}', {}, 'mixes LANG=PATH parts'),
    ('e n={tmp}', {}, 'is not a name of letters'),
    ('{tmp}', dict(pair_unit='sequence'), 'give its tokenization'),
    ('{tmp}', dict(num_shards=0), 'num_shards=0 must be 1 or more'),
    ('{tmp}', dict(document_unit='page'), "document_unit='page'"),
])
def test_bad_settings_fail_before_the_job(tmp_path, spec, config, message):
  (tmp_path / 'a.txt').write_text('One. Two.\n')
  with pytest.raises(ValueError, match=message):
    prepare(spec.format(tmp=tmp_path), tmp_path / 'out' / 'p', **config)
  assert not (tmp_path / 'out').exists() or not os.listdir(tmp_path / 'out')


def test_an_unknown_runner_is_named_with_its_flag_before_the_job(tmp_path):
  (tmp_path / 'a.txt').write_text('One. Two.\n')
  with pytest.raises(ValueError, match=r'^--runner=Bogus: Unexpected pipeline '
                     'runner: Bogus'):
    prepare(tmp_path, tmp_path / 'out' / 'p', args=['--runner=Bogus'])
  assert not (tmp_path / 'out').exists() or not os.listdir(tmp_path / 'out')


def test_split_keeps_the_documents_text_sources_keep(tmp_path):
  text = helpers.write_numbered_corpus(tmp_path / 'corpus', 40, num_files=2)
  for split in ('train', 'heldout'):
    result = prepare(text, tmp_path / split / 'p', split=split,
                     heldout_percent=30)
    expected, _ = corpus.load_sentence_pairs(text, split, 30)
    assert sorted(read_records(result.shard_paths)) == sorted(expected)
    assert 0 < result.pairs < 80


class _SchemeFileSystem(beam.io.localfilesystem.LocalFileSystem):
  """Local files under a `testfs://` scheme: a file system that is not
  local to `corpus`, as gs:// is (registered by being defined)."""

  @classmethod
  def scheme(cls):
    return 'testfs'

  def match(self, patterns, limits=None):
    from apache_beam.io.filesystem import FileMetadata, MatchResult
    results = super().match([p[len('testfs://'):] for p in patterns], limits)
    return [MatchResult(pattern, [
        FileMetadata('testfs://' + m.path, m.size_in_bytes,
                     m.last_updated_in_seconds)
        for m in result.metadata_list])
            for pattern, result in zip(patterns, results)]

  def open(self, path, *args, **kwargs):
    return super().open(path[len('testfs://'):], *args, **kwargs)


def test_a_glob_on_another_file_system_is_matched_in_the_job(tmp_path):
  text = helpers.write_numbered_corpus(tmp_path / 'corpus', 12, num_files=3)
  with gzip.open(tmp_path / 'corpus' / 'more.txt.gz', 'wt') as f:
    f.write(helpers.numbered_document(50) + '\n')
  inputs = beam_pairs.beam_text.expand_input_spec(
      f'en=testfs://{text}/*.txt*')
  assert inputs == [('en', f'testfs://{text}/*.txt*')]  # listed by a worker
  remote = prepare(f'en=testfs://{text}/*.txt*', tmp_path / 'r' / 'p')
  local = prepare(f'en={text}/*.txt*', tmp_path / 'l' / 'p')
  assert file_bytes(remote.shard_paths) == file_bytes(local.shard_paths)
  assert remote.counts.get('files_read') == 4 and remote.pairs == 26
  with pytest.raises(corpus.CorpusError, match='matches no files'):
    prepare(f'testfs://{text}/*.nothing', tmp_path / 'n' / 'p')
