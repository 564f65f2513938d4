"""WordPiece vocabularies: load, check, learn from a corpus, write.

CMLM (Yang et al., 2021, section 3) tokenizes with WordPiece; the English
model reuses BERT's uncased vocabulary and the multilingual model learns a
new one "using the WordPiece vocabulary generation library from Tensorflow
Text" (section 4.4). `build_wordpiece_vocab` is that library call;
`build_vocab_from_corpus` runs it over a text corpus read by
`data_pipelines.corpus`.

A vocabulary file has one token per line; the line number is the token id.
It must hold the special tokens below, with [PAD] as id 0 because the
pipeline pads with zeros. A run reads its vocabulary file once
(`read_vocabulary`) and passes what it read to every check and tokenizer.
"""
import dataclasses
import hashlib
import os
from typing import Iterable, List, Optional, Sequence, Tuple, Union

import tensorflow as tf

from cmlm.data_pipelines import atomic_file
from cmlm.data_pipelines import corpus
from cmlm.data_pipelines import text_lines

PAD, UNK, CLS, SEP, MASK = '[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK)


class VocabularyError(ValueError):
  """A vocabulary file is missing or lacks what the pipeline needs."""


def check_vocab_size(vocab_size: int,
                     reserved_tokens: Sequence[str] = SPECIAL_TOKENS) -> None:
  """Raises VocabularyError unless `vocab_size` leaves room for a word
  beside the reserved tokens: checked before a corpus is read."""
  if vocab_size <= len(reserved_tokens):
    raise VocabularyError(
        f'vocab_size={vocab_size} must be more than the '
        f'{len(reserved_tokens)} reserved tokens ({", ".join(reserved_tokens)})'
        '.')


def check_vocab(vocab: Sequence[str], source: str = 'the vocabulary') -> None:
  """Raises VocabularyError unless `vocab` has the special tokens, [PAD] = 0."""
  missing = [token for token in SPECIAL_TOKENS if token not in vocab]
  if missing:
    raise VocabularyError(
        f'{source} lacks the special token(s) {", ".join(missing)}; a CMLM '
        f'vocabulary needs all of {", ".join(SPECIAL_TOKENS)}.')
  if vocab[0] != PAD:
    raise VocabularyError(
        f'{source} has {vocab[0]!r} as id 0, but [PAD] must be id 0 '
        'because sequences are padded with zeros.')


@dataclasses.dataclass(frozen=True)
class VocabularyFile:
  """A vocabulary file as read once (`read_vocabulary`).

  Attributes:
    path: the file.
    tokens: its tokens in id order, checked as `load_vocab` checks them.
    digest: `content_digest` of its bytes (it names the tokenizer's lookup
      table, `tokenization.VocabFileInitializer`).
    data: its bytes as read, which an export copies (`write_copy`) rather
      than reading the file again.
  """
  path: str
  tokens: Tuple[str, ...]
  digest: str
  data: bytes = dataclasses.field(default=b'', repr=False, compare=False)

  def write_copy(self, path: str) -> None:
    """Writes the file's bytes, as read, to `path`."""
    with open(path, 'wb') as f:
      f.write(self.data)


def read_vocabulary(path: str,
                    already_read: Optional[VocabularyFile] = None
                    ) -> VocabularyFile:
  """The vocabulary file `path`, read and checked as `load_vocab` does.

  `already_read`, when it is that file, is returned as it is: a run reads
  its vocabulary once (`training.prepared_run.prepare`) and passes it along.
  """
  if already_read is not None and already_read.path == path:
    return already_read
  data = _read_bytes(path)
  return VocabularyFile(path, tuple(_checked_tokens(data, path)),
                        content_digest(data), data)


def load_vocab(path: str) -> List[str]:
  """Reads and checks a vocabulary file; returns its tokens in id order."""
  return _checked_tokens(_read_bytes(path), path)


def content_digest(data: bytes) -> str:
  """A SHA-256 of a vocabulary file's bytes (32 hex digits): the same
  vocabulary, wherever it lies, has the same digest."""
  return hashlib.sha256(data).hexdigest()[:32]


def _read_bytes(path: str) -> bytes:
  if not path:
    raise VocabularyError('No vocabulary file was given.')
  if not tf.io.gfile.exists(path):
    raise VocabularyError(f'The vocabulary file {path!r} does not exist.')
  if tf.io.gfile.isdir(path):
    raise VocabularyError(f'The vocabulary file {path!r} is a directory; '
                          'give the vocab.txt file (one token a line).')
  with tf.io.gfile.GFile(path, 'rb') as f:
    return f.read()


def _checked_tokens(data: bytes, path: str) -> List[str]:
  try:
    text = data.decode('utf-8')
  except UnicodeDecodeError:
    raise VocabularyError(
        f'The vocabulary file {path!r} is not UTF-8 text.') from None
  vocab = [line.strip() for line in text.splitlines()]
  check_vocab(vocab, f'The vocabulary file {path!r}')
  check_unique(vocab, path)
  return vocab


def check_unique(vocab: Sequence[str], path: str) -> None:
  """Raises VocabularyError naming the first token that appears twice.

  A token's id is its line number, so a repeated token has two ids; the
  tokenizer's lookup table cannot hold both.
  """
  first_line = {}
  for line_number, token in enumerate(vocab, start=1):
    if token in first_line:
      shown = repr(token) if token else "'' (an empty line)"
      raise VocabularyError(
          f'The vocabulary file {path!r} has the token {shown} twice, on '
          f'lines {first_line[token]} and {line_number}; each token must '
          'appear once (its line number is its id).')
    first_line[token] = line_number


