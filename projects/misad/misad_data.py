"""MiSAD's input pipeline (Li et al. 2020, sections 3.2-3.3): sentences
marked with PMI n-grams -> the packed sentence S and its candidate n-grams.

The input is what `python -m cmlm ngrams` writes (`pmi_ngrams`): one sentence
a line, space-separated words, n-grams in parentheses; blank lines are
skipped. Each word is tokenized on its own (WordPiece, the run's one
`TokenizationConfig`), so word spans map exactly onto token spans. Each
example carries:

  * `input_word_ids`, `input_mask`, `input_type_ids` `[seq_length]`: S packed
    as `[CLS] tokens [SEP]` (unmasked: the objective masks it, never inside
    the chosen n-gram);
  * `ngram_starts`, `ngram_ends` int32 `[max_ngrams_per_sentence]`: token
    positions [start, end) in S of the sentence's first candidate n-grams,
    `ngram_weights` float32 1/0 (a slot is 0 when unused, cut off by
    `seq_length`, longer than `max_ngram_tokens`, or the whole sentence, so
    R would be empty).

Sentences with no usable n-gram are dropped. The marked file is read into
memory when the pipeline is built (a malformed line fails naming file and
line).
"""
import dataclasses
import itertools
from typing import Iterator, List, Optional, Tuple

import numpy as np
import tensorflow as tf

from cmlm.data_pipelines import corpus
from cmlm.data_pipelines import graph_map
from cmlm.data_pipelines import text_lines
from cmlm.data_pipelines import tokenization
from cmlm.data_pipelines import vocabulary
from cmlm.projects.misad import pmi_ngrams
from official.core import config_definitions as cfg


@dataclasses.dataclass
class MisadDataConfig(cfg.DataConfig):
  """Sentences marked with PMI n-grams (`python -m cmlm ngrams`).

  Attributes:
    input_path: marked files: a file, a directory (its *.txt), a glob or a
      comma-separated list.
    max_ngrams_per_sentence: candidate n-grams kept per sentence (its first
      ones); the objective chooses one of them per step.
    max_ngram_tokens: a candidate longer than this in WordPiece tokens is not
      used.
  """
  input_path: str = ""
  max_ngrams_per_sentence: int = 4
  max_ngram_tokens: int = 16


def validate_config(params: MisadDataConfig,
                    tokenization_config: tokenization.TokenizationConfig,
                    vocab: Optional[vocabulary.VocabularyFile] = None
                    ) -> None:
  """One clear sentence per problem, before any data is read (`vocab`: the
  tokenization's vocabulary file, already read)."""
  if not params.input_path:
    raise ValueError("MisadDataConfig: input_path is empty; give the marked "
                     "sentences `python -m cmlm ngrams` writes.")
  tokenization_config.check(vocab=vocab)
  if params.max_ngrams_per_sentence < 1:
    raise ValueError("MisadDataConfig: max_ngrams_per_sentence must be 1 or "
                     f"more, got {params.max_ngrams_per_sentence}.")
  if params.max_ngram_tokens < 1:
    raise ValueError("MisadDataConfig: max_ngram_tokens must be 1 or more, "
                     f"got {params.max_ngram_tokens}.")
  if params.global_batch_size < 1:
    raise ValueError("MisadDataConfig: global_batch_size must be 1 or more.")
  corpus.expand_path_spec(params.input_path)  # fails on a missing path


def read_marked_sentences(path_spec: str, max_ngrams: int
                          ) -> Tuple[List[str], np.ndarray]:
  """The sentences (words joined by spaces) and their word spans
  `[sentences, max_ngrams, 2]` (-1 in unused slots) of marked files."""
  texts, all_spans = [], []
  for text, spans in _marked_sentences(path_spec, max_ngrams):
    texts.append(text)
    all_spans.append(spans)
  return texts, np.stack(all_spans)


def sample_marked_sentences(path_spec: str, max_sentences: int) -> List[str]:
  """The first `max_sentences` marked sentences (for the checks before
  training); fails like `read_marked_sentences` on files without one."""
  return [text for text, _ in itertools.islice(
      _marked_sentences(path_spec, 1), max_sentences)]


