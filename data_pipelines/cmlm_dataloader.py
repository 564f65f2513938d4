"""The CMLM input pipeline: sentence pairs -> packed, masked encoder inputs.

Implements the data side of Conditional MLM (Yang et al., 2021):
  * two consecutive sequences (s1, s2) of a document (section 3), each whole
    sentences packed up to `seq_length` (`pair_unit='sequence'`,
    `sequence_packing`), or single consecutive sentences
    (`pair_unit='sentence'`);
  * their order swapped 50% of the time "to enable the model to learn
    bidirectional information" (section 3, `swap_order_probability`);
  * both sentences WordPiece-tokenized and packed to `seq_length` (section 3);
  * s2 masked as in BERT, 80 of 256 tokens (31.3%) in the English recipe
    (section 3, `masking_rate`, `max_predictions_per_seq`): exactly 80 for
    a full s2, proportionally fewer for a shorter one.

Each batch is a dict of
  s1_input_word_ids, s1_input_mask, s1_input_type_ids,
  s2_input_word_ids, s2_input_mask, s2_input_type_ids    int32 [batch, seq_length]
  masked_lm_positions, masked_lm_ids                     int32 [batch, P]
  masked_lm_weights                                      float32 [batch, P]
where the s2 word ids are the masked ones and P = `max_predictions_per_seq`.

Sources: text files (read and split into pairs once, in Python, then held in
memory), a TFDS dataset (one document per example, likewise), or TFRecord
files of raw pairs written by `pair_tfrecords.write_pair_tfrecords` (streamed;
for corpora too large for memory). Everything after reading runs in-graph on
whole batches.
"""
import collections
import dataclasses
import os
import threading
from typing import Optional

from absl import logging
import tensorflow as tf

from cmlm.data_pipelines import corpus
from cmlm.data_pipelines import graph_map
from cmlm.data_pipelines import masking
from cmlm.data_pipelines import pair_tfrecords
from cmlm.data_pipelines import sequence_packing
from cmlm.data_pipelines import tokenization
from cmlm.data_pipelines import vocabulary
from official.core import config_definitions as cfg
from official.nlp.data import data_loader

FEATURE_KEYS = (
    's1_input_word_ids', 's1_input_mask', 's1_input_type_ids',
    's2_input_word_ids', 's2_input_mask', 's2_input_type_ids',
    'masked_lm_positions', 'masked_lm_ids', 'masked_lm_weights')


@dataclasses.dataclass
class CmlmDataConfig(cfg.DataConfig):
  """Data for CMLM training and evaluation.

  `input_path` is a text corpus path spec (file, directory of *.txt, glob, or
  comma-separated list) or TFRecord files of pairs (*.tfrecord,
  *.tfrecord-*); a line of a text file that is not UTF-8 fails the run, or
  with `skip_invalid_lines` is skipped and counted (`CorpusStats`);
  alternatively `tfds_name`/`tfds_split`/`tfds_data_dir` name a
  TFDS dataset whose `text_feature` holds one document per example. `split`
  selects documents by a hash of their text: 'train' and 'heldout' partition
  them with `heldout_percent` percent held out; 'all' keeps every document.
  Text and TFDS sources are shuffled in full; TFRecords use
  `shuffle_buffer_size`. `pair_unit`: 'sequence' (section 3: s1 and s2 are
  consecutive spans of whole sentences of one document, each packed up to
  `seq_length` - 2 tokens) or 'sentence' (single consecutive sentences);
  TFRecord pairs are built when written, with the same option. How text becomes ids (vocabulary, casing,
  normalization, sequence length) is the run's `TokenizationConfig`, given to
  the loader beside this config.
  """
  input_path: str = ''
  skip_invalid_lines: bool = False
  pair_unit: str = 'sequence'
  text_feature: str = 'text'
  max_predictions_per_seq: int = 20
  masking_rate: float = 80 / 256
  swap_order_probability: float = 0.5
  heldout_percent: int = 0
  split: str = 'all'


