"""The corpus-to-records pipeline on Apache Beam: `python -m cmlm prepare`.

What `pair_tfrecords.write_pair_tfrecords` does in one process, as a Beam
job that runs on the DirectRunner (several processes on one machine), on a
Dask cluster (`beam_runners`) or on Dataflow, Flink or Spark for a corpus
of terabytes (Yang et al. 2021, section 3: ~1B consecutive sequences of
Common Crawl):

  files (`beam_text`: .txt / .gz, local or gs://, LANG=keys)
    -> documents (blank-line separated paragraphs, or whole files)
    -> sentences (`sentence_splitter`, per script), in batches of a file's
       documents, and the file's counts (`beam_text.ReadSentences`)
    -> pairs (`pair_unit`: the paper's consecutive sequences packed with the
       run's tokenizer, `sequence_packing`, or single sentences)
    -> `tf.train.Example` records (`s1`, `s2`, and `language` when keyed)
    -> seeded shards (`beam_shards`) -> `{prefix}.tfrecord-*` and
       `{prefix}.pairs.json`, the files the CMLM input pipeline streams.

The records are exactly the pairs the one-process writer makes; with the
same seed, the shards are byte for byte those of `write_pair_tfrecords(...,
seed=seed)`. Bad input is skipped and counted (`beam_text`); the output is
published only when the whole job succeeded. The same transforms run on
every runner: none needs metrics, side inputs or `finish_bundle`, which
Beam's DaskRunner lacks (`beam_runners`).
"""
import dataclasses
import os
import sys
import time
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import apache_beam as beam

from cmlm.data_pipelines import beam_runners
from cmlm.data_pipelines import beam_shards
from cmlm.data_pipelines import beam_text
from cmlm.data_pipelines import corpus
from cmlm.data_pipelines import pair_tfrecords
from cmlm.data_pipelines import sequence_packing
from cmlm.data_pipelines import tokenization

# Sentences whose tokens are counted in one tokenizer call, at most.
_PACK_BATCH_SENTENCES = 4096


@dataclasses.dataclass
class PairsConfig:
  """What `prepare_pairs` builds.

  Attributes:
    pair_unit: 'sequence' (the paper's consecutive sequences, packed to
      `tokenization.seq_length` - 2 tokens) or 'sentence'.
    tokenization_config: the run's tokenization (sequence pairs count its
      tokens).
    num_shards: output files; a worker sorts one shard in memory.
    seed: the shuffle: the same seed gives the same bytes.
    document_unit: 'paragraph' (blank-line separated) or 'file'.
    split, heldout_percent: `corpus`'s deterministic document split.
  """
  pair_unit: str = 'sequence'
  tokenization_config: Optional[tokenization.TokenizationConfig] = None
  num_shards: int = 16
  seed: int = 0
  document_unit: str = 'paragraph'
  split: str = 'all'
  heldout_percent: int = 0

  def check(self) -> None:
    """Raises ValueError, one sentence, before anything is read."""
    sequence_packing.check_pair_unit(self.pair_unit)
    if self.pair_unit == 'sequence':
      if self.tokenization_config is None:
        raise ValueError("pair_unit='sequence' packs sentences to the run's "
                         'seq_length: give its tokenization (a vocabulary).')
      self.tokenization_config.check()
    if self.num_shards < 1:
      raise ValueError(f'num_shards={self.num_shards} must be 1 or more.')
    if self.document_unit not in beam_text.DOCUMENT_UNITS:
      raise ValueError(f'document_unit={self.document_unit!r} must be one of '
                       f'{", ".join(beam_text.DOCUMENT_UNITS)}.')
    corpus.check_split(self.split, self.heldout_percent)


PrepareResult = beam_shards.JobResult


class _PackSequences(beam.DoFn):
  """A batch of (language, sentences) -> (language, s1, s2) sequence pairs,
  every sentence's tokens counted in one call of the run's tokenizer."""

  def __init__(self, tokenization_config: tokenization.TokenizationConfig):
    self._tokenization = tokenization_config

  def setup(self):
    self._count_tokens = sequence_packing.token_counter(self._tokenization)

  def process(self, batch) -> Iterator[Tuple[str, str, str]]:
    packed = sequence_packing.packed_documents(
        [sentences for _, sentences in batch], self._count_tokens,
        self._tokenization.seq_length - 2)
    for (language, _), sequences in zip(batch, packed):
      yield from _neighbours(language, sequences)


def _sentence_pairs(batch) -> Iterator[Tuple[str, str, str]]:
  for language, sentences in batch:
    yield from _neighbours(language, sentences)


def _neighbours(language: str, units: Sequence[str]
                ) -> Iterator[Tuple[str, str, str]]:
  for s1, s2 in zip(units[:-1], units[1:]):
    yield language, s1, s2


