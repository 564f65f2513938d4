"""The preprocessor SavedModel: TF-Hub's BERT preprocessing API, our tokens.

Interchangeable with TF-Hub's `bert_en_uncased_preprocess`
(https://www.tensorflow.org/hub/common_saved_model_apis/text):

    preprocessor = hub.load(path)
    encoder_inputs = preprocessor(tf.constant(sentences))  # training length
    # or, for pairs or another length:
    tokens = [preprocessor.tokenize(s) for s in (s1, s2)]  # [batch, (words),
                                                            #  (pieces)]
    encoder_inputs = preprocessor.bert_pack_inputs(tokens, seq_length=128)

The tokenization is the training pipeline's (`data_pipelines.tokenization`):
the same vocabulary, `text.BertTokenizer` settings and `[CLS] ... [SEP]`
packing, so the ids equal those the model was trained on. The vocabulary is
an asset and `do_lower_case` a variable, as in Model Garden's
`export_tfhub_lib`. Truncation and packing are Model Garden's (round-robin,
then `[CLS] a [SEP] b [SEP]`), written in core TensorFlow ops on dense
positions: TF Text's `RoundRobinTrimmer` emits `RoundRobinTrim`, an op missing
from TF Serving (tensorflow/serving#2267), and the ragged route traces a graph
some 30 times larger, which every export and load pays for.
"""
from typing import Optional

import tensorflow as tf

from cmlm.data_pipelines import tokenization
from cmlm.data_pipelines import vocabulary
from cmlm.data_pipelines.tokenization import STRING_BATCH



def _round_robin_lengths(lengths, max_tokens):
  """The tokens each of 1 or 2 segments keeps, `[batch]` int64 each.

  Round-robin: places go one token at a time to each segment that still
  has tokens, first segment first (`tensorflow_text.RoundRobinTrimmer`).
  """
  max_tokens = tf.maximum(tf.cast(max_tokens, tf.int64), 0)
  if len(lengths) == 1:
    return [tf.minimum(lengths[0], max_tokens)]
  # The first segment gets half of the places rounded up, or what the
  # second leaves free if it is shorter.
  first = tf.minimum(lengths[0], tf.maximum((max_tokens + 1) // 2,
                                            max_tokens - lengths[1]))
  return [first, tf.minimum(lengths[1], max_tokens - first)]


def _flat_rows(segment):
  """`[batch, (words), (pieces)]` or `[batch, (tokens)]` -> the tokens of all
  rows end to end, each row's start in them and its length (int64 `[batch]`).

  Composes the row splits with plain gathers, as `merge_dims` would, without
  the ragged validation ops that make a traced graph ten times larger.
  """
  splits = tf.cast(segment.row_splits, tf.int64)
  for inner in segment.nested_row_splits[1:]:
    splits = tf.gather(tf.cast(inner, tf.int64), splits)
  return segment.flat_values, splits[:-1], splits[1:] - splits[:-1]


def round_robin_trim(segments, max_tokens):
  """Keeps at most `max_tokens` tokens of 1 or 2 segments per example.

  Same result as `tensorflow_text.RoundRobinTrimmer`, in core TensorFlow ops.

  Args:
    segments: a list of 1 or 2 int RaggedTensors `[batch, (tokens)]`.
    max_tokens: a scalar, the tokens allowed in all segments together.
  """
  rows = [_flat_rows(segment) for segment in segments]
  limits = _round_robin_lengths([length for _, _, length in rows], max_tokens)
  trimmed = []
  for (values, starts, _), limit in zip(rows, limits):
    splits, positions = tf.raw_ops.RaggedRange(
        starts=starts, limits=starts + limit, deltas=tf.ones_like(starts))
    trimmed.append(tf.RaggedTensor.from_row_splits(
        tf.gather(values, positions), splits, validate=False))
  return trimmed


def bert_pack_inputs(segments, seq_length, cls_id, sep_id, pad_id):
  """Packs 1 or 2 tokenized segments as `[CLS] a [SEP] (b [SEP])`, padded.

  The result of Model Garden's `BertPackInputs` (round-robin trimming, then
  `combine_segments` and `pad_model_inputs`), computed on dense positions:
  position p of a row holds the token of the segment whose span covers p.
  A few dozen graph ops, where the ragged route traces some 1,700.

  Args:
    segments: a list of 1 or 2 int32 RaggedTensors `[batch, (tokens)]` or
      `[batch, (words), (pieces)]`.
    seq_length: the length of the packed sequences.

  Returns:
    Model Garden's encoder inputs: `input_word_ids`, `input_mask` and
    `input_type_ids` (0 for the first segment, 1 for the second), int32
    `[batch, seq_length]`.
  """
  if not 1 <= len(segments) <= 2:
    raise ValueError(f"bert_pack_inputs takes 1 or 2 segments, got "
                     f"{len(segments)}.")
  num_special = len(segments) + 1  # [CLS] and one [SEP] per segment
  seq_length = tf.cast(seq_length, tf.int32)
  tf.debugging.assert_greater_equal(
      seq_length, num_special,
      message="seq_length leaves no room for tokens between [CLS] and [SEP]")
  rows = [_flat_rows(segment) for segment in segments]
  limits = _round_robin_lengths([length for _, _, length in rows],
                                seq_length - num_special)
  batch = tf.shape(rows[0][1], out_type=tf.int64)[0]
  positions = tf.broadcast_to(
      tf.range(tf.cast(seq_length, tf.int64))[tf.newaxis, :],
      tf.stack([batch, tf.cast(seq_length, tf.int64)]))  # [batch, seq_length]
  word_ids = tf.where(positions == 0, tf.constant(cls_id, tf.int64),
                      tf.constant(pad_id, tf.int64))
  type_ids = tf.zeros_like(positions)
  offset = tf.ones([batch, 1], tf.int64)  # where the segment's tokens begin
  for segment_id, ((values, starts, _), limit) in enumerate(zip(rows, limits)):
    end = offset + limit[:, tf.newaxis]  # its [SEP]
    inside = (positions >= offset) & (positions < end)
    # One padding value past the end keeps the gather in range for empty
    # segments; positions outside the span read it and are not kept.
    values = tf.concat([tf.cast(values, tf.int64),
                        tf.constant([pad_id], tf.int64)], axis=0)
    index = tf.clip_by_value(starts[:, tf.newaxis] + positions - offset, 0,
                             tf.shape(values, out_type=tf.int64)[0] - 1)
    word_ids = tf.where(inside, tf.gather(values, index), word_ids)
    word_ids = tf.where(positions == end, tf.constant(sep_id, tf.int64),
                        word_ids)
    type_ids = tf.where(inside | (positions == end),
                        tf.constant(segment_id, tf.int64), type_ids)
    offset = end + 1
  return dict(input_word_ids=tf.cast(word_ids, tf.int32),
              input_mask=tf.cast(positions < offset, tf.int32),
              input_type_ids=tf.cast(type_ids, tf.int32))