def validate_config(params: CmlmDataConfig,
                    tokenization_config: tokenization.TokenizationConfig,
                    vocab: Optional[vocabulary.VocabularyFile] = None
                    ) -> None:
  """Raises ValueError, one sentence per problem, before any data is read
  (`vocab`: the tokenization's vocabulary file, already read)."""
  def fail(message):
    raise ValueError(f'CmlmDataConfig: {message}')
  if bool(params.input_path) == bool(params.tfds_name):
    fail('set exactly one of input_path (text or TFRecord files) and '
         f'tfds_name; got input_path={params.input_path!r}, '
         f'tfds_name={params.tfds_name!r}.')
  if params.tfds_name and not params.tfds_split:
    fail(f"tfds_split must name a split of {params.tfds_name!r}, e.g. 'train'.")
  if params.tfds_name and not params.text_feature:
    fail('text_feature must name the TFDS feature that holds the text.')
  tokenization_config.check(vocab=vocab)
  try:
    sequence_packing.check_pair_unit(params.pair_unit)
  except ValueError as e:
    fail(str(e))
  seq_length = tokenization_config.seq_length
  try:
    corpus.check_split(params.split, params.heldout_percent)
  except corpus.CorpusError as e:
    fail(str(e))
  if params.split == 'heldout' and params.heldout_percent == 0:
    fail("split='heldout' with heldout_percent=0 selects no documents.")
  if not 1 <= params.max_predictions_per_seq <= seq_length - 2:
    fail(f'max_predictions_per_seq={params.max_predictions_per_seq} masked '
         f'tokens do not fit in seq_length={seq_length}: it must be '
         f'between 1 and seq_length - 2 = {seq_length - 2} ([CLS] and '
         '[SEP] are never masked).')
  if not 0 < params.masking_rate <= 1:
    fail(f'masking_rate={params.masking_rate} must be in (0, 1].')
  if not 0 <= params.swap_order_probability <= 1:
    fail(f'swap_order_probability={params.swap_order_probability} is not a '
         'probability in [0, 1].')
  if params.global_batch_size < 1:
    fail(f'global_batch_size={params.global_batch_size} must be 1 or more.')


# Reading a text corpus and packing its sentences (each one tokenized to
# count its tokens) is most of a short run's start. A process that reads one
# corpus several times (an experiment's arms and seeds, the stages of a
# multilingual run, the demo's measures, a notebook) does it once: the pairs
# of the last few small corpora are kept, keyed by what they were read from
# and how, each file by its path, size, modification time and inode (an
# edited or replaced file is read again).
_KEPT_CORPUS_BYTES = 16 << 20  # larger corpora are read again each time
_KEPT_CORPORA = 4
_kept_pairs = collections.OrderedDict()
_kept_pairs_lock = threading.Lock()


def _text_pairs_key(params: CmlmDataConfig,
                    tokenization_config: tokenization.TokenizationConfig,
                    vocab: Optional[vocabulary.VocabularyFile]):
  """What `text_pairs`' result depends on, or None where it is not kept:
  a TFDS source, files that are not local, a corpus over
  `_KEPT_CORPUS_BYTES`, or sequences packed without the vocabulary read."""
  if params.tfds_name or (params.pair_unit == 'sequence' and vocab is None):
    return None
  try:
    files = corpus.expand_path_spec(params.input_path)
    found = [os.stat(path) for path in files]
  except (OSError, corpus.CorpusError):
    return None  # read as usual, and its error raised there
  if sum(stat.st_size for stat in found) > _KEPT_CORPUS_BYTES:
    return None
  return (tuple((path, stat.st_size, stat.st_mtime_ns, stat.st_ino)
                for path, stat in zip(files, found)),
          params.split, params.heldout_percent, params.skip_invalid_lines,
          params.pair_unit, repr(sorted(tokenization_config.as_dict().items())),
          vocab.digest if params.pair_unit == 'sequence' else None)


def text_pairs(params: CmlmDataConfig,
               tokenization_config: tokenization.TokenizationConfig,
               vocab: Optional[vocabulary.VocabularyFile] = None):
  """The (s1, s2) texts of a text or TFDS source, in corpus order, built in
  `params.pair_unit`; returns (pairs, corpus statistics, source name).
  `vocab`: the tokenization's vocabulary file, already read. The result for
  a small local corpus is kept for the next call (see `_KEPT_CORPORA`)."""
  key = _text_pairs_key(params, tokenization_config, vocab)
  with _kept_pairs_lock:
    kept = _kept_pairs.get(key) if key is not None else None
    if kept is not None:
      _kept_pairs.move_to_end(key)
  if kept is not None:
    pairs, stats, source = kept
    return list(pairs), dataclasses.replace(stats), source
  pairs, stats, source = _read_text_pairs(params, tokenization_config, vocab)
  if key is not None:
    with _kept_pairs_lock:
      _kept_pairs[key] = (tuple(pairs), dataclasses.replace(stats), source)
      while len(_kept_pairs) > _KEPT_CORPORA:
        _kept_pairs.popitem(last=False)
  return pairs, stats, source


