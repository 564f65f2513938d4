"""Corpus reading: sentences, documents, pairs, held-out split, clear errors."""
import cmlm.data_pipelines  # noqa: F401  (selects Keras 2 before TensorFlow loads)

import re
import zlib

import pytest

from cmlm.data_pipelines import corpus
from cmlm.data_pipelines.sentence_splitter import split_sentences
from tests.data_pipelines import data_helpers as helpers

PROSE = """\
“My dear Mr. Bennet,” said his lady to him one day, “have you heard that
Netherfield Park is let at last?”

Mr. Bennet replied that he had not. Dr. J. K. Smith of St. Paul's,
e.g. on Sundays, called at 5 o'clock. The U.S. Army came. “Oh! single,
my dear, to be sure! A single man.” It was 1789. 14 states joined.
"""


def test_splitter_handles_wrapped_prose_abbreviations_and_quotes():
  assert split_sentences(PROSE) == [
      '“My dear Mr. Bennet,” said his lady to him one day, “have you heard '
      'that Netherfield Park is let at last?”',
      'Mr. Bennet replied that he had not.',
      "Dr. J. K. Smith of St. Paul's, e.g. on Sundays, called at 5 o'clock.",
      'The U.S. Army came.',
      '“Oh! single, my dear, to be sure!',
      'A single man.”',
      'It was 1789.',
      '14 states joined.',
  ]


def test_splitter_gives_same_sentences_for_one_sentence_per_line():
  sentences = split_sentences(PROSE)
  assert split_sentences('\n'.join(sentences)) == sentences
  assert split_sentences('  \n ') == []


def test_documents_pairs_and_skipped_single_sentence_documents(tmp_path):
  (tmp_path / 'a.txt').write_text(
      'One here. Two\nhere.\n\nAlone in its document.\n\n'
      'Three here. Four here. Five here.\n\nSix here. Seven here', 'utf-8')
  (tmp_path / 'b.txt').write_text('Eight here. Nine here.\n', 'utf-8')
  pairs, stats = corpus.load_sentence_pairs(str(tmp_path))
  assert pairs == [
      ('One here.', 'Two here.'),
      ('Three here.', 'Four here.'), ('Four here.', 'Five here.'),
      ('Six here.', 'Seven here'),  # The file's end ends the document...
      ('Eight here.', 'Nine here.'),  # ...so no ('Seven here', 'Eight here.').
  ]
  assert stats == corpus.CorpusStats(
      files=2, documents=4, skipped_single_sentence_documents=1,
      sentences=9, pairs=5)
  assert '1 single-sentence documents skipped' in str(stats)


def test_path_spec_accepts_globs_and_comma_lists(tmp_path):
  helpers.write_numbered_corpus(tmp_path / 'x', 4, num_files=2)
  (tmp_path / 'x' / 'SOURCE.txt').write_text('Not corpus text. Skipped.')
  single = str(tmp_path / 'x' / 'part00.txt')
  assert corpus.expand_path_spec(str(tmp_path / 'x')) == [
      single, str(tmp_path / 'x' / 'part01.txt')]
  assert corpus.expand_path_spec(str(tmp_path / 'x' / '*01.txt') + ', ' +
                                 single) == [
                                     str(tmp_path / 'x' / 'part01.txt'), single]


def test_heldout_split_is_by_document_crc32(tmp_path):
  path = helpers.write_numbered_corpus(tmp_path / 'c', 200, num_sentences=2)
  split = {name: list(corpus.read_documents(path, name, heldout_percent=30))
           for name in corpus.SPLITS}
  assert sorted(split['train'] + split['heldout']) == sorted(split['all'])
  assert not set(split['train']) & set(split['heldout'])
  assert all(zlib.crc32(d.encode()) % 100 < 30 for d in split['heldout'])
  assert 0.15 < len(split['heldout']) / 200 < 0.45


@pytest.mark.parametrize('spec, message', [
    ('{tmp}/nowhere.txt', "corpus path '{tmp}/nowhere.txt' does not exist"),
    ('{tmp}/*.none', "glob '{tmp}/*.none' matches no files"),
    ('', 'corpus path is empty'),
])
def test_missing_paths_are_clear_errors(tmp_path, spec, message):
  with pytest.raises(corpus.CorpusError, match=re.escape(message.format(tmp=tmp_path))):
    list(corpus.read_documents(spec.format(tmp=tmp_path)))
  assert issubclass(corpus.CorpusError, ValueError)


def test_empty_corpus_is_a_clear_error(tmp_path):
  (tmp_path / 'blank.txt').write_text('\n   \n\n')
  with pytest.raises(corpus.CorpusError, match='contains no text'):
    list(corpus.read_documents(str(tmp_path)))
  (tmp_path / 'sub').mkdir()
  with pytest.raises(corpus.CorpusError, match='contains no \\*.txt or'):
    corpus.expand_path_spec(str(tmp_path / 'sub'))


def test_non_utf8_file_is_a_clear_error_naming_file_and_line(tmp_path):
  bad = tmp_path / 'latin1.txt'
  bad.write_bytes(b'Fine first line.\n\xff\xfe caf\xe9 here.\n')
  with pytest.raises(corpus.CorpusError) as error:
    list(corpus.read_documents(str(bad)))
  assert str(error.value).startswith(f"The corpus file '{bad}' is not UTF-8 "
                                     'text')
  assert 'line 2' in str(error.value)


def test_bad_split_is_a_clear_error(tmp_path):
  with pytest.raises(corpus.CorpusError, match="split 'test' is not one of"):
    corpus.read_documents(str(tmp_path), split='test')


def test_gzipped_text_reads_like_plain_text(tmp_path):
  import gzip  # pylint: disable=g-import-not-at-top
  text = 'One sentence here. And a second one.\n\nA new document. It ends.\n'
  (tmp_path / 'plain').mkdir()
  (tmp_path / 'zipped').mkdir()
  (tmp_path / 'plain' / 'a.txt').write_text(text)
  with gzip.open(tmp_path / 'zipped' / 'a.txt.gz', 'wt') as f:
    f.write(text)
  plain = list(corpus.read_documents(str(tmp_path / 'plain')))
  assert list(corpus.read_documents(str(tmp_path / 'zipped'))) == plain
  assert len(plain) == 2