def _marked_sentences(path_spec: str, max_ngrams: int
                      ) -> Iterator[Tuple[str, np.ndarray]]:
  """Each sentence with a marked n-gram and its padded spans, in file
  order; an error names the file and line, or that there is none."""
  found = False
  for path in corpus.expand_path_spec(path_spec):
    with open(path, "rb") as f:
      for number, raw in enumerate(text_lines.iter_lines(f), start=1):
        try:
          line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
          words, spans = pmi_ngrams.parse_marked(line)
        except (UnicodeDecodeError, ValueError) as error:
          reason = ("is not UTF-8 text" if isinstance(error,
                                                      UnicodeDecodeError)
                    else str(error))
          raise ValueError(f"{path}, line {number}: {reason}; expected a "
                           "sentence marked by `python -m cmlm ngrams`."
                           ) from None
        if not words or not spans:
          continue
        padded = np.full([max_ngrams, 2], -1, np.int32)
        for slot, span in enumerate(spans[:max_ngrams]):
          padded[slot] = span
        found = True
        yield " ".join(words), padded
  if not found:
    raise ValueError(f"{path_spec} holds no sentence with a marked n-gram.")


def encode_marked(tokenizer: tokenization.WordPieceTokenizer, text, spans,
                  max_ngram_tokens: int):
  """One marked sentence -> S's encoder inputs and its candidates' token
  spans (see the module docstring). `text` scalar string; `spans` `[K, 2]`."""
  seq_length = tokenizer.seq_length
  words = tf.strings.split(text)  # [words]
  # [words, (pieces)]: each word on its own, so spans map onto tokens.
  pieces = tokenizer.tokenize_words(words).merge_dims(-2, -1)
  lengths = tf.cast(pieces.row_lengths(), tf.int32)
  # Token position of each word in the packed S (after [CLS]), then the end.
  offsets = tf.concat([[0], tf.cumsum(lengths)], 0) + 1
  tokens = pieces.flat_values
  num_kept = tf.minimum(tf.size(tokens), seq_length - 2)
  packed = tokenizer.pack(tf.RaggedTensor.from_row_lengths(
      tokens, [tf.size(tokens, out_type=tf.int64)]))
  used = spans[:, 0] >= 0
  safe = tf.maximum(spans, 0)
  starts = tf.gather(offsets, safe[:, 0])
  ends = tf.gather(offsets, safe[:, 1])
  length = ends - starts
  usable = (used & (ends <= num_kept + 1) & (length >= 1) &
            (length <= max_ngram_tokens) & (length < num_kept))
  features = {name: value[0] for name, value in packed.items()}
  features.update(
      ngram_starts=tf.where(usable, starts, 0),
      ngram_ends=tf.where(usable, ends, 0),
      ngram_weights=tf.cast(usable, tf.float32))
  return features


def build_misad_dataset(params: MisadDataConfig,
                        tokenization_config: tokenization.TokenizationConfig,
                        input_context: Optional[tf.distribute.InputContext]
                        = None,
                        vocab: Optional[vocabulary.VocabularyFile] = None
                        ) -> tf.data.Dataset:
  """Batches of MiSAD features (see the module docstring)."""
  validate_config(params, tokenization_config, vocab)
  texts, spans = read_marked_sentences(params.input_path,
                                       params.max_ngrams_per_sentence)
  print(f"MiSAD data ({params.input_path}): {len(texts)} sentences with "
        "marked n-grams", flush=True)
  dataset = tf.data.Dataset.from_tensor_slices((texts, spans))
  if input_context and input_context.num_input_pipelines > 1:
    dataset = dataset.shard(input_context.num_input_pipelines,
                            input_context.input_pipeline_id)
  if params.is_training:
    dataset = dataset.shuffle(len(texts), seed=params.seed,
                              reshuffle_each_iteration=True).repeat()
  tokenizer = tokenization.build_wordpiece_tokenizer(
      tokenization_config, vocab=vocab)
  dataset = graph_map.graph_map(
      dataset, lambda text, span: encode_marked(tokenizer, text, span,
                                                params.max_ngram_tokens),
      num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
  dataset = dataset.filter(lambda f: tf.reduce_any(f["ngram_weights"] > 0))
  batch_size = (input_context.get_per_replica_batch_size(
      params.global_batch_size) if input_context
                else params.global_batch_size)
  dataset = dataset.batch(batch_size, drop_remainder=params.is_training
                          or params.drop_remainder)
  return dataset.prefetch(tf.data.AUTOTUNE)
