"""Sentence pairs (s1, s2) stored as TFRecord files, for corpora too large to
hold in memory.

The CMLM recipe (Yang et al., 2021, section 3) trains on billions of
consecutive-sentence pairs from Common Crawl; reading and splitting such text
in Python at every start is too slow, so `write_pair_tfrecords` does it once
and the input pipeline (`cmlm_dataloader`) streams the records. Each record is
a `tf.train.Example` with two bytes features, `s1` and `s2`, holding the raw
sentences; tokenization and masking stay in the pipeline so one file set
serves any vocabulary, sequence length or masking rate.

Shard names follow `{output_prefix}.tfrecord-{index:05d}-of-{count:05d}`.
"""
import os
import uuid
from typing import List, Tuple

import tensorflow as tf

from data_pipelines import corpus

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


def write_pair_tfrecords(path_spec: str, output_prefix: str, num_shards: int,
                         split: str = 'all', heldout_percent: int = 0
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

  Returns:
    The shard paths and the corpus statistics.
  """
  if num_shards < 1:
    raise ValueError(f'num_shards={num_shards} must be 1 or more.')
  corpus.check_split(split, heldout_percent)
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
    for index, (s1, s2) in enumerate(corpus.sentence_pairs(documents, stats)):
      writers[index % num_shards].write(_pair_example(s1, s2))
    for writer in writers:
      writer.close()
    if not stats.pairs:
      raise corpus.CorpusError(
          f'The corpus {path_spec!r} has no sentence pairs in split {split!r} '
          f'({stats}).')
    for temporary_path, final_path in zip(temporary_paths, final_paths):
      tf.io.gfile.rename(temporary_path, final_path, overwrite=True)
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
