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
`export_tfhub_lib`. Truncation and packing are the training pipeline's
`tokenization.pack_segments`: Model Garden's round-robin and `[CLS] a [SEP] b
[SEP]` in core TensorFlow ops, since TF Text's `RoundRobinTrimmer` emits
`RoundRobinTrim`, an op missing from TF Serving (tensorflow/serving#2267).
"""
from typing import Optional

import tensorflow as tf

from cmlm.data_pipelines import tokenization
from cmlm.data_pipelines import vocabulary
from cmlm.data_pipelines.tokenization import STRING_BATCH



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
      return tokenization.pack_segments(list(inputs), seq_length, *ids)

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
