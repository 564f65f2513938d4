"""Reads a text corpus into documents and consecutive sentence pairs.

CMLM (Yang et al., 2021, section 2) learns from ordered pairs (s1, s2) of
adjacent sentences. This module turns plain text into those pairs:

  path spec -> files -> documents (blank-line separated) -> sentences -> pairs

A path spec is a file, a directory (every `*.txt` and `*.txt.gz` under it,
recursively, in sorted order; `.gz` files are read through gzip), a glob, or a comma-separated list of those. Within a file,
blank lines separate documents and the end of a file ends a document; the
lines of a document are joined with spaces (hard-wrapped prose) and then cut
into sentences by `sentence_splitter.split_sentences`. Pairs never cross a
document boundary. Documents with fewer than two sentences give no pair; they
are skipped and counted in `CorpusStats`.

A document goes to the 'heldout' split when the CRC32 of its text modulo 100
is below `heldout_percent`, else to 'train'; 'all' keeps every document. The
split is deterministic and does not depend on file order.
"""
import dataclasses
import glob
import gzip
import os
import zlib
from typing import BinaryIO, Dict, Iterable, Iterator, List, Optional
from typing import Sequence, Tuple

from cmlm.data_pipelines import sentence_splitter
from cmlm.data_pipelines import text_lines

SPLITS = ('all', 'train', 'heldout')
# Metadata files that a directory of corpus files may carry beside the text.
METADATA_FILE_NAMES = frozenset(['SOURCE.txt', 'LICENSE.txt', 'README.txt'])
# The files of a directory that hold text (`.gz` ones are read through gzip).
TEXT_FILE_SUFFIXES = ('.txt', '.txt.gz')


class CorpusError(ValueError):
  """A corpus path, file or its content is not usable."""


@dataclasses.dataclass
class CorpusStats:
  """What reading a corpus produced, for logs and reports."""
  files: int = 0
  documents: int = 0
  skipped_single_sentence_documents: int = 0
  sentences: int = 0
  pairs: int = 0
  skipped_invalid_lines: int = 0  # not UTF-8, with skip_invalid_lines

  def __str__(self):
    invalid = (f', {self.skipped_invalid_lines} lines that are not UTF-8 '
               'skipped' if self.skipped_invalid_lines else '')
    return (f'{self.files} files, {self.documents} documents with 2+ '
            f'sentences ({self.skipped_single_sentence_documents} '
            f'single-sentence documents skipped), {self.sentences} sentences, '
            f'{self.pairs} pairs{invalid}')


def has_glob_characters(part: str) -> bool:
  return any(char in part for char in '*?[')


def _text_files_under(directory: str) -> List[str]:
  found = []
  for root, _, names in os.walk(directory):
    found.extend(os.path.join(root, name) for name in names
                 if name.endswith(TEXT_FILE_SUFFIXES)
                 and name not in METADATA_FILE_NAMES)
  return sorted(found)


def parse_language_corpora(spec: str) -> Dict[str, str]:
  """A multilingual `--input`, 'en=path,de=path2' -> {'en': 'path',
  'de': 'path2'} (a language named twice: its paths joined by commas, a
  path spec of `expand_path_spec`); ValueError, one sentence, for a part
  that is not LANGUAGE=PATH."""
  languages = {}
  for lang, path in _language_parts(
      spec, "PATH", "a multilingual --input reads "
      "'en=corpus_en/,de=corpus_de.txt'"):
    languages.setdefault(lang, []).append(path)
  return {lang: ",".join(paths) for lang, paths in languages.items()}


def parse_language_files(spec: str) -> Dict[str, str]:
  """An `--input` of one file a language (pcr's), 'en=a.txt,de=b.txt' ->
  {'en': 'a.txt', 'de': 'b.txt'}; ValueError, one sentence, for a part that
  is not LANGUAGE=FILE and for a language named twice.

  Examples:
    >>> parse_language_files("en=a.txt,en=b.txt")
    Traceback (most recent call last):
    ...
    ValueError: --input names the language en twice (a.txt, b.txt); --input takes one file a language, e.g. --input=en=sample_en.txt,de=sample_de.txt.
  """
  files = {}
  for lang, path in _language_parts(spec, "FILE", _ONE_FILE_A_LANGUAGE):
    if lang in files:
      raise ValueError(f"--input names the language {lang} twice "
                       f"({files[lang]}, {path}); {_ONE_FILE_A_LANGUAGE}.")
    files[lang] = path
  return files


