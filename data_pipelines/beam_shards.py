"""Shuffled, sharded output of the Beam pipelines, published whole or not at
all.

`WriteSeededShards` deals serialized records to shards exactly as
`pair_tfrecords.seeded_shards` does (a keyed BLAKE2b of each record's bytes:
shard = key mod count, key order inside a shard), so the output depends only
on the records and the seed: the same bytes from any runner, any number of
workers, any order of processing, and from the one-process writer. Each
shard is written by one worker, which sorts it in memory: choose the shard
count so that a shard stays well under a worker's memory (~1 GB).

Beside the shards, `WriteSeededShards` adds up the records each shard got
per language and the `beam_text.Tally` elements it is given (the reading's
counts) into `summary.json`, one combine without side inputs (which the
DaskRunner does not evaluate in place); `read_summary` reads them back.
A shard that a retried task writes again is rewritten whole, to the same
bytes, and the summary counts each shard once.

Shards are written under a temporary directory beside the output
(`.tmp-<host>-<pid>-{name}/`, `atomic_file.temporary_path`; a killed job's
is removed, with a line, when the next job for that output starts);
`publish` renames them to their final names once the job has succeeded
and writes the manifest last. `temporary_output`
removes the temporary directory on any exit, so a failed, killed or
interrupted job leaves no half-written output behind.
"""
import contextlib
import dataclasses
import json
import os
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Tuple

import apache_beam as beam
import tensorflow as tf

from cmlm.data_pipelines import atomic_file
from cmlm.data_pipelines import beam_text
from cmlm.data_pipelines import pair_tfrecords


@dataclasses.dataclass
class JobResult:
  """A finished job of `prepare` (pairs or bitext): its files, its counters
  (`beam_text.Counts`) and how long it took."""
  shard_paths: List[str]
  manifest_path: str
  pairs_by_language: Dict[str, int]
  counts: Dict
  seconds: float

  @property
  def pairs(self) -> int:
    return sum(self.pairs_by_language.values())


SUMMARY_NAME = 'summary.json'
# A record and the language it counts for in the shard summaries.
LanguageRecord = Tuple[str, bytes]


def write_tfrecord_shard(path: str, records: List[bytes]) -> None:
  with tf.io.TFRecordWriter(path) as writer:
    for record in records:
      writer.write(record)


def write_text_shard(path: str, records: List[bytes]) -> None:
  """Text blocks (each ending in a newline), a blank line between blocks."""
  with tf.io.gfile.GFile(path, 'wb') as f:
    f.write(b'\n'.join(records))


class _WriteShard(beam.DoFn):
  """(shard index, records) -> the shard file; yields a `Tally` of its
  records by language (`records/LANGUAGE`)."""

  def __init__(self, directory: str, names: List[str], seed: int,
               write: Callable[[str, List[bytes]], None]):
    self._directory, self._names = directory, names
    self._seed, self._write = seed, write

  def process(self, element) -> Iterator[Dict[str, int]]:  # a Tally
    index, values = element
    keyed = sorted((pair_tfrecords.record_order_key(record, self._seed),
                    record, language)
                   for language, record in (v for v in values if v is not None))
    self._write(os.path.join(self._directory, self._names[index]),
                [record for _, record, _ in keyed])
    by_language = {}
    for _, _, language in keyed:
      by_language[language] = by_language.get(language, 0) + 1
    tally = beam_text.Tally()
    for language, records in sorted(by_language.items()):
      tally.add('records', language, records)
    yield tally


def _merge_counts(tallies: Iterable[Dict[str, int]]) -> Dict[str, int]:
  merged = {}
  for tally in tallies:
    for key, value in tally.items():
      merged[key] = merged.get(key, 0) + value
  return merged


def _write_summary(counts: Dict[str, int], directory: str) -> None:
  with tf.io.gfile.GFile(os.path.join(directory, SUMMARY_NAME), 'w') as f:
    json.dump(counts, f, sort_keys=True)