def _read_text_pairs(params: CmlmDataConfig,
                     tokenization_config: tokenization.TokenizationConfig,
                     vocab: Optional[vocabulary.VocabularyFile]):
  """`text_pairs`, read from the source."""
  stats = corpus.CorpusStats()
  if params.tfds_name:
    source = f'TFDS {params.tfds_name}[{params.tfds_split}]'
    documents = corpus.select_split(
        corpus.tfds_documents(params.tfds_name, params.tfds_split,
                              params.text_feature, params.tfds_data_dir),
        params.split, params.heldout_percent)
  else:
    source = params.input_path
    documents = corpus.read_documents(
        params.input_path, params.split, params.heldout_percent, stats,
        skip_invalid_lines=params.skip_invalid_lines)
  documents = corpus.sentence_documents(documents, stats)
  if params.pair_unit == 'sequence':
    pairs = list(sequence_packing.sequence_pairs(
        documents, sequence_packing.token_counter(tokenization_config, vocab),
        tokenization_config.seq_length - 2, stats))
  else:
    pairs = list(corpus.sentence_pairs(documents, stats))
  if not pairs:
    raise corpus.CorpusError(f'The corpus {source!r} has no sentence pairs '
                             f'in split {params.split!r} ({stats}).')
  return pairs, stats, source


class CmlmDataLoader(data_loader.DataLoader):
  """Builds the CMLM `tf.data` pipeline; keeps the corpus statistics.

  Attributes:
    corpus_stats: `corpus.CorpusStats` of the pairs read by the last `load`
      (this input pipeline's shard), or None for TFRecord sources, whose
      statistics `write_pair_tfrecords` reported when writing them.
  """

  def __init__(self, params: CmlmDataConfig,
               tokenization_config: tokenization.TokenizationConfig,
               vocab: Optional[vocabulary.VocabularyFile] = None):
    """`vocab`: the tokenization's vocabulary file, already read (else read
    by each check and tokenizer)."""
    validate_config(params, tokenization_config, vocab)
    self._params = params
    self._tokenization = tokenization_config
    self._vocab = vocab
    self.corpus_stats: Optional[corpus.CorpusStats] = None

  def _in_memory_pairs(self, input_context):
    """Reads text or TFDS pairs of this pipeline's shard into a dataset."""
    params = self._params
    pairs, stats, source = text_pairs(params, self._tokenization, self._vocab)
    if input_context and params.sharding:
      # By pair index: every pipeline reads the (small) corpus and keeps an
      # equal share, whatever the sizes of the files.
      pairs = pairs[input_context.input_pipeline_id::
                    input_context.num_input_pipelines]
      if not pairs:
        raise corpus.CorpusError(
            f'The corpus {source!r} has fewer sentence pairs ({stats.pairs}) '
            f'than input pipelines ({input_context.num_input_pipelines}).')
    logging.info('CMLM %s pairs from %s, split %r: %s; this pipeline keeps '
                 '%d.', params.pair_unit, source, params.split, stats,
                 len(pairs))
    self.corpus_stats = stats
    s1, s2 = zip(*pairs)
    dataset = tf.data.Dataset.from_tensor_slices(
        (tf.constant(s1, tf.string), tf.constant(s2, tf.string)))
    if params.is_training:
      dataset = dataset.shuffle(max(len(pairs), params.shuffle_buffer_size),
                                seed=params.seed)
    return dataset

  def _tfrecord_pairs(self, files, input_context):
    """Streams TFRecord pairs, sharded by file when there are enough files."""
    params = self._params
    if params.split != 'all':
      raise ValueError(
          f'CmlmDataConfig: split={params.split!r} needs a text or TFDS '
          'source; TFRecord pairs are split when written '
          '(write_pair_tfrecords(split=...)).')
    pair_tfrecords.check_pair_metadata(files, params.pair_unit,
                                       self._tokenization.seq_length)
    dataset = tf.data.Dataset.from_tensor_slices(files)
    num_pipelines = input_context.num_input_pipelines if input_context else 1
    shard_by_file = params.sharding and len(files) >= num_pipelines
    if input_context and shard_by_file:
      dataset = dataset.shard(num_pipelines, input_context.input_pipeline_id)
    if params.is_training:
      dataset = dataset.shuffle(len(files), seed=params.seed)
    dataset = dataset.interleave(
        tf.data.TFRecordDataset,
        cycle_length=params.cycle_length or tf.data.AUTOTUNE,
        block_length=params.block_length,
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=params.deterministic)
    if input_context and params.sharding and not shard_by_file:
      dataset = dataset.shard(num_pipelines, input_context.input_pipeline_id)
    if params.is_training:
      dataset = dataset.shuffle(params.shuffle_buffer_size, seed=params.seed)
    logging.info('CMLM pairs from %d TFRecord files (%s).', len(files),
                 'sharded by file' if shard_by_file else 'sharded by record')
    return dataset  # Serialized; parsed after batching, a batch at a time.

  def load(self, input_context: Optional[tf.distribute.InputContext] = None
           ) -> tf.data.Dataset:
    """Returns batches of CMLM features for one input pipeline."""
    params = self._params
    files = (corpus.expand_path_spec(params.input_path)
             if params.input_path else [])
    num_tfrecord_files = sum(map(pair_tfrecords.is_pair_tfrecord_file, files))
    if num_tfrecord_files and num_tfrecord_files != len(files):
      raise ValueError(f'CmlmDataConfig: input_path={params.input_path!r} '
                       'mixes TFRecord and text files; use one kind.')
    if num_tfrecord_files:
      dataset = self._tfrecord_pairs(files, input_context)  # Serialized.
    else:
      dataset = self._in_memory_pairs(input_context)
    if params.is_training:
      dataset = dataset.repeat()
    batch_size = (input_context.get_per_replica_batch_size(
        params.global_batch_size) if input_context else params.global_batch_size)
    drop_remainder = params.is_training or params.drop_remainder
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    if num_tfrecord_files:
      dataset = graph_map.graph_map(dataset,
                                    pair_tfrecords.parse_pair_examples,
                                    num_parallel_calls=tf.data.AUTOTUNE)
    pipeline_id = input_context.input_pipeline_id if input_context else 0
    features = _CmlmFeatures(params, self._tokenization,
                             batch_size if drop_remainder else None,
                             pipeline_id, self._vocab)
    dataset = graph_map.graph_map(
        dataset.enumerate(), features, num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=params.deterministic)
    return dataset.prefetch(params.prefetch_buffer_size or tf.data.AUTOTUNE)


