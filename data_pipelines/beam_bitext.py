"""Translation pairs to shuffled, sharded records on Apache Beam:
`python -m cmlm prepare --data=bitext`.

The input is what `bitext` reads (TSV files with the pair in the last two
columns, or `source|target` line-aligned files; `.gz` allowed), each part
optionally keyed by its language pair (`en-de=...`), local or on any file
system Beam knows. Every row becomes a `tf.train.Example` with `source`
and `target` (and `language` when keyed), dealt to seeded shards as
`beam_shards` does; `{prefix}.bitext.json` is written last. Bitext
retrieval (section 4.2), InfoXLM's TLM and XLCo and the unknown-token check
read the shards wherever they read bitext (`bitext.iter_bitext`).

Nothing in the input stops the job: binary and unreadable files, aligned
files whose line counts differ, lines that are not UTF-8, rows with fewer
than two columns or an empty side are skipped and counted (a
`beam_text.Tally` per source, summed with the shards; Beam metrics too;
the table at the end). The job runs on every runner `beam_runners` knows,
Dask's included.
"""
import json
import os
import re
import sys
import time
from typing import Dict, Iterator, List, Sequence, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
import tensorflow as tf

from cmlm.data_pipelines import beam_runners
from cmlm.data_pipelines import beam_shards
from cmlm.data_pipelines import beam_text
from cmlm.data_pipelines import bitext
from cmlm.data_pipelines import pair_tfrecords
from cmlm.data_pipelines import text_lines

REPORT_ROWS = (
    ('files_read', 'files read'),
    ('files_binary', 'files skipped: binary (a NUL byte)'),
    ('files_unreadable', 'files skipped or cut short: unreadable'),
    ('files_misaligned', 'aligned file pairs skipped: line counts differ'),
    ('lines_not_utf8', 'lines skipped: not UTF-8'),
    ('rows_malformed', 'rows skipped: fewer than two columns'),
    ('rows_empty_side', 'rows skipped: an empty side'),
    ('pairs', 'pairs'),
)
_KEY = re.compile(r'^[A-Za-z0-9_-]+$')
_SNIFF_BYTES = 8192

# (language pair, 'tsv' or 'aligned', paths)
BitextSource = Tuple[str, str, Tuple[str, ...]]


def manifest_path(output_prefix: str) -> str:
  return f'{output_prefix}.bitext.json'


def _expand(path: str) -> List[str]:
  if '://' in path:
    matches = FileSystems.match([path])[0].metadata_list
    files = sorted(metadata.path for metadata in matches)
  else:
    files = bitext.expand_files(path)
  if not files:
    raise bitext.BitextError(f'No bitext file matches {path!r}.')
  return files


def expand_bitext_spec(spec: str) -> List[BitextSource]:
  """The sources of a bitext spec, each optionally `KEY=` keyed."""
  parts = [part.strip() for part in str(spec or '').split(',') if part.strip()]
  if not parts:
    raise bitext.BitextError('The bitext input is empty; give TSV files or '
                             'source|target pairs.')
  sources = []
  for part in parts:
    key, path = '', part
    head = part.split('://')[0].split('|')[0]
    if '=' in head:
      key, path = part.split('=', 1)
      if not _KEY.match(key):
        raise bitext.BitextError(f'The key {key!r} of {part!r} is not a name '
                                 'of letters, digits, - or _ (e.g. en-de).')
    if '|' in path:
      source, target = (side.strip() for side in path.split('|', 1))
      sources.append((key, 'aligned', (_expand(source)[0],
                                       _expand(target)[0])))
    else:
      sources.extend((key, 'tsv', (file,)) for file in _expand(path))
  return sources


class _Binary(Exception):
  """A file whose first 8 KiB hold a NUL byte."""


def _lines(f, key: str, tally: beam_text.Tally) -> Iterator[str]:
  """The lines of an open file, streamed; None for a line that is not UTF-8
  (counted). Raises _Binary for a binary file."""
  head = f.read(_SNIFF_BYTES)
  if b'\x00' in head:
    raise _Binary()
  for raw in text_lines.iter_lines(beam_text.Prefixed(head, f)):
    try:
      yield raw.decode('utf-8')
    except UnicodeDecodeError:
      tally.add('lines_not_utf8', key)
      yield None


def _checked(key, source, target, tally: beam_text.Tally):
  if source is None or target is None:
    return
  if not source.strip() or not target.strip():
    tally.add('rows_empty_side', key)
    return
  tally.add('pairs', key)
  yield key, source, target


def read_bitext(element: BitextSource):
  """(key, layout, paths) -> (key, source, target) rows, then the source's
  `beam_text.Tally` (what was read, skipped and why)."""
  tally = beam_text.Tally()
  yield from _rows(element, tally)
  yield tally


