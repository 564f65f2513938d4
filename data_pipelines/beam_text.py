"""Text corpora read by Apache Beam, bad input skipped and counted.

The Beam pipelines (`beam_pairs`, the bitext records, MiSAD's n-grams) read
their text here. An input spec is a comma-separated list of parts, each
optionally keyed by a language, `en=/data/cc/en/*.txt.gz,de=gs://b/de/*`: a
file, a local directory (its `*.txt` and `*.txt.gz`, as `corpus` expands
it) or a glob, local or on any file system Beam knows (`gs://` needs
`apache-beam[gcp]`). Files are listed when the pipeline is built, so a
path that matches nothing fails at once, with one sentence.

A file is read as `corpus` reads it (blank lines separate documents, `.gz`
through gzip, LF/CRLF/CR line ends), but nothing in it stops the job:

  * a file whose first 8 KiB hold a NUL byte is binary: skipped;
  * a file that cannot be opened or read to its end (a truncated gzip) is
    counted as unreadable; its paragraphs before the error are kept as
    documents, the one being read is dropped (with `document_unit='file'`
    the whole file is);
  * a line that is not UTF-8 (mixed encodings) is skipped, as
    `skip_invalid_lines` does;
  * a file with no text is counted as empty.

Every count is a Beam metric (namespace `cmlm`, `NAME/LANGUAGE`), so the
runner's UI shows them while the job runs; `report_table` prints them at
the end.
"""
import contextlib
import dataclasses
import gzip
import logging
import os
import re
import signal
import sys
import threading
import time
from typing import BinaryIO, Dict, Iterator, List, Tuple

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter

from cmlm.data_pipelines import corpus
from cmlm.data_pipelines import sentence_splitter

METRICS_NAMESPACE = 'cmlm'
DOCUMENT_UNITS = ('paragraph', 'file')
# Read before a file is decoded, to tell binary files (a NUL byte) apart.
_SNIFF_BYTES = 8192
_LANGUAGE = re.compile(r'^[A-Za-z0-9_-]+$')
# The rows of the report, in order: (metric name, what it counts).
REPORT_ROWS = (
    ('files_read', 'files read'),
    ('files_binary', 'files skipped: binary (a NUL byte)'),
    ('files_unreadable', 'files skipped or cut short: unreadable'),
    ('files_empty', 'files with no text'),
    ('lines_not_utf8', 'lines skipped: not UTF-8'),
    ('documents', 'documents with 2+ sentences'),
    ('documents_one_sentence', 'documents skipped: one sentence'),
    ('sentences', 'sentences'),
    ('pairs', 'pairs'),
)

LanguageFile = Tuple[str, str]  # (language, path); language '' when unkeyed


def count(name: str, language: str, value: int = 1) -> None:
  """Adds `value` to the Beam counter `name/language` (namespace `cmlm`)."""
  Metrics.counter(METRICS_NAMESPACE, f'{name}/{language}').inc(value)


def _is_remote(part: str) -> bool:
  return '://' in part


def expand_input_spec(spec: str) -> List[LanguageFile]:
  """The (language, file or remote glob) pairs of an input spec, in a
  deterministic order (`match_files` expands the remote globs).

  Raises:
    corpus.CorpusError: an empty spec, a path that matches no file, a bad
      language key, or keyed and unkeyed parts mixed.
  """
  parts = [part.strip() for part in str(spec or '').split(',') if part.strip()]
  if not parts:
    raise corpus.CorpusError('The input is empty; give a file, a directory, a '
                             'glob, or LANG=PATH parts, comma-separated.')
  keyed = ['=' in part.split('://')[0] for part in parts]
  if any(keyed) and not all(keyed):
    raise corpus.CorpusError(
        f'The input {spec!r} mixes LANG=PATH parts with unkeyed ones; key '
        'every part or none.')
  files = []
  for part in parts:
    language, path = part.split('=', 1) if any(keyed) else ('', part)
    language = language.strip()
    if any(keyed) and not _LANGUAGE.match(language):
      raise corpus.CorpusError(
          f'The language key {language!r} in {part!r} is not a name of '
          'letters, digits, - or _ (e.g. en, de, zh_Hant).')
    files.extend((language, match) for match in _expand_path(path.strip()))
  return list(dict.fromkeys(files))