def _record(pair: Tuple[str, str, str]) -> beam_shards.LanguageRecord:
  language, s1, s2 = pair
  return language, pair_tfrecords.pair_example(s1, s2, language)


def build_pipeline(pipeline: beam.Pipeline, files: List[beam_text.LanguageFile],
                   config: PairsConfig, directory: str,
                   names: List[str]) -> None:
  """Adds the corpus-to-records transforms to `pipeline`."""
  read = (pipeline
          | 'Inputs' >> beam.Create(files)
          | 'MatchFiles' >> beam.FlatMap(beam_text.match_files)
          | 'Reshuffle' >> beam.Reshuffle()
          | 'ReadSentences' >> beam.ParDo(beam_text.ReadSentences(
              config.document_unit, config.split, config.heldout_percent,
              _PACK_BATCH_SENTENCES)))
  batches, tallies = beam_text.split_tallies(read)
  if config.pair_unit == 'sequence':
    pairs = batches | 'PackSequences' >> beam.ParDo(
        _PackSequences(config.tokenization_config))
  else:
    pairs = batches | 'SentencePairs' >> beam.FlatMap(_sentence_pairs)
  records = pairs | 'Records' >> beam.Map(_record)
  _ = (records, tallies) | 'WriteShards' >> beam_shards.WriteSeededShards(
      directory, names, config.seed)


def prepare_pairs(input_spec: str, output_prefix: str, config: PairsConfig,
                  pipeline_args: Sequence[str] = (), overwrite: bool = False,
                  stream=None) -> PrepareResult:
  """Runs the job and publishes `{output_prefix}.tfrecord-*` and the manifest.

  Args:
    input_spec: the corpus (`beam_text.expand_input_spec`).
    output_prefix: e.g. `/data/pairs/train` or `gs://bucket/pairs/train`.
    config: the `PairsConfig`.
    pipeline_args: Beam's pipeline options, e.g. `['--runner=DataflowRunner',
      '--project=p', ...]` or `['--runner=DaskRunner',
      '--dask_client_address=tcp://HOST:8786']` (the DirectRunner when none
      is given; see `beam_runners`).
    overwrite: replace an existing output of the same prefix.
    stream: where progress lines go (stderr).

  Raises:
    ValueError, corpus.CorpusError: a bad setting or input, before the job.
    FileExistsError: the output exists and `overwrite` is False.
    corpus.CorpusError: the job found no pair (nothing is published).
    beam_runners.JobFailed: the cluster lost the job (nothing is published).
  """
  stream = stream or sys.stderr
  config.check()
  files = beam_text.expand_input_spec(input_spec)
  if beam_runners.uses_dask(pipeline_args):
    # Dask's partitions are made from the inputs the job is given (its
    # Reshuffle moves nothing): remote globs are listed now.
    files = [match for part in files for match in beam_text.match_files(part)]
  names = [os.path.basename(path) for path in
           pair_tfrecords.shard_paths(output_prefix, config.num_shards)]
  manifest_path = pair_tfrecords.metadata_path(output_prefix)
  old_outputs = beam_shards.existing_outputs(
      [manifest_path], f'{output_prefix}.tfrecord-*')
  if old_outputs and not overwrite:
    raise FileExistsError(f'{old_outputs[0]} exists; pass --overwrite to '
                          f'replace the output {output_prefix}.')
  pipeline = beam_runners.new_pipeline(pipeline_args, len(files))
  print(f'prepare: {len(files)} inputs -> {output_prefix}.tfrecord-*-of-'
        f'{config.num_shards:05d} ({config.pair_unit} pairs, seed '
        f'{config.seed})', file=stream, flush=True)
  start = time.perf_counter()
  with beam_shards.temporary_output(output_prefix) as directory:
    build_pipeline(pipeline, files, config, directory, names)
    beam_runners.run_to_end(pipeline)
    counts = beam_shards.read_counts(directory, names)
    pairs_by_language = dict(counts.by_name.get('records', {}))
    counts.by_name['pairs'] = pairs_by_language
    if not sum(pairs_by_language.values()):
      raise corpus.CorpusError(
          f'The input {input_spec!r} gave no sentence pairs; nothing was '
          f'written.\n{beam_text.report_table(counts)}')
    max_tokens = (config.tokenization_config.seq_length - 2
                  if config.pair_unit == 'sequence' else None)
    shard_paths = beam_shards.publish(
        directory, names, output_prefix, old_outputs, manifest_path,
        lambda: pair_tfrecords.write_pair_manifest(
            output_prefix, config.pair_unit, max_tokens,
            sum(pairs_by_language.values()), languages=pairs_by_language,
            seed=config.seed, num_shards=config.num_shards,
            document_unit=config.document_unit, split=config.split,
            heldout_percent=config.heldout_percent, writer='beam'))
  return PrepareResult(shard_paths, manifest_path, pairs_by_language, counts,
                       time.perf_counter() - start)