# How an --input of one file a language reads, as its errors say it.
_ONE_FILE_A_LANGUAGE = ("--input takes one file a language, e.g. "
                        "--input=en=sample_en.txt,de=sample_de.txt")


def _language_parts(spec: str, what: str, form: str
                    ) -> Iterator[Tuple[str, str]]:
  """(language, path) of each part of 'en=path,de=path2'; ValueError, one
  sentence ending with `form`, for a part that is not LANGUAGE=`what`."""
  for part in (p.strip() for p in spec.split(",") if p.strip()):
    lang, sep, path = part.partition("=")
    if not sep or not lang or not path:
      raise ValueError(f"{part!r} is not LANGUAGE={what}; {form}.")
    yield lang, path


def check_path_spec(path_spec: str) -> None:
  """A corpus `--input` checked before any is read (and before TensorFlow
  loads): a path spec, or a multilingual `LANG=PATH,...` one, whose every
  path, glob and directory gives files (`expand_path_spec`'s CorpusError,
  or ValueError for a part that is not LANG=PATH). A remote spec
  (`gs://...`) is left to its reader."""
  if "://" in str(path_spec):
    return
  specs = (parse_language_corpora(path_spec).values() if "=" in path_spec
           else [path_spec])
  for spec in specs:
    expand_path_spec(spec)


def expand_path_spec(path_spec: str) -> List[str]:
  """Expands a path spec into a list of files, in a deterministic order."""
  parts = [part.strip() for part in str(path_spec).split(',') if part.strip()]
  if not parts:
    raise CorpusError('The corpus path is empty; give a file, a directory, '
                      'a glob or a comma-separated list of those.')
  files = []
  for part in parts:
    if has_glob_characters(part):
      matches = sorted(glob.glob(part, recursive=True))
      if not matches:
        raise CorpusError(f'The corpus glob {part!r} matches no files.')
    elif os.path.exists(part):
      matches = [part]
    else:
      raise CorpusError(f'The corpus path {part!r} does not exist.')
    for match in matches:
      if os.path.isdir(match):
        text_files = _text_files_under(match)
        if not text_files:
          raise CorpusError(f'The corpus directory {match!r} contains no '
                            '*.txt or *.txt.gz files.')
        files.extend(text_files)
      else:
        files.append(match)
  return list(dict.fromkeys(files))  # Drops repeats, keeps the order.


# How a reader's user turns `skip_invalid_lines` on, as the error for a line
# that is not UTF-8 says it: a config key by default; a command passes its
# flag (`pass --skip_invalid_lines`).
HOW_TO_SKIP_INVALID_LINES = 'set skip_invalid_lines'


def _file_documents(path: str, stats: CorpusStats,
                    skip_invalid_lines: bool = False,
                    how_to_skip: str = HOW_TO_SKIP_INVALID_LINES
                    ) -> Iterator[str]:
  """Yields the blank-line separated documents of one UTF-8 text file
  (through gzip when its name ends in `.gz`; a truncated or damaged one is
  a `CorpusError` naming it)."""
  try:
    with (gzip.open if path.endswith('.gz') else open)(path, 'rb') as f:
      yield from file_object_documents(f, path, stats, skip_invalid_lines,
                                       how_to_skip)
  except (EOFError, gzip.BadGzipFile, zlib.error) as error:
    raise CorpusError(f'{path} is a truncated or damaged gzip file ({error}); '
                      'write it again, or leave it out of the input.'
                      ) from None


def file_object_documents(f: BinaryIO, path: str, stats: CorpusStats,
                          skip_invalid_lines: bool = False,
                          how_to_skip: str = HOW_TO_SKIP_INVALID_LINES
                          ) -> Iterator[str]:
  """Yields the blank-line separated documents of an open UTF-8 text file.

  LF, CRLF and CR end lines alike (`text_lines`). A line that is not UTF-8
  fails the file (`path` names it; the error suggests `how_to_skip`), or
  with `skip_invalid_lines` is skipped (it neither joins nor ends a
  document) and counted in `stats`. The Beam pipeline (`beam_text`) reads
  its files, local or not, through this.
  """
  lines = []
  for line_number, raw_line in enumerate(text_lines.iter_lines(f), start=1):
    try:
      line = raw_line.decode('utf-8-sig' if line_number == 1 else 'utf-8')
    except UnicodeDecodeError as e:
      if skip_invalid_lines:
        stats.skipped_invalid_lines += 1
        continue
      raise CorpusError(
          f'The corpus file {path!r} is not UTF-8 text (byte '
          f'{raw_line[e.start:e.start + 1]!r} on line {line_number}); '
          f'convert it to UTF-8, or {how_to_skip} to skip and count such '
          'lines.') from None
    if line.strip():
      lines.append(line)
    elif lines:
      yield sentence_splitter.normalize_whitespace(' '.join(lines))
      lines = []
  if lines:
    yield sentence_splitter.normalize_whitespace(' '.join(lines))