def _rows(element: BitextSource, tally: beam_text.Tally
          ) -> Iterator[Tuple[str, str, str]]:
  """A TSV file is streamed (its rows before a read error are kept); the
  two files of an aligned pair are read whole first, as their line counts
  must agree before any of their rows is kept."""
  key, layout, paths = element
  try:
    if layout == 'aligned':
      sides = []
      for path in paths:
        with beam_text.open_file(path) as f:
          sides.append(list(_lines(f, key, tally)))
      tally.add('files_read', key, 2)
      if len(sides[0]) != len(sides[1]):
        tally.add('files_misaligned', key)
        return
      for source, target in zip(*sides):
        yield from _checked(key, source, target, tally)
      return
    with beam_text.open_file(paths[0]) as f:
      for line in _lines(f, key, tally):
        if line is None:
          continue
        columns = line.split('\t')
        if len(columns) < 2:
          tally.add('rows_malformed', key)
          continue
        yield from _checked(key, columns[-2], columns[-1], tally)
    tally.add('files_read', key)
  except _Binary:
    tally.add('files_binary', key)
  except Exception as error:  # pylint: disable=broad-except
    tally.add('files_unreadable', key)
    print(f'prepare: skipped the rest of {"|".join(paths)}: '
          f'{type(error).__name__}: {error}', file=sys.stderr, flush=True)


def _record(pair: Tuple[str, str, str]) -> beam_shards.LanguageRecord:
  key, source, target = pair
  texts = {'source': source, 'target': target}
  if key:
    texts['language'] = key
  return key, pair_tfrecords.text_example(**texts)


BitextResult = beam_shards.JobResult


def prepare_bitext(input_spec: str, output_prefix: str, num_shards: int = 16,
                   seed: int = 0, pipeline_args: Sequence[str] = (),
                   overwrite: bool = False, stream=None) -> BitextResult:
  """Runs the job; publishes `{output_prefix}.tfrecord-*` and the manifest.

  Raises:
    ValueError (`bitext.BitextError`): a bad setting or input, before the
      job, or a job that found no pair (nothing is published).
    FileExistsError: the output exists and `overwrite` is False.
    beam_runners.JobFailed: the cluster lost the job (nothing is published).
  """
  stream = stream or sys.stderr
  if num_shards < 1:
    raise ValueError(f'num_shards={num_shards} must be 1 or more.')
  sources = expand_bitext_spec(input_spec)
  names = [os.path.basename(path) for path in
           pair_tfrecords.shard_paths(output_prefix, num_shards)]
  manifest = manifest_path(output_prefix)
  old_outputs = beam_shards.existing_outputs(
      [manifest], f'{output_prefix}.tfrecord-*')
  if old_outputs and not overwrite:
    raise FileExistsError(f'{old_outputs[0]} exists; pass --overwrite to '
                          f'replace the output {output_prefix}.')
  pipeline = beam_runners.new_pipeline(pipeline_args, len(sources))
  print(f'prepare: {len(sources)} bitext sources -> {output_prefix}'
        f'.tfrecord-*-of-{num_shards:05d} (seed {seed})', file=stream,
        flush=True)
  start = time.perf_counter()
  with beam_shards.temporary_output(output_prefix) as directory:
    read = (pipeline
            | 'Sources' >> beam.Create(sources)
            | 'Reshuffle' >> beam.Reshuffle()
            | 'ReadBitext' >> beam.FlatMap(read_bitext))
    rows, tallies = beam_text.split_tallies(read)
    _ = ((rows | 'Records' >> beam.Map(_record), tallies)
         | 'WriteShards' >> beam_shards.WriteSeededShards(directory, names,
                                                          seed))
    beam_runners.run_to_end(pipeline)
    counts = beam_shards.read_counts(directory, names)
    pairs_by_language = dict(counts.by_name.get('records', {}))
    if not sum(pairs_by_language.values()):
      raise bitext.BitextError(
          f'The bitext {input_spec!r} gave no translation pair; nothing was '
          f'written.\n{beam_text.report_table(counts, REPORT_ROWS)}')

    def write_manifest():
      with tf.io.gfile.GFile(manifest, 'w') as f:
        json.dump({
            'pairs': sum(pairs_by_language.values()),
            'languages': pairs_by_language, 'seed': seed,
            'num_shards': num_shards, 'writer': 'beam'}, f, sort_keys=True)
    shard_paths = beam_shards.publish(directory, names, output_prefix,
                                      old_outputs, manifest, write_manifest)
  return BitextResult(shard_paths, manifest, pairs_by_language, counts,
                      time.perf_counter() - start)