def build_cmlm_dataset(params: CmlmDataConfig,
                       tokenization_config: tokenization.TokenizationConfig,
                       input_context: Optional[tf.distribute.InputContext]
                       = None,
                       vocab: Optional[vocabulary.VocabularyFile] = None
                       ) -> tf.data.Dataset:
  """Builds the CMLM dataset; see `CmlmDataLoader` for the statistics."""
  return CmlmDataLoader(params, tokenization_config, vocab).load(input_context)


class _CmlmFeatures:
  """Maps a batch of (s1, s2) strings to the CMLM features, in-graph."""

  def __init__(self, params: CmlmDataConfig,
               tokenization_config: tokenization.TokenizationConfig,
               batch_size: Optional[int], pipeline_id: int,
               vocab: Optional[vocabulary.VocabularyFile] = None):
    self._params = params
    self._batch_size = batch_size
    self._pipeline_id = pipeline_id
    self.tokenizer = tokenization.build_wordpiece_tokenizer(
        tokenization_config, vocab=vocab)

  def _seeds(self, batch_index):
    """Two stateless seeds per batch when `params.seed` is set, else None."""
    if self._params.seed is None:
      return None, None
    seed = tf.stack([tf.constant(self._params.seed, tf.int64),
                     batch_index * 1024 + self._pipeline_id])
    return tf.unstack(tf.random.experimental.stateless_split(seed, num=2))

  def __call__(self, batch_index, pair):
    params, tokenizer = self._params, self.tokenizer
    s1, s2 = pair  # [batch] strings each
    swap_seed, mask_seed = self._seeds(batch_index)
    batch_size = tf.shape(s1)[0]
    draw = (tf.random.uniform([batch_size]) if swap_seed is None else
            tf.random.stateless_uniform([batch_size], swap_seed))
    swap = draw < params.swap_order_probability  # [batch]
    first, second = tf.where(swap, s2, s1), tf.where(swap, s1, s2)
    # One tokenizer call for both sentences: [2 * batch, seq_length].
    packed = tokenizer.tokenize_and_pack(tf.concat([first, second], axis=0))
    features = {}
    for name, value in packed.items():
      features['s1_' + name] = value[:batch_size]
      features['s2_' + name] = value[batch_size:]
    (features['s2_input_word_ids'], features['masked_lm_positions'],
     features['masked_lm_ids'], features['masked_lm_weights']) = (
         masking.mask_tokens(
             features['s2_input_word_ids'], features['s2_input_mask'],
             max_predictions_per_seq=params.max_predictions_per_seq,
             masking_rate=params.masking_rate,
             mask_token_id=tokenizer.mask_id,
             vocab_size=tokenizer.vocab_size,
             special_token_ids=tokenizer.special_token_ids,
             seed=mask_seed))
    for name, value in features.items():
      value.set_shape([self._batch_size] + value.shape.as_list()[1:])
    return {key: features[key] for key in FEATURE_KEYS}