def special_token_ids(vocab: Sequence[str]) -> dict:
  """Maps each special token to its id, e.g. {'[PAD]': 0, '[CLS]': 2, ...}."""
  return {token: vocab.index(token) for token in SPECIAL_TOKENS}


def write_vocab(vocab: Sequence[str], path: str) -> None:
  """Writes one token per line, atomically (a temporary file, then rename).

  Tokens holding white space (a learner may keep e.g. 's' + U+00A0 from
  text that uses no-break spaces) are left out: the tokenizer splits text on
  white space, so they could never match, and a reader that strips lines
  would see them as duplicates of the bare token.
  """
  vocab = [token for token in vocab
           if not any(character.isspace() for character in token)]
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  with atomic_file.atomic_file(path) as temporary:
    with open(temporary, 'w', encoding='utf-8') as f:
      f.writelines(token + '\n' for token in vocab)


def build_wordpiece_vocab(
    sentences_or_dataset: Union[Iterable[str], tf.data.Dataset],
    vocab_size: int,
    lower_case: bool = True,
    reserved_tokens: Sequence[str] = SPECIAL_TOKENS) -> List[str]:
  """Learns a WordPiece vocabulary with TF Text's BERT vocabulary tool.

  Args:
    sentences_or_dataset: strings, or a `tf.data.Dataset` of string scalars
      or string vectors.
    vocab_size: the target size; the result can be somewhat smaller.
    lower_case: lower-case and strip accents first (an uncased vocabulary).
    reserved_tokens: tokens placed first, in order; [PAD] must come first.

  Returns:
    The tokens in id order, reserved tokens first.
  """
  check_vocab_size(vocab_size, reserved_tokens)
  # Imported here: the tool pulls in learner code only vocabulary builds need.
  from tensorflow_text.tools.wordpiece_vocab import bert_vocab_from_dataset  # pylint: disable=g-import-not-at-top
  if isinstance(sentences_or_dataset, tf.data.Dataset):
    dataset = sentences_or_dataset
  else:
    sentences = list(sentences_or_dataset)
    if not sentences:
      raise VocabularyError('No text was given to learn a vocabulary from.')
    dataset = tf.data.Dataset.from_tensor_slices(
        tf.constant(sentences, tf.string)).batch(1024)
  try:
    vocab = bert_vocab_from_dataset.bert_vocab_from_dataset(
        dataset.prefetch(tf.data.AUTOTUNE),
        vocab_size=vocab_size,
        reserved_tokens=list(reserved_tokens),
        bert_tokenizer_params={'lower_case': lower_case},
        # A small corpus has few words seen 10+ times (the tool's default
        # lower threshold); let the search go down to words seen once.
        learn_params={'lower_thresh': 1})
  except StopIteration:  # the tool's word count found no word at all
    raise VocabularyError('The text holds no word for the BERT tokenizer '
                          '(only white space or control characters): no '
                          'vocabulary to learn.') from None
  check_vocab(vocab, 'The learned vocabulary')
  return vocab


def check_has_words(texts: Sequence[str], source: str) -> None:
  """Raises VocabularyError, naming `source`, when no text of `texts` holds
  a character the tokenizer keeps (`text_lines.has_visible_text`)."""
  if not any(text_lines.has_visible_text(text) for text in texts):
    raise VocabularyError(
        f'The corpus {source} holds no word: {len(texts)} document(s) of '
        'only white space or control characters (is it text?); no '
        'vocabulary was written.')


def build_vocab_from_corpus(path_spec: str, output_path: str, vocab_size: int,
                            lower_case: bool = True,
                            skip_invalid_lines: bool = False) -> List[str]:
  """Learns a WordPiece vocabulary from the documents of a text corpus.

  Prints progress; writes the vocabulary atomically to `output_path`.
  `skip_invalid_lines`: skip lines that are not UTF-8 instead of failing.

  Raises:
    VocabularyError: the corpus holds no word (only white space or control
      characters); nothing is written.
  """
  check_vocab_size(vocab_size)
  print(f'Reading the corpus {path_spec} ...', flush=True)
  stats = corpus.CorpusStats()
  # Every document counts here, single-sentence ones included.
  documents = list(corpus.read_documents(
      path_spec, stats=stats, skip_invalid_lines=skip_invalid_lines,
      how_to_skip='pass --skip_invalid_lines'))
  skipped = (f' ({stats.skipped_invalid_lines} lines that are not UTF-8 '
             'skipped)' if stats.skipped_invalid_lines else '')
  print(f'Read {len(documents)} documents from {stats.files} files{skipped}.',
        flush=True)
  check_has_words(documents, path_spec)
  print(f'Learning a WordPiece vocabulary of up to {vocab_size} tokens '
        f'({"uncased" if lower_case else "cased"}) ...', flush=True)
  vocab = build_wordpiece_vocab(documents, vocab_size, lower_case)
  write_vocab(vocab, output_path)
  print(f'Wrote {len(vocab)} tokens to {output_path}.', flush=True)
  return vocab