def _expand_path(path: str) -> List[str]:
  """Local paths: their files, listed now. A remote glob stays a pattern
  (checked to match a file now): `match_files` lists it on a worker, as a
  bucket may hold millions of files, too many to put in the job."""
  if not _is_remote(path):
    return corpus.expand_path_spec(path)
  if not FileSystems.match([path], limits=[1])[0].metadata_list:
    raise corpus.CorpusError(f'The input {path!r} matches no files.')
  return [path]


def match_files(element: LanguageFile) -> Iterator[LanguageFile]:
  """(language, remote glob) -> (language, file) for each match, sorted;
  anything else passes as it is."""
  language, path = element
  if not (_is_remote(path) and corpus.has_glob_characters(path)):
    yield element
    return
  for match in sorted(metadata.path for metadata in
                      FileSystems.match([path])[0].metadata_list):
    yield language, match


@contextlib.contextmanager
def open_file(path: str) -> Iterator[BinaryIO]:
  """Opens a file of any Beam file system for reading; `.gz` through
  Python's gzip, which raises on a truncated file where Beam's own
  decompression would stop silently."""
  if not path.endswith('.gz'):
    with FileSystems.open(path) as f:
      yield f
    return
  with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED
                        ) as raw, gzip.GzipFile(fileobj=raw) as f:
    yield f


class Prefixed:
  """A binary reader that returns `head` before the rest of `f`."""

  def __init__(self, head: bytes, f):
    self._head, self._f = head, f

  def read(self, size: int = -1) -> bytes:
    if self._head:
      head, self._head = self._head, b''
      return head
    return self._f.read(size)


class ReadDocuments(beam.DoFn):
  """(language, path) -> (language, [paragraph, ...]) per document.

  `document_unit` 'paragraph': each blank-line separated paragraph is a
  document; 'file': the file's paragraphs together are one. `split` and
  `heldout_percent` keep the documents of `corpus`'s CRC32 split.
  """

  def __init__(self, document_unit: str = 'paragraph', split: str = 'all',
               heldout_percent: int = 0, progress_seconds: float = 30.0):
    if document_unit not in DOCUMENT_UNITS:
      raise ValueError(f'document_unit={document_unit!r} must be one of '
                       f'{", ".join(DOCUMENT_UNITS)}.')
    corpus.check_split(split, heldout_percent)
    self._unit = document_unit
    self._split, self._heldout = split, heldout_percent
    self._progress_seconds = progress_seconds

  def setup(self):
    self._files = self._documents = 0
    self._last_report = time.monotonic()

  def process(self, element: LanguageFile
              ) -> Iterator[Tuple[str, List[str]]]:
    language, path = element
    stats = corpus.CorpusStats()
    found, paragraphs = 0, []
    try:
      with open_file(path) as f:
        head = f.read(_SNIFF_BYTES)
        if b'\x00' in head:
          count('files_binary', language)
          return
        for paragraph in corpus.file_object_documents(
            Prefixed(head, f), path, stats, skip_invalid_lines=True):
          found += 1
          if self._unit == 'file':
            paragraphs.append(paragraph)
          else:
            yield from self._keep(language, [paragraph])
    except Exception as error:  # pylint: disable=broad-except
      # One bad file must not fail a job over millions: counted and logged.
      count('files_unreadable', language)
      print(f'prepare: skipped the rest of {path}: '
            f'{type(error).__name__}: {error}', file=sys.stderr, flush=True)
      return
    finally:
      count('lines_not_utf8', language, stats.skipped_invalid_lines)
    count('files_read', language)
    if not found:
      count('files_empty', language)
    if self._unit == 'file':
      yield from self._keep(language, paragraphs)
    self._report_progress()

  def _keep(self, language, paragraphs):
    if not paragraphs:
      return
    if self._split != 'all' and corpus.document_split(
        ' '.join(paragraphs), self._heldout) != self._split:
      return
    self._documents += 1
    yield language, paragraphs

  def _report_progress(self):
    self._files += 1
    now = time.monotonic()
    if now - self._last_report >= self._progress_seconds:
      self._last_report = now
      print(f'prepare: a worker has read {self._files} files, '
            f'{self._documents} documents', file=sys.stderr, flush=True)


def split_sentences(element: Tuple[str, List[str]]
                    ) -> Iterator[Tuple[str, List[str]]]:
  """(language, paragraphs) -> (language, sentences); a document of one
  sentence gives no pair: counted and dropped, as `corpus` does."""
  language, paragraphs = element
  sentences = [sentence for paragraph in paragraphs
               for sentence in sentence_splitter.split_sentences(paragraph)]
  if len(sentences) < 2:
    count('documents_one_sentence', language)
    return
  count('documents', language)
  count('sentences', language, len(sentences))
  yield language, sentences


