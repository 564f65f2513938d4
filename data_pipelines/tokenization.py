"""In-graph WordPiece tokenization and packing into BERT encoder inputs.

Both sentences of a CMLM pair (Yang et al., 2021, section 2) are tokenized
with WordPiece (section 3) and packed as `[CLS] tokens [SEP]` into the
TF-Hub encoder inputs `input_word_ids`, `input_mask` and `input_type_ids`.

`WordPieceTokenizer` is a `tf.Module` so that the same object serves the
`tf.data` pipeline and, later, a SavedModel preprocessor: its vocabulary
table is created once, in `__init__`, and is tracked as a SavedModel asset.
Packing (`pack_segments`: round-robin truncation of one or two segments,
then `[CLS] a [SEP] (b [SEP])`, padded) is Model Garden's `BertPackInputs`
written in core TensorFlow ops on dense positions: TF Text's
`RoundRobinTrimmer` emits an op missing from TF Serving, and the ragged route
traces a graph some ten times larger, which every pipeline build, export and
load pays for. The training pipeline and the exported preprocessor share it.

`text_normalization` says how text is cleaned and cased before WordPiece:
"tf_text" is TF Text's `BertTokenizer` (as in TF-Hub's BERT preprocessors:
NFKC case folding, control characters split words); "huggingface" is BERT's
reference tokenizer as Hugging Face's `BertTokenizerFast` runs it, which
models imported from Hugging Face were trained with (`huggingface_normalize`).
"""
import dataclasses
from typing import Dict, Optional

import tensorflow as tf
import tensorflow_text as tf_text

from cmlm.data_pipelines import plain_tokenizer
from cmlm.data_pipelines import vocabulary
from official.modeling.hyperparams import base_config

TEXT_NORMALIZATIONS = plain_tokenizer.TEXT_NORMALIZATIONS
# A batch of UTF-8 sentences, the input of every text-taking signature.
STRING_BATCH = tf.TensorSpec([None], tf.string, name='sentences')


@dataclasses.dataclass
class TokenizationConfig(base_config.Config):
  """How a run turns text into encoder inputs: one config for every input.

  A run's `task.tokenization`; every objective's data, the exported
  preprocessor, eval and pcr tokenize with it (`build_wordpiece_tokenizer`), so the
  one embedding table always sees one tokenization.

  Attributes:
    vocab_file: the WordPiece vocabulary, one token a line.
    lower_case: lower-case (and strip accents) before WordPiece: uncased.
    text_normalization: "tf_text" (TF Text's BertTokenizer, as TF-Hub's
      preprocessors) or "huggingface" (as Hugging Face's BERT tokenizers, for
      models imported from there; see `huggingface_normalize`).
    seq_length: length of every packed sequence, [CLS] and [SEP] included.
    max_unk_rate: the largest share of [UNK] tokens allowed on a sample of
      the training data when the other `lower_case` gives far fewer (a
      vocabulary of the wrong casing; `unk_rate.check`); 1 turns that check
      and the vocabulary's casing check (`unk_rate.casing_mismatch`) off.
  """
  vocab_file: str = ''
  lower_case: bool = True
  text_normalization: str = 'tf_text'
  seq_length: int = 64
  max_unk_rate: float = 0.05

  def check(self, owner: str = 'tokenization',
            vocab: Optional[vocabulary.VocabularyFile] = None) -> None:
    """Raises ValueError, one sentence, for an unusable tokenization.

    `vocab`: `vocab_file` already read (`vocabulary.read_vocabulary`).
    """
    if not self.vocab_file:
      raise ValueError(f'{owner}.vocab_file is empty; set it to a WordPiece '
                       'vocabulary file.')
    # Checks the file and its tokens.
    vocabulary.read_vocabulary(self.vocab_file, vocab)
    if self.text_normalization not in TEXT_NORMALIZATIONS:
      raise ValueError(f'{owner}.text_normalization must be one of '
                       f'{", ".join(TEXT_NORMALIZATIONS)}, got '
                       f'{self.text_normalization!r}.')
    if self.seq_length < 3:
      raise ValueError(f'{owner}.seq_length={self.seq_length} leaves no room '
                       'for a token between [CLS] and [SEP]; use 3 or more.')
    if not 0 <= self.max_unk_rate <= 1:
      raise ValueError(f'{owner}.max_unk_rate={self.max_unk_rate} is not a '
                       'share between 0 and 1.')


