"""Sentence pairs (s1, s2) stored as TFRecord files, for corpora too large to
hold in memory.

The CMLM recipe (Yang et al., 2021, section 3) trains on billions of
consecutive-sentence pairs from Common Crawl; reading and splitting such text
in Python at every start is too slow, so `write_pair_tfrecords` does it once
and the input pipeline (`cmlm_dataloader`) streams the records. Each record is
a `tf.train.Example` with two bytes features, `s1` and `s2`, holding the raw
sentences; tokenization and masking stay in the pipeline so one file set
serves any vocabulary, sequence length or masking rate.

Pairs are built when written, with the same `pair_unit` as text sources
(`sequence_packing`): 'sequence' (the paper's consecutive spans of whole
sentences, packed to the run's `seq_length`; needs its tokenization) or
'sentence'. `{output_prefix}.pairs.json` records the unit and the token
budget, and the input pipeline refuses records built for another unit.

Shard names follow `{output_prefix}.tfrecord-{index:05d}-of-{count:05d}`.
Without a seed, pairs are dealt to the shards in corpus order. With `seed`,
each record's place comes from a keyed hash of its bytes (`record_order_key`):
the shard is the key modulo the shard count and a shard holds its records in
key order. That order depends on nothing but the records and the seed, so the
Beam pipeline (`beam_pairs`, any runner, any number of workers) and this
writer give byte-identical shards for the same corpus and seed.
"""
import hashlib
import json
import os
import uuid
from typing import Iterable, List, Optional, Sequence, Tuple

import tensorflow as tf

from cmlm.data_pipelines import corpus
from cmlm.data_pipelines import sequence_packing
from cmlm.data_pipelines import tokenization

PAIR_FEATURES = {
    's1': tf.io.FixedLenFeature([], tf.string),
    's2': tf.io.FixedLenFeature([], tf.string),
}


def is_pair_tfrecord_file(path: str) -> bool:
  """True for `*.tfrecord` and `*.tfrecord-*` file names."""
  name = os.path.basename(path)
  return name.endswith('.tfrecord') or '.tfrecord-' in name


def shard_paths(output_prefix: str, num_shards: int) -> List[str]:
  return [f'{output_prefix}.tfrecord-{index:05d}-of-{num_shards:05d}'
          for index in range(num_shards)]


def text_example(**texts: str) -> bytes:
  """A serialized `tf.train.Example` with one bytes feature per text.

  Serialized deterministically: `features` is a protobuf map, whose entries
  protobuf may otherwise write in an order that differs between processes
  (then a record's bytes, its `record_order_key` and its shard would depend
  on which Beam worker wrote it)."""
  return tf.train.Example(features=tf.train.Features(feature={
      name: tf.train.Feature(bytes_list=tf.train.BytesList(
          value=[text.encode('utf-8')])) for name, text in texts.items()})
                         ).SerializeToString(deterministic=True)


def pair_example(s1: str, s2: str, language: str = '') -> bytes:
  """A serialized pair record; `language` (a corpus key) only when given."""
  if language:
    return text_example(s1=s1, s2=s2, language=language)
  return text_example(s1=s1, s2=s2)


def record_order_key(record: bytes, seed: int) -> int:
  """The 64-bit place of a serialized record in seeded shards: BLAKE2b of
  its bytes keyed by the seed (the same in every process and runner)."""
  digest = hashlib.blake2b(record, digest_size=8,
                           key=str(seed).encode('ascii')).digest()
  return int.from_bytes(digest, 'big')


def seeded_shards(records: Iterable[bytes], seed: int,
                  num_shards: int) -> List[List[bytes]]:
  """`records` dealt to `num_shards` lists by `record_order_key`, each in key
  order (equal records, equal keys: ties cannot change the bytes)."""
  shards = [[] for _ in range(num_shards)]
  for record in records:
    key = record_order_key(record, seed)
    shards[key % num_shards].append((key, record))
  return [[record for _, record in sorted(shard)] for shard in shards]


def metadata_path(output_prefix: str) -> str:
  """Where `write_pair_tfrecords` records how its pairs were built."""
  return f'{output_prefix}.pairs.json'


def check_pair_metadata(files: Sequence[str], pair_unit: str,
                        seq_length: int) -> None:
  """Raises ValueError if `files` were written for another pair unit or
  (sequence pairs) another token budget, or a shard's size is not the one
  written; files without metadata pass."""
  for prefix in sorted({f.rsplit('.tfrecord', 1)[0] for f in files}):
    path = metadata_path(prefix)
    if not tf.io.gfile.exists(path):
      continue
    with tf.io.gfile.GFile(path) as f:
      written = json.load(f)
    if written.get('pair_unit') != pair_unit or (
        pair_unit == 'sequence' and written.get('max_tokens') != seq_length - 2):
      raise ValueError(
          f'CmlmDataConfig: the TFRecord pairs {prefix}.tfrecord-* hold '
          f"{written.get('pair_unit')} pairs (max_tokens "
          f"{written.get('max_tokens')}), not {pair_unit} pairs for "
          f'seq_length={seq_length}; write them again with '
          f'write_pair_tfrecords(pair_unit={pair_unit!r}) or set pair_unit.')
    sizes = written.get('shard_bytes') or {}
    for file in files:
      expected = sizes.get(os.path.basename(file))
      if (file.rsplit('.tfrecord', 1)[0] == prefix and expected is not None
          and tf.io.gfile.stat(file).length != expected):
        raise ValueError(
            f'CmlmDataConfig: {file} holds {tf.io.gfile.stat(file).length} '
            f'bytes where {expected} were written (truncated or damaged); '
            'write the pairs again (python -m cmlm prepare).')