class WriteSeededShards(beam.PTransform):
  """(language, serialized record) -> `names` shard files in `directory`.

  Applied to the records, or to (records, tallies): the `beam_text.Tally`
  elements of the job's reading, added to the summary. Every shard is
  written, empty ones too; `directory/summary.json` holds the records
  written per language (`records/LANGUAGE`) and the tallies' sums once
  every shard is complete. Its last step is the job's last: the DaskRunner
  computes only the last transform applied and what it reads.
  """

  def __init__(self, directory: str, names: List[str], seed: int,
               write: Callable[[str, List[bytes]], None] = write_tfrecord_shard):
    super().__init__()
    self._directory, self._names, self._seed = directory, names, seed
    self._write = write

  def expand(self, inputs):
    records, tallies = inputs if isinstance(inputs, tuple) else (inputs, None)
    seed, num_shards = self._seed, len(self._names)
    keyed = records | 'ShardOf' >> beam.Map(
        lambda item: (pair_tfrecords.record_order_key(item[1], seed)
                      % num_shards, item))
    # One element expanded, not a Create of every index: the DaskRunner
    # makes a partition of each of a Create's elements (up to its
    # partitions), and each partition is one more input to the shuffle.
    every_shard = (records.pipeline
                   | 'EveryShard' >> beam.Create([num_shards])
                   | 'ShardIndexes' >> beam.FlatMap(
                       lambda count: [(index, None) for index in range(count)]))
    written = ((keyed, every_shard)
               | 'WithEmptyShards' >> beam.Flatten()
               | 'GroupByShard' >> beam.GroupByKey()
               | 'WriteShard' >> beam.ParDo(_WriteShard(
                   self._directory, self._names, seed, self._write)))
    if tallies is not None:
      written = (written, tallies) | 'WithTallies' >> beam.Flatten()
    return (written
            | 'Total' >> beam.CombineGlobally(_merge_counts).without_defaults()
            | 'WriteSummary' >> beam.Map(_write_summary, self._directory))


@contextlib.contextmanager
def temporary_output(output_prefix: str) -> Iterator[str]:
  """A new temporary directory beside `output_prefix`, removed on any exit
  (a dot-directory: a glob of the output never matches it); the parent made
  for it is removed too when nothing was published there."""
  parent = os.path.dirname(output_prefix) or '.'
  made_parent = not tf.io.gfile.exists(parent)
  tf.io.gfile.makedirs(parent)
  # `.tmp-<host>-<pid>-<name>`: a killed job's is removed here, with a line
  # (on a local disk; a bucket's are left to its lifecycle rules).
  atomic_file.remove_stale_temporaries(output_prefix)
  directory = atomic_file.temporary_path(output_prefix)
  if '://' in output_prefix:  # a bucket's path, not the local disk's
    directory = os.path.join(parent, os.path.basename(directory))
  try:
    with atomic_file.in_progress(directory):
      tf.io.gfile.makedirs(directory)
      yield directory
  finally:
    if tf.io.gfile.exists(directory):
      tf.io.gfile.rmtree(directory)
    if made_parent and not tf.io.gfile.listdir(parent):
      tf.io.gfile.rmtree(parent)


def read_counts(directory: str, names: List[str]) -> beam_text.Counts:
  """The counts of a finished job: `records` by language and the tallies'
  sums; raises RuntimeError if a shard or the summary is missing (the job
  did not complete)."""
  missing = [name for name in names + [SUMMARY_NAME]
             if not tf.io.gfile.exists(os.path.join(directory, name))]
  if missing:
    raise RuntimeError(f'The job ended without writing {missing[:3]} in '
                       f'{directory}; nothing was published.')
  with tf.io.gfile.GFile(os.path.join(directory, SUMMARY_NAME)) as f:
    return beam_text.Counts.from_tally(json.load(f))


def read_summary(directory: str, names: List[str]) -> Dict[str, int]:
  """The records per language of a finished job (see `read_counts`)."""
  return dict(read_counts(directory, names).by_name.get('records', {}))


def existing_outputs(paths: List[str], glob_pattern: str) -> List[str]:
  """The files among `paths` and `glob_pattern`'s matches that exist."""
  found = [path for path in paths if tf.io.gfile.exists(path)]
  return sorted(set(found + tf.io.gfile.glob(glob_pattern)))


def publish(directory: str, names: List[str], output_prefix: str,
            old_outputs: List[str], manifest_path: str,
            write_manifest: Callable[[], None],
            final_names: Optional[List[str]] = None) -> List[str]:
  """Replaces `old_outputs` by the shards of `directory`, manifest last.

  The old manifest goes first, so a reader never sees a manifest beside
  shards it does not describe; if a rename fails, the shards already renamed
  are removed again. Returns the final shard paths.
  """
  parent = os.path.dirname(output_prefix) or '.'
  final_paths = [os.path.join(parent, name) for name in final_names or names]
  for path in sorted(old_outputs, key=lambda p: p != manifest_path):
    tf.io.gfile.remove(path)
  renamed = []
  try:
    for name, final_path in zip(names, final_paths):
      tf.io.gfile.rename(os.path.join(directory, name), final_path,
                         overwrite=True)
      renamed.append(final_path)
    write_manifest()
  except BaseException:
    for path in renamed:
      tf.io.gfile.remove(path)
    if tf.io.gfile.exists(manifest_path):
      tf.io.gfile.remove(manifest_path)
    raise
  return final_paths
