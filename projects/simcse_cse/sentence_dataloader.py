"""Unlabeled sentences -> packed encoder inputs (SimCSE, CMLM-CSE).

Unsupervised SimCSE and CMLM-CSE (Zhang and Chen 2023, "CMLM-CSE: Based on
Conditional MLM Contrastive Learning for Sentence Embeddings",
doi:10.5121/csit.2023.130805, section 4.2) train on plain sentences. Sources (`input_path`, any path spec
of `corpus.expand_path_spec`):
  * `format="lines"`: one sentence per line (SimCSE's wiki1m file);
  * `format="corpus"`: running text read like the CMLM corpus (blank-line
    separated documents, cut into sentences).
Sentences are whitespace-normalised and de-duplicated (first occurrence
kept), then sharded by index over `tf.distribute` input pipelines, shuffled
and repeated when training. Each batch is a dict of int32
`[batch, seq_length]` tensors `input_word_ids`, `input_mask`,
`input_type_ids`; with masking (CMLM-CSE's x') also `masked_input_word_ids`
and, `[batch, P]`, `masked_lm_positions`, `masked_lm_ids`,
`masked_lm_weights` (BERT masking, `masking_rate` 15% by default).
"""
import dataclasses
import math
from typing import List, Optional

from absl import logging
import tensorflow as tf

from cmlm.data_pipelines import corpus
from cmlm.data_pipelines import graph_map
from cmlm.data_pipelines import masking
from cmlm.data_pipelines import sentence_splitter
from cmlm.data_pipelines import tokenization
from cmlm.data_pipelines import vocabulary
from official.core import config_definitions as cfg

FORMATS = ('lines', 'corpus')
ENCODER_KEYS = ('input_word_ids', 'input_mask', 'input_type_ids')
MASKED_KEYS = ('masked_input_word_ids', 'masked_lm_positions',
               'masked_lm_ids', 'masked_lm_weights')


@dataclasses.dataclass
class SentenceDataConfig(cfg.DataConfig):
  """Unlabeled sentences.

  Attributes:
    input_path: text files (a file, a directory of *.txt, a glob, or a
      comma-separated list).
    format: 'lines' (one sentence a line) or 'corpus' (running text).
    masking_rate: share of each sentence's tokens masked in x' (CMLM-CSE).
    max_predictions_per_seq: P, the most masked tokens per sentence; 0 means
      ceil(masking_rate x (seq_length - 2)).
  """
  input_path: str = ''
  format: str = 'lines'
  masking_rate: float = 0.15
  max_predictions_per_seq: int = 0


def max_predictions(params: SentenceDataConfig, seq_length: int) -> int:
  """P of `params` for sequences of `seq_length`."""
  if params.max_predictions_per_seq:
    return params.max_predictions_per_seq
  return max(1, math.ceil(params.masking_rate * (seq_length - 2)))


def validate_config(params: SentenceDataConfig,
                    tokenization_config: tokenization.TokenizationConfig,
                    with_masking: bool = False,
                    vocab: Optional[vocabulary.VocabularyFile] = None
                    ) -> None:
  """Raises ValueError, one sentence per problem, before any data is read
  (`vocab`: the tokenization's vocabulary file, already read)."""
  def fail(message):
    raise ValueError(f'SentenceDataConfig: {message}')
  if not params.input_path:
    fail('input_path is empty; give text files of sentences.')
  if params.format not in FORMATS:
    fail(f'format must be one of {", ".join(FORMATS)}, got '
         f'{params.format!r}.')
  tokenization_config.check(vocab=vocab)
  if params.global_batch_size < 2:
    fail(f'global_batch_size={params.global_batch_size} must be 2 or more '
         '(the other sentences of the batch are the negatives).')
  if with_masking:
    if not 0 < params.masking_rate <= 1:
      fail(f'masking_rate={params.masking_rate} must be in (0, 1].')
    seq_length = tokenization_config.seq_length
    predictions = max_predictions(params, seq_length)
    if not 1 <= predictions <= seq_length - 2:
      fail(f'max_predictions_per_seq={predictions} masked tokens do not fit '
           f'in seq_length={seq_length}: it must be between 1 and '
           f'{seq_length - 2}.')
  corpus.expand_path_spec(params.input_path)  # Missing paths fail here.