def write_pair_manifest(output_prefix: str, pair_unit: str,
                        max_tokens: Optional[int], pairs: int,
                        **details) -> None:
  """Writes `{output_prefix}.pairs.json`: how the pairs were built (the
  input pipeline checks `pair_unit` and `max_tokens`), their count, each
  shard's size (`shard_bytes`: a truncated shard is refused, where TensorFlow
  would read it as a shorter one) and any `details` (the Beam pipeline adds
  languages, seed, shards). Written after the shards."""
  shard_bytes = {os.path.basename(path): tf.io.gfile.stat(path).length
                 for path in tf.io.gfile.glob(f'{output_prefix}.tfrecord-*')}
  with tf.io.gfile.GFile(metadata_path(output_prefix), 'w') as f:
    json.dump({'pair_unit': pair_unit, 'max_tokens': max_tokens,
               'pairs': pairs, 'shard_bytes': shard_bytes, **details}, f,
              sort_keys=True)


def write_pair_tfrecords(path_spec: str, output_prefix: str, num_shards: int,
                         split: str = 'all', heldout_percent: int = 0,
                         pair_unit: str = 'sentence',
                         tokenization_config: Optional[
                             tokenization.TokenizationConfig] = None,
                         seed: Optional[int] = None,
                         skip_invalid_lines: bool = False
                         ) -> Tuple[List[str], corpus.CorpusStats]:
  """Writes the sentence pairs of a text corpus to `num_shards` TFRecord files.

  Without `seed`, pairs are dealt to the shards in turn (streamed: memory
  stays bounded), so each shard holds a similar number and neighbouring
  pairs of a document land in different shards. With `seed` they are
  shuffled as the Beam pipeline shuffles them (`seeded_shards`; every
  record is held in memory until written). Every shard
  is written under a temporary name and renamed only once all are complete:
  on any error no output file is left behind.

  Args:
    path_spec: the text corpus (see `corpus.expand_path_spec`).
    output_prefix: path prefix of the shards, e.g. `/data/pairs/train`.
    num_shards: number of files; use at least the number of input pipelines.
    split: 'all', 'train' or 'heldout' documents (see `corpus`).
    heldout_percent: share of documents held out, in percent.
    pair_unit: 'sentence' or 'sequence' (see `sequence_packing`).
    tokenization_config: the run's tokenization; 'sequence' packs to its
      `seq_length` with its tokenizer.
    seed: shuffle as `seeded_shards` does (the Beam pipeline's order).
    skip_invalid_lines: skip and count lines that are not UTF-8.

  Returns:
    The shard paths and the corpus statistics.
  """
  if num_shards < 1:
    raise ValueError(f'num_shards={num_shards} must be 1 or more.')
  corpus.check_split(split, heldout_percent)
  sequence_packing.check_pair_unit(pair_unit)
  if pair_unit == 'sequence':
    if tokenization_config is None:
      raise ValueError("pair_unit='sequence' packs sentences to the run's "
                       'seq_length: give its tokenization_config.')
    tokenization_config.check()
  final_paths = shard_paths(output_prefix, num_shards)
  directory = os.path.dirname(os.path.abspath(output_prefix))
  tf.io.gfile.makedirs(directory)
  # Dot-files, so a glob such as `prefix.tfrecord-*` never matches them.
  temporary_paths = [
      os.path.join(directory, f'.{os.path.basename(path)}.{uuid.uuid4().hex}')
      for path in final_paths]
  stats = corpus.CorpusStats()
  writers = [tf.io.TFRecordWriter(path) for path in temporary_paths]
  try:
    documents = corpus.sentence_documents(
        corpus.read_documents(path_spec, split, heldout_percent, stats,
                              skip_invalid_lines), stats)
    if pair_unit == 'sequence':
      max_tokens = tokenization_config.seq_length - 2
      pairs = sequence_packing.sequence_pairs(
          documents, sequence_packing.token_counter(tokenization_config),
          max_tokens, stats)
    else:
      max_tokens = None
      pairs = corpus.sentence_pairs(documents, stats)
    records = (pair_example(s1, s2) for s1, s2 in pairs)
    if seed is None:
      for index, record in enumerate(records):
        writers[index % num_shards].write(record)
    else:
      for writer, shard in zip(writers,
                               seeded_shards(records, seed, num_shards)):
        for record in shard:
          writer.write(record)
    for writer in writers:
      writer.close()
    if not stats.pairs:
      raise corpus.CorpusError(
          f'The corpus {path_spec!r} has no sentence pairs in split {split!r} '
          f'({stats}).')
    for temporary_path, final_path in zip(temporary_paths, final_paths):
      tf.io.gfile.rename(temporary_path, final_path, overwrite=True)
    write_pair_manifest(output_prefix, pair_unit, max_tokens, stats.pairs)
  except BaseException:
    for writer in writers:
      writer.close()
    for path in temporary_paths:
      if tf.io.gfile.exists(path):
        tf.io.gfile.remove(path)
    raise
  return final_paths, stats


def parse_pair_examples(serialized: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
  """Parses serialized pair Examples [batch] into strings s1, s2 [batch]."""
  features = tf.io.parse_example(serialized, PAIR_FEATURES)
  return features['s1'], features['s2']
