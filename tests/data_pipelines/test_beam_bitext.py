"""Translation pairs to records on Beam (data_pipelines/beam_bitext.py):
the pairs `bitext` reads, read back by `bitext.iter_bitext`; bad rows and
files skipped and counted."""
import collections
import gzip

import pytest

beam = pytest.importorskip(
    'apache_beam', reason='Apache Beam is an extra: pip install -r '
    'requirements-beam.txt (make test installs it)')

# pylint: disable=g-import-not-at-top,wrong-import-position
from cmlm.data_pipelines import beam_bitext
from cmlm.data_pipelines import bitext

IN_PROCESS = ['--runner=DirectRunner', '--direct_num_workers=1']


def test_records_hold_the_pairs_bitext_reads_and_read_back(tmp_path):
  tsv = tmp_path / 'en-de.tsv'
  tsv.write_text(''.join(f'web\tHello {i}.\tHallo {i}.\n' for i in range(20)))
  with gzip.open(tmp_path / 'a.en.gz', 'wt') as f:
    f.write(''.join(f'Cat {i}.\n' for i in range(15)))
  with gzip.open(tmp_path / 'a.fr.gz', 'wt') as f:
    f.write(''.join(f'Chat {i}.\n' for i in range(15)))
  spec = f'{tsv},{tmp_path}/a.en.gz|{tmp_path}/a.fr.gz'
  result = beam_bitext.prepare_bitext(spec, str(tmp_path / 'out' / 'bt'),
                                      num_shards=3, seed=2,
                                      pipeline_args=IN_PROCESS)
  expected = collections.Counter(bitext.read_bitext(spec))
  read_back = bitext.read_bitext(str(tmp_path / 'out' / 'bt.tfrecord-*'))
  assert collections.Counter(read_back) == expected
  assert result.pairs == len(read_back) == 35
  assert read_back != bitext.read_bitext(spec)  # shuffled
  again = beam_bitext.prepare_bitext(spec, str(tmp_path / 'again' / 'bt'),
                                     num_shards=3, seed=2,
                                     pipeline_args=IN_PROCESS)
  assert [open(p, 'rb').read() for p in result.shard_paths] == [
      open(p, 'rb').read() for p in again.shard_paths]
  assert (tmp_path / 'out' / 'bt.bitext.json').exists()


def test_bad_rows_and_files_are_skipped_and_counted(tmp_path):
  (tmp_path / 'ok.tsv').write_bytes(
      b'One.\tEins.\n'
      b'no tab on this line\n'
      b'\tempty source\n'
      b'caf\xe9\tLatin-1\n'
      b'Two.\tZwei.\n')
  (tmp_path / 'binary.tsv').write_bytes(b'a\tb\n\x00\x00\x00')
  (tmp_path / 'x.en').write_text('A.\nB.\nC.\n')
  (tmp_path / 'x.de').write_text('A.\nB.\n')
  spec = (f'en-de={tmp_path}/ok.tsv,en-de={tmp_path}/binary.tsv,'
          f'en-de={tmp_path}/x.en|{tmp_path}/x.de')
  result = beam_bitext.prepare_bitext(spec, str(tmp_path / 'out' / 'bt'),
                                      num_shards=2, pipeline_args=IN_PROCESS)
  counts = result.counts
  assert [counts.get(name, 'en-de') for name in (
      'rows_malformed', 'rows_empty_side', 'lines_not_utf8', 'files_binary',
      'files_misaligned', 'pairs')] == [1, 1, 1, 1, 1, 2]
  assert sorted(bitext.read_bitext(str(tmp_path / 'out' / 'bt.tfrecord-*'))
                ) == [('One.', 'Eins.'), ('Two.', 'Zwei.')]
  assert result.pairs_by_language == {'en-de': 2}


def test_no_pair_is_an_error_and_writes_nothing(tmp_path):
  (tmp_path / 'bad.tsv').write_text('no tab\n')
  with pytest.raises(bitext.BitextError, match='gave no translation pair'):
    beam_bitext.prepare_bitext(str(tmp_path / 'bad.tsv'),
                               str(tmp_path / 'out' / 'bt'),
                               pipeline_args=IN_PROCESS)
  assert not (tmp_path / 'out').exists()  # nor the directory made for it
  with pytest.raises(bitext.BitextError, match='No bitext file matches'):
    beam_bitext.prepare_bitext(str(tmp_path / '*.nothing'),
                               str(tmp_path / 'out' / 'bt'))