def build_wordpiece_tokenizer(
    config: TokenizationConfig, seq_length: int = None,
    vocab: Optional[vocabulary.VocabularyFile] = None
) -> 'WordPieceTokenizer':
  """The in-graph WordPiece tokenizer of `config` (the one way the garden
  makes one; `tokenizer_json.build_huggingface_tokenizer` is the same
  tokenization as a Hugging Face `tokenizers.Tokenizer`).

  `seq_length` replaces the config's, e.g. for serving longer inputs.
  `vocab`: `config.vocab_file` already read (`vocabulary.read_vocabulary`).
  """
  return WordPieceTokenizer(config.vocab_file,
                            seq_length or config.seq_length,
                            lower_case=config.lower_case,
                            text_normalization=config.text_normalization,
                            vocab=vocab)


def huggingface_normalize(sentences: tf.Tensor, lower_case: bool) -> tf.Tensor:
  """Hugging Face's `BertNormalizer`, in-graph, before TF Text's WordPiece.

  Its output goes to `tf_text.BertTokenizer(lower_case=False)`, which then
  only splits words and punctuation and applies WordPiece.

  Control and format characters are dropped (not turned into spaces) and all
  whitespace becomes a space; uncased, accents are stripped (NFD, then
  nonspacing marks removed) and each character is lower-cased on its own, so
  unlike TF Text's NFKC case folding 'ß', 'ﬁ', '①' and a final 'ς' stay as
  they are, as they were when the model's vocabulary and weights were made.
  """
  sentences = tf.strings.regex_replace(sentences, r'[\t\n\r\p{Z}]', ' ')
  sentences = tf.strings.regex_replace(sentences, r'[\p{C}\x{FFFD}]', '')
  if lower_case:
    sentences = tf_text.normalize_utf8(sentences, 'NFD')
    sentences = tf.strings.regex_replace(sentences, r'\p{Mn}', '')
    # Per character: no final-sigma rule, as Hugging Face's Rust normalizer.
    sentences = tf.strings.regex_replace(sentences, 'Σ', 'σ')
    sentences = tf.strings.lower(sentences, encoding='utf-8')
  return sentences


class VocabFileInitializer(tf.lookup.TextFileInitializer):
  """The vocabulary table's initializer (token -> line number), its table
  named by the file's content rather than by its path.

  TF names a text-file table `hash_table_<path>_...`, and that name is
  written into every SavedModel holding the table (the preprocessor, the
  serving model): an export would carry the exporting machine's directories.
  A SHA-256 of the file's bytes names the same table in every process that
  reads the same vocabulary, wherever it lies, and tells two different
  vocabularies apart. (An anonymous table has no name, but TF Serving's
  session-based loader cannot initialise one.) `digest`: the file's
  `vocabulary.content_digest`, when it was read already.
  """

  def __init__(self, vocab_file: str, digest: Optional[str] = None):
    if digest is None:
      with tf.io.gfile.GFile(vocab_file, 'rb') as f:
        digest = vocabulary.content_digest(f.read())
    self._content_digest = digest
    super().__init__(
        vocab_file,
        key_dtype=tf.string, key_index=tf.lookup.TextFileIndex.WHOLE_LINE,
        value_dtype=tf.int64, value_index=tf.lookup.TextFileIndex.LINE_NUMBER)

  @property
  def _shared_name(self):
    return f'hash_table_vocab_{self._content_digest}_-2_-1'


def round_robin_lengths(lengths, max_tokens):
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


def flat_rows(segment):
  """`[batch, (words), (pieces)]` or `[batch, (tokens)]` -> the tokens of all
  rows end to end, each row's start in them and its length (int64 `[batch]`).

  Composes the row splits with plain gathers, as `merge_dims` would, without
  the ragged validation ops that make a traced graph ten times larger.
  """
  splits = tf.cast(segment.row_splits, tf.int64)
  for inner in segment.nested_row_splits[1:]:
    splits = tf.gather(tf.cast(inner, tf.int64), splits)
  return segment.flat_values, splits[:-1], splits[1:] - splits[:-1]


