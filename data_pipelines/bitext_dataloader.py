"""The bitext input pipeline: translation pairs -> packed encoder inputs.

Each batch is a dict of int32 `[batch, seq_length]` tensors
  source_input_word_ids, source_input_mask, source_input_type_ids,
  target_input_word_ids, target_input_mask, target_input_type_ids
for the bitext retrieval loss of section 4.2. Pairs are read once into
memory (see `bitext.read_bitext`), sharded by `tf.distribute.InputContext`,
shuffled and repeated when training; tokenization runs in-graph per batch.
"""
import dataclasses
from typing import Optional

from absl import logging
import tensorflow as tf

from cmlm.data_pipelines import bitext
from cmlm.data_pipelines import graph_map
from cmlm.data_pipelines import tokenization
from cmlm.data_pipelines import vocabulary
from official.core import config_definitions as cfg
from official.nlp.data import data_loader

FEATURE_KEYS = tuple(f"{side}_{name}" for side in ("source", "target")
                     for name in ("input_word_ids", "input_mask",
                                  "input_type_ids"))


@dataclasses.dataclass
class BitextDataConfig(cfg.DataConfig):
  """Translation pairs (see `data_pipelines/bitext.py` for `input_path`)."""
  input_path: str = ""
  source_column: int = -2
  target_column: int = -1
  header: bool = False


def validate_config(params: BitextDataConfig,
                    tokenization_config: tokenization.TokenizationConfig,
                    vocab: Optional[vocabulary.VocabularyFile] = None
                    ) -> None:
  """One clear sentence per problem, before any data is read (`vocab`: the
  tokenization's vocabulary file, already read)."""
  if not params.input_path:
    raise ValueError("BitextDataConfig: input_path is empty; give TSV files "
                     "or 'source_file|target_file' pairs.")
  tokenization_config.check(vocab=vocab)
  if params.global_batch_size < 2:
    raise ValueError("BitextDataConfig: global_batch_size must be 2 or more "
                     "(the other pairs of the batch are the negatives).")


class BitextDataLoader(data_loader.DataLoader):
  """Builds the bitext `tf.data` pipeline for one input pipeline."""

  def __init__(self, params: BitextDataConfig,
               tokenization_config: tokenization.TokenizationConfig,
               vocab: Optional[vocabulary.VocabularyFile] = None):
    validate_config(params, tokenization_config, vocab)
    self._params = params
    self._tokenization = tokenization_config
    self._vocab = vocab

  def load(self, input_context: Optional[tf.distribute.InputContext] = None
           ) -> tf.data.Dataset:
    params = self._params
    pairs = bitext.read_bitext(params.input_path, params.source_column,
                               params.target_column, params.header)
    logging.info("Bitext %s: %d translation pairs.", params.input_path,
                 len(pairs))
    sources, targets = zip(*pairs)
    dataset = tf.data.Dataset.from_tensor_slices(
        (list(sources), list(targets)))
    if input_context and input_context.num_input_pipelines > 1:
      dataset = dataset.shard(input_context.num_input_pipelines,
                              input_context.input_pipeline_id)
    if params.is_training:
      dataset = dataset.shuffle(len(pairs), seed=params.seed,
                                reshuffle_each_iteration=True).repeat()
    batch_size = (input_context.get_per_replica_batch_size(
        params.global_batch_size) if input_context
                  else params.global_batch_size)
    dataset = dataset.batch(batch_size, drop_remainder=params.is_training
                            or params.drop_remainder)
    tokenizer = tokenization.build_wordpiece_tokenizer(
        self._tokenization, vocab=self._vocab)

    def encode(source, target):
      size = tf.shape(source)[0]
      # One tokenizer call for both sides: [2 * batch, seq_length].
      packed = tokenizer.tokenize_and_pack(tf.concat([source, target], 0))
      features = {}
      for name, value in packed.items():
        features[f"source_{name}"] = value[:size]
        features[f"target_{name}"] = value[size:]
      return features

    dataset = graph_map.graph_map(dataset, encode,
                                  num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)


def build_bitext_dataset(params: BitextDataConfig,
                         tokenization_config: tokenization.TokenizationConfig,
                         input_context=None,
                         vocab: Optional[vocabulary.VocabularyFile] = None
                         ) -> tf.data.Dataset:
  return BitextDataLoader(params, tokenization_config,
                          vocab).load(input_context)