def read_sentences(path_spec: str, text_format: str = 'lines') -> List[str]:
  """The distinct sentences of `path_spec`, in order of first occurrence."""
  if text_format == 'corpus':
    sentences = (sentence for document in corpus.sentence_documents(
        corpus.read_documents(path_spec)) for sentence in document)
  else:
    sentences = (line for path in corpus.expand_path_spec(path_spec)
                 for line in _lines(path))
  seen = {}
  for sentence in sentences:
    sentence = sentence_splitter.normalize_whitespace(sentence)
    if sentence:
      seen.setdefault(sentence, None)
  if not seen:
    raise corpus.CorpusError(f'The corpus {path_spec!r} holds no sentence.')
  return list(seen)


def _lines(path):
  with open(path, encoding='utf-8') as f:
    try:
      yield from f
    except UnicodeDecodeError as e:
      raise corpus.CorpusError(f'{path} is not UTF-8 text ({e.reason}).'
                               ) from None


class SentenceDataLoader:
  """Builds the sentence `tf.data` pipeline for one input pipeline."""

  def __init__(self, params: SentenceDataConfig,
               tokenization_config: tokenization.TokenizationConfig,
               with_masking: bool = False,
               vocab: Optional[vocabulary.VocabularyFile] = None):
    validate_config(params, tokenization_config, with_masking, vocab)
    self._params = params
    self._tokenization = tokenization_config
    self._vocab = vocab
    self._with_masking = with_masking
    self.num_sentences = None  # distinct sentences of the corpus, once read

  def load(self, input_context: Optional[tf.distribute.InputContext] = None
           ) -> tf.data.Dataset:
    params = self._params
    sentences = read_sentences(params.input_path, params.format)
    self.num_sentences = len(sentences)
    if input_context and input_context.num_input_pipelines > 1:
      sentences = sentences[input_context.input_pipeline_id::
                            input_context.num_input_pipelines]
    logging.info('Sentences from %s: %d distinct; this pipeline keeps %d.',
                 params.input_path, self.num_sentences, len(sentences))
    dataset = tf.data.Dataset.from_tensor_slices(
        tf.constant(sentences, tf.string))
    if params.is_training:
      dataset = dataset.shuffle(len(sentences), seed=params.seed,
                                reshuffle_each_iteration=True).repeat()
    batch_size = (input_context.get_per_replica_batch_size(
        params.global_batch_size) if input_context
                  else params.global_batch_size)
    drop_remainder = params.is_training or params.drop_remainder
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    tokenizer = tokenization.build_wordpiece_tokenizer(
        self._tokenization, vocab=self._vocab)
    seq_length = self._tokenization.seq_length
    predictions = max_predictions(params, seq_length)
    seed = params.seed

    def encode(batch_index, batch):
      features = dict(tokenizer.tokenize_and_pack(batch))
      if self._with_masking:
        mask_seed = (None if seed is None else
                     tf.stack([tf.constant(seed, tf.int64), batch_index]))
        (features['masked_input_word_ids'], features['masked_lm_positions'],
         features['masked_lm_ids'], features['masked_lm_weights']) = (
             masking.mask_tokens(
                 features['input_word_ids'], features['input_mask'],
                 max_predictions_per_seq=predictions,
                 masking_rate=params.masking_rate,
                 mask_token_id=tokenizer.mask_id,
                 vocab_size=tokenizer.vocab_size,
                 special_token_ids=tokenizer.special_token_ids,
                 seed=mask_seed))
      static_batch = batch_size if drop_remainder else None
      for value in features.values():
        value.set_shape([static_batch] + value.shape.as_list()[1:])
      return features

    dataset = graph_map.graph_map(dataset.enumerate(), encode,
                                  num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)