def pack_segments(segments, seq_length, cls_id, sep_id, pad_id):
  """Packs 1 or 2 tokenized segments as `[CLS] a [SEP] (b [SEP])`, padded.

  The result of Model Garden's `BertPackInputs` (round-robin trimming, then
  `combine_segments` and `pad_model_inputs`), computed on dense positions:
  position p of a row holds the token of the segment whose span covers p.
  About 180 graph ops for two segments, where the ragged route traces some
  1,700.

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
  rows = [flat_rows(segment) for segment in segments]
  limits = round_robin_lengths([length for _, _, length in rows],
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


class WordPieceTokenizer(tf.Module):
  """Tokenizes sentences with WordPiece and packs them to `seq_length`.

  Attributes:
    vocab_size: number of tokens in the vocabulary.
    seq_length: length of every packed sequence, [CLS] and [SEP] included.
    pad_id, unk_id, cls_id, sep_id, mask_id: ids of the special tokens.
  """

  def __init__(self, vocab_file: str, seq_length: int, lower_case: bool = True,
               name: str = 'wordpiece_tokenizer',
               text_normalization: str = 'tf_text',
               vocab: Optional[vocabulary.VocabularyFile] = None):
    """`vocab`: `vocab_file` already read (`vocabulary.read_vocabulary`);
    read here when not given. (The lookup table's TF op reads the file
    itself when the table is initialised.)"""
    super().__init__(name=name)
    plain_tokenizer.check_settings(seq_length, text_normalization)
    vocab = vocabulary.read_vocabulary(vocab_file, vocab)
    ids = vocabulary.special_token_ids(vocab.tokens)
    self.vocab_size = len(vocab.tokens)
    self.seq_length = seq_length
    self.lower_case = lower_case
    self.text_normalization = text_normalization
    self.pad_id = ids[vocabulary.PAD]
    self.unk_id = ids[vocabulary.UNK]
    self.cls_id = ids[vocabulary.CLS]
    self.sep_id = ids[vocabulary.SEP]
    self.mask_id = ids[vocabulary.MASK]
    # As Model Garden's BertTokenizer layer does: a hash table that answers
    # -1 for a missing key, so WordPiece can tell unknown pieces apart.
    self._vocab_table = tf.lookup.StaticHashTable(
        VocabFileInitializer(vocab_file, vocab.digest), default_value=-1)
    self._bert_tokenizer = tf_text.BertTokenizer(
        self._vocab_table, token_out_type=tf.int64,
        unknown_token=vocabulary.UNK,
        lower_case=lower_case and text_normalization == 'tf_text')

  @property
  def special_token_ids(self):
    """Ids that masking must never choose or produce at random."""
    return [self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id]

  def tokenize_words(self, sentences: tf.Tensor) -> tf.RaggedTensor:
    """Maps string sentences [batch] to wordpiece ids [batch, (words),
    (pieces)], int32 (TF-Hub's `preprocessor.tokenize` output)."""
    if self.text_normalization == 'huggingface':
      sentences = huggingface_normalize(sentences, self.lower_case)
    return tf.cast(self._bert_tokenizer.tokenize(sentences), tf.int32)

  def tokenize(self, sentences: tf.Tensor) -> tf.RaggedTensor:
    """Maps string sentences [batch] to ragged wordpiece ids [batch, (tokens)]."""
    # [batch, (words), (wordpieces)] -> [batch, (tokens)]
    return self.tokenize_words(sentences).merge_dims(-2, -1)

  def pack(self, token_ids: tf.RaggedTensor) -> Dict[str, tf.Tensor]:
    """Truncates, adds [CLS] and [SEP], and pads to `seq_length` with [PAD]."""
    return pack_segments([token_ids], self.seq_length, self.cls_id,
                         self.sep_id, self.pad_id)

  def tokenize_and_pack(self, sentences: tf.Tensor) -> Dict[str, tf.Tensor]:
    """Maps string sentences [batch] to int32 encoder inputs [batch, seq_length].

    Returns:
      A dict with `input_word_ids` (`[CLS] wordpieces [SEP] [PAD]...`),
      `input_mask` (1 on real tokens, 0 on padding) and `input_type_ids`
      (all 0, one segment).
    """
    return self.pack(self.tokenize_words(sentences))
