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
"""
import json
import os
import uuid
from typing import List, Optional, Sequence, Tuple

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


def _pair_example(s1: str, s2: str) -> bytes:
  def bytes_feature(text):
    return tf.train.Feature(
        bytes_list=tf.train.BytesList(value=[text.encode('utf-8')]))
  return tf.train.Example(features=tf.train.Features(feature={
      's1': bytes_feature(s1), 's2': bytes_feature(s2)})).SerializeToString()


def metadata_path(output_prefix: str) -> str:
  """Where `write_pair_tfrecords` records how its pairs were built."""
  return f'{output_prefix}.pairs.json'


def check_pair_metadata(files: Sequence[str], pair_unit: str,
                        seq_length: int) -> None:
  """Raises ValueError if `files` were written for another pair unit or
  (sequence pairs) another token budget; files without metadata pass."""
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


def write_pair_tfrecords(path_spec: str, output_prefix: str, num_shards: int,
                         split: str = 'all', heldout_percent: int = 0,
                         pair_unit: str = 'sentence',
                         tokenization_config: Optional[
                             tokenization.TokenizationConfig] = None
                         ) -> Tuple[List[str], corpus.CorpusStats]:
  """Writes the sentence pairs of a text corpus to `num_shards` TFRecord files.

  Pairs are dealt to the shards in turn, so each shard holds a similar number
  and neighbouring pairs of a document land in different shards. Every shard
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
        corpus.read_documents(path_spec, split, heldout_percent, stats), stats)
    if pair_unit == 'sequence':
      max_tokens = tokenization_config.seq_length - 2
      pairs = sequence_packing.sequence_pairs(
          documents, sequence_packing.token_counter(tokenization_config),
          max_tokens, stats)
    else:
      max_tokens = None
      pairs = corpus.sentence_pairs(documents, stats)
    for index, (s1, s2) in enumerate(pairs):
      writers[index % num_shards].write(_pair_example(s1, s2))
    for writer in writers:
      writer.close()
    if not stats.pairs:
      raise corpus.CorpusError(
          f'The corpus {path_spec!r} has no sentence pairs in split {split!r} '
          f'({stats}).')
    for temporary_path, final_path in zip(temporary_paths, final_paths):
      tf.io.gfile.rename(temporary_path, final_path, overwrite=True)
    with tf.io.gfile.GFile(metadata_path(output_prefix), 'w') as f:
      json.dump({'pair_unit': pair_unit, 'max_tokens': max_tokens,
                 'pairs': stats.pairs}, f)
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