def read_documents(path_spec: str, split: str = 'all',
                   heldout_percent: int = 0,
                   stats: Optional[CorpusStats] = None,
                   skip_invalid_lines: bool = False,
                   how_to_skip: str = HOW_TO_SKIP_INVALID_LINES
                   ) -> Iterator[str]:
  """Yields the text of every document of `split` in the corpus `path_spec`.

  `skip_invalid_lines`: skip (and count in `stats`) lines that are not UTF-8
  instead of failing on them; `how_to_skip`: how the caller's user sets it,
  for the error on such a line (e.g. `pass --skip_invalid_lines`).

  Raises:
    CorpusError: a path does not exist, a file is not UTF-8 text, the corpus
      holds no text at all, or the split is not valid.
  """
  check_split(split, heldout_percent)
  stats = stats if stats is not None else CorpusStats()
  paths = expand_path_spec(path_spec)  # Fails here, not at the first read.

  def all_documents():
    found_text = False
    for path in paths:
      stats.files += 1
      for document in _file_documents(path, stats, skip_invalid_lines,
                                      how_to_skip):
        found_text = True
        yield document
    if not found_text:
      raise CorpusError(f'The corpus {path_spec!r} contains no text.')

  return select_split(all_documents(), split, heldout_percent)


def tfds_documents(name: str, split: str, text_feature: str,
                   data_dir: Optional[str] = None) -> Iterator[str]:
  """Yields one document per example of a TFDS dataset's text feature."""
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  dataset = tfds.load(name, split=split, data_dir=data_dir or None,
                      shuffle_files=False)
  if text_feature not in dataset.element_spec:
    raise CorpusError(
        f'The TFDS dataset {name!r} has no feature {text_feature!r}; its '
        f'features are {sorted(dataset.element_spec)}.')
  for example in tfds.as_numpy(dataset):
    yield sentence_splitter.normalize_whitespace(
        example[text_feature].decode('utf-8'))


def document_split(document: str, heldout_percent: int) -> str:
  """Returns 'heldout' or 'train' for a document, from the CRC32 of its text."""
  bucket = zlib.crc32(document.encode('utf-8')) % 100
  return 'heldout' if bucket < heldout_percent else 'train'


def check_split(split: str, heldout_percent: int) -> None:
  """Raises CorpusError for a split name or held-out percentage out of range."""
  if split not in SPLITS:
    raise CorpusError(f'The split {split!r} is not one of {SPLITS}.')
  if not 0 <= heldout_percent <= 100:
    raise CorpusError(f'heldout_percent={heldout_percent} is not a '
                      'percentage between 0 and 100.')


def select_split(documents: Iterable[str], split: str,
                 heldout_percent: int) -> Iterator[str]:
  """Keeps the documents of `split` ('all', 'train' or 'heldout')."""
  check_split(split, heldout_percent)
  for document in documents:
    if split == 'all' or document_split(document, heldout_percent) == split:
      yield document


def sentence_documents(documents: Iterable[str],
                       stats: Optional[CorpusStats] = None
                       ) -> Iterator[List[str]]:
  """Splits documents into sentences; skips and counts single-sentence ones."""
  stats = stats if stats is not None else CorpusStats()
  for document in documents:
    sentences = sentence_splitter.split_sentences(document)
    if len(sentences) < 2:
      stats.skipped_single_sentence_documents += 1
      continue
    stats.documents += 1
    stats.sentences += len(sentences)
    yield sentences


def sentence_pairs(documents: Iterable[Sequence[str]],
                   stats: Optional[CorpusStats] = None
                   ) -> Iterator[Tuple[str, str]]:
  """Yields consecutive (s1, s2) pairs within each document of sentences."""
  for sentences in documents:
    for s1, s2 in zip(sentences[:-1], sentences[1:]):
      if stats is not None:
        stats.pairs += 1
      yield s1, s2


def load_sentence_pairs(path_spec: str, split: str = 'all',
                        heldout_percent: int = 0
                        ) -> Tuple[List[Tuple[str, str]], CorpusStats]:
  """Reads every sentence pair of a text corpus into memory, with stats."""
  stats = CorpusStats()
  documents = sentence_documents(
      read_documents(path_spec, split, heldout_percent, stats), stats)
  return list(sentence_pairs(documents, stats)), stats