@dataclasses.dataclass
class Counts:
  """The job's counters by metric name and language."""
  by_name: Dict[str, Dict[str, int]] = dataclasses.field(default_factory=dict)

  def get(self, name: str, language: str = None) -> int:
    values = self.by_name.get(name, {})
    return values.get(language, 0) if language is not None else sum(
        values.values())

  @property
  def languages(self) -> List[str]:
    return sorted({language for values in self.by_name.values()
                   for language in values})


def run_to_end(pipeline: beam.Pipeline) -> beam.runners.runner.PipelineResult:
  """Runs `pipeline` and waits for it to finish.

  A stop signal (Ctrl-C, SIGTERM) while the job runs first ends this
  process's worker processes (the DirectRunner's `multi_processing` mode),
  then goes on as the signal's own handler says (`python -m cmlm`: one line,
  exit 130 or 143). Without that, Beam's cleanup waits for every worker to
  finish its bundle and the stop never comes. Workers are found in /proc
  (Linux); elsewhere, and on a cluster runner, the signal acts alone.
  """
  if threading.current_thread() is not threading.main_thread():
    result = pipeline.run()
    result.wait_until_finish()
    return result
  stopping = []

  def end_workers_then(previous):
    def handle(signum, frame):
      stopping.append(signum)
      _terminate_descendants()
      if callable(previous):
        previous(signum, frame)
      elif previous != signal.SIG_IGN:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    return handle

  def quiet_ended_workers(args):
    # A worker ended here makes Beam's thread that watched it raise; the
    # stop is ours, not its error.
    if not (stopping and args.thread is not None
            and args.thread.name == 'run_worker'):
      previous_hook(args)

  previous_hook = threading.excepthook
  threading.excepthook = quiet_ended_workers
  previous = {number: signal.getsignal(number)
              for number in (signal.SIGINT, signal.SIGTERM)}
  for number, handler in previous.items():
    signal.signal(number, end_workers_then(handler))
  # Beam logs the traceback of a step's error before it raises the error
  # itself (the command says it in one line; CMLM_DEBUG=1 shows the rest).
  beam_logger = logging.getLogger('apache_beam')
  beam_level = beam_logger.level
  beam_logger.setLevel(max(beam_level, logging.CRITICAL))
  try:
    result = pipeline.run()
    result.wait_until_finish()
    return result
  finally:
    beam_logger.setLevel(beam_level)
    for number, handler in previous.items():
      signal.signal(number, handler)
    if not stopping:
      threading.excepthook = previous_hook


def _terminate_descendants() -> None:
  """SIGKILL to every process under this one, deepest first (/proc)."""
  try:
    entries = [entry for entry in os.listdir('/proc') if entry.isdigit()]
  except OSError:
    return
  children = {}
  for entry in entries:
    try:
      with open(f'/proc/{entry}/stat', encoding='utf-8') as f:
        parent = int(f.read().rsplit(')', 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
      continue
    children.setdefault(parent, []).append(int(entry))
  order, pending = [], [os.getpid()]
  while pending:
    for child in children.get(pending.pop(), []):
      order.append(child)
      pending.append(child)
  for pid in reversed(order):
    try:
      os.kill(pid, signal.SIGKILL)
    except OSError:
      pass


def query_counts(result: beam.runners.runner.PipelineResult) -> Counts:
  """The `cmlm` counters of a finished job (committed values where the
  runner has them, else attempted)."""
  counts = Counts()
  query = result.metrics().query(MetricsFilter().with_namespace(
      METRICS_NAMESPACE))
  for counter in query['counters']:
    name, _, language = counter.key.metric.name.partition('/')
    value = counter.committed
    if value is None:
      value = counter.attempted
    by_language = counts.by_name.setdefault(name, {})
    by_language[language] = by_language.get(language, 0) + (value or 0)
  return counts


def report_table(counts: Counts, rows=REPORT_ROWS) -> str:
  """One Markdown table: a row per counter, a column per language."""
  languages = counts.languages
  keyed = languages != ['']
  header = ['', *(languages if keyed else []), 'total']
  lines = ['| ' + ' | '.join(header) + ' |',
           '|' + '---|' * len(header)]
  for name, label in rows:
    cells = [str(counts.get(name, language)) for language in languages
             ] if keyed else []
    lines.append('| ' + ' | '.join([label, *cells, str(counts.get(name))])
                 + ' |')
  return '\n'.join(lines)