class _Tokenize(tf.Module):
  """`preprocessor.tokenize`: strings `[batch]` -> `[batch, (words), (pieces)]`,
  by the garden's one tokenizer (`tokenization.WordPieceTokenizer`), whose
  vocabulary file the SavedModel keeps as an asset."""

  def __init__(self, tokenizer: tokenization.WordPieceTokenizer,
               special_tokens: dict):
    super().__init__(name="tokenize")
    self._tokenizer = tokenizer
    special = {key: tf.constant(value) for key, value in special_tokens.items()}
    self.get_special_tokens_dict = tf.function(lambda: special,
                                               input_signature=[])

  @tf.function(input_signature=[STRING_BATCH], autograph=False)
  def __call__(self, sentences):
    return self._tokenizer.tokenize_words(sentences)


class _BertPackInputs(tf.Module):
  """`preprocessor.bert_pack_inputs(segments, seq_length=...)`."""

  def __init__(self, seq_length: int, special_tokens: dict):
    super().__init__(name="bert_pack_inputs")
    ids = (special_tokens["start_of_sequence_id"],
           special_tokens["end_of_segment_id"], special_tokens["padding_id"])

    @tf.function(autograph=False)
    def call(inputs, seq_length=seq_length):
      if not isinstance(inputs, (list, tuple)):
        inputs = [inputs]
      return bert_pack_inputs(list(inputs), seq_length, *ids)

    self.__call__ = call
    # One trace per accepted form, as Model Garden's wrapper does: 1 or 2
    # segments of ragged rank 1 or 2, seq_length overridable.
    for ragged_rank in (1, 2):
      for num_segments in (1, 2):
        call.get_concrete_function(
            [tf.RaggedTensorSpec([None] * (ragged_rank + 1), tf.int32,
                                 ragged_rank=ragged_rank)] * num_segments,
            seq_length=tf.TensorSpec([], tf.int32))


class Preprocessor(tf.Module):
  """Strings to encoder inputs; `tokenize` and `bert_pack_inputs` beside.

  Args:
    vocab_file: the WordPiece vocabulary the model was trained with.
    lower_case: whether training lower-cased the text (uncased models).
    seq_length: the packed length of a plain call (the training length).
    text_normalization: "tf_text" or "huggingface", as in training
      (`data_pipelines.tokenization`).
    vocab: `vocab_file` already read (`vocabulary.read_vocabulary`; the run
      record's); read here when not given.
  """

  def __init__(self, vocab_file: str, lower_case: bool, seq_length: int,
               text_normalization: str = "tf_text",
               vocab: Optional[vocabulary.VocabularyFile] = None):
    super().__init__(name="preprocessor")
    # One clear error if unusable.
    vocab = vocabulary.read_vocabulary(vocab_file, vocab)
    if seq_length < 3:
      raise ValueError(f"seq_length={seq_length} leaves no room for a token "
                       "between [CLS] and [SEP]; use 3 or more.")
    ids = vocabulary.special_token_ids(vocab.tokens)
    special_tokens = dict(
        vocab_size=len(vocab.tokens), start_of_sequence_id=ids[vocabulary.CLS],
        end_of_segment_id=ids[vocabulary.SEP],
        padding_id=ids[vocabulary.PAD], mask_id=ids[vocabulary.MASK])
    self.vocab_file = tf.saved_model.Asset(vocab_file)
    self.do_lower_case = tf.Variable(lower_case, trainable=False,
                                     name="do_lower_case")
    self.seq_length = tf.Variable(seq_length, trainable=False,
                                  name="seq_length")
    tokenizer = tokenization.WordPieceTokenizer(
        vocab_file, seq_length, lower_case=lower_case,
        text_normalization=text_normalization, vocab=vocab)
    self.tokenize = _Tokenize(tokenizer, special_tokens)
    self.bert_pack_inputs = _BertPackInputs(seq_length, special_tokens)

  @tf.function(input_signature=[STRING_BATCH], autograph=False)
  def __call__(self, sentences):
    # (`__call__` is an attribute of the instance, as in Model Garden's
    # wrapper, so that the SavedModel keeps all its traces: call it by name.)
    return self.bert_pack_inputs.__call__([self.tokenize(sentences)])


def save_preprocessor(preprocessor: Preprocessor, path: str) -> None:
  """Writes `preprocessor` as a SavedModel to `path` (a fresh directory)."""
  tf.saved_model.save(
      preprocessor, path,
      signatures={"serving_default":
                  preprocessor.__call__.get_concrete_function()})
