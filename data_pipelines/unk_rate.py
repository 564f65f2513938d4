"""Does the tokenizer fit the text? The [UNK] rate on a sample, both casings.

A vocabulary of the wrong casing trains without complaint but turns much of
the text into `[UNK]` (a cased vocabulary read with `lower_case=true` lost
82.7% of an English corpus's tokens; the shipped uncased one with
`lower_case=false`, 8.3%). Before training, `check` tokenizes a sample of
each objective's text (about a thousand sentences: a second or two) with the
run's tokenization (`TokenizationConfig`, paper section 3's WordPiece) and
with the other `lower_case`, prints the rate, and when it is above
`max_unk_rate` while the other casing gives far fewer `[UNK]`, refuses in
one line naming the setting to change. `eval` and `pcr` run the same check
on their inputs as a warning.
"""
import dataclasses
import itertools
from typing import List, Optional, Sequence

import tensorflow as tf

from cmlm.data_pipelines import corpus
from cmlm.data_pipelines import pair_tfrecords
from cmlm.data_pipelines import sentence_splitter
from cmlm.data_pipelines import tokenization

SAMPLE_SENTENCES = 1000
# The other casing must at least halve the [UNK] rate for a casing mismatch
# to be suspected (rather than a vocabulary that does not fit the text).
MISMATCH_FACTOR = 0.5
_BATCH = 256
MAX_SAMPLED_FILES = 50


@dataclasses.dataclass
class UnkRate:
  """[UNK] tokens per token on a sample, with the run's casing and the other."""
  rate: float
  other_casing_rate: float
  tokens: int
  sentences: int

  def casing_mismatch_suspected(self, max_unk_rate: float) -> bool:
    return (self.rate > max_unk_rate and
            self.other_casing_rate < MISMATCH_FACTOR * self.rate)


def _rate(tokenizer: tokenization.WordPieceTokenizer,
          sentences: Sequence[str]):
  unknown = total = 0
  for start in range(0, len(sentences), _BATCH):
    ids = tokenizer.tokenize(tf.constant(list(sentences[start:start + _BATCH]),
                                         tf.string)).flat_values
    total += int(tf.size(ids))
    unknown += int(tf.reduce_sum(tf.cast(tf.equal(ids, tokenizer.unk_id),
                                         tf.int64)))
  return unknown, total


def measure(config: tokenization.TokenizationConfig,
            sentences: Sequence[str]) -> UnkRate:
  """The [UNK] rate of `sentences` under `config`, and with `lower_case`
  flipped."""
  sentences = [s for s in sentences if s.strip()]
  rates = []
  for lower_case in (config.lower_case, not config.lower_case):
    tokenizer = tokenization.WordPieceTokenizer(
        config.vocab_file, config.seq_length, lower_case=lower_case,
        text_normalization=config.text_normalization)
    unknown, total = _rate(tokenizer, sentences)
    rates.append((unknown / total if total else 0.0, total))
  return UnkRate(rates[0][0], rates[1][0], rates[0][1], len(sentences))


def check(config: tokenization.TokenizationConfig, sentences: Sequence[str],
          source: str, refuse: bool = True,
          owner: str = "task.tokenization",
          verbose: bool = True) -> Optional[UnkRate]:
  """Prints the [UNK] rate of `sentences` (text of `source`) and acts on it.

  Above `config.max_unk_rate` with a casing mismatch suspected: raises
  ValueError (`refuse`) or prints a warning. Above it otherwise: a warning
  (the vocabulary does not cover the text). `verbose`: print the rate even
  when all is well. Returns None for no sentences.
  """
  if not sentences:
    return None
  result = measure(config, sentences)
  if not result.tokens:
    return result
  casing = "true" if config.lower_case else "false"
  other = "false" if config.lower_case else "true"
  if verbose:
    print(f"[UNK] tokens: {100 * result.rate:.1f}% of {result.tokens} in "
          f"{result.sentences} sentences of {source} ({owner}.lower_case="
          f"{casing}; {100 * result.other_casing_rate:.1f}% with {other}).",
          flush=True)
  limit = config.max_unk_rate
  if result.casing_mismatch_suspected(limit):
    message = (
        f"{100 * result.rate:.1f}% of the tokens of {source} are [UNK] with "
        f"{owner}.lower_case={casing} (the limit {owner}.max_unk_rate is "
        f"{100 * limit:g}%), {100 * result.other_casing_rate:.1f}% with "
        f"{other}: the vocabulary {config.vocab_file} looks "
        f"{'cased' if config.lower_case else 'uncased'}; set "
        f"{owner}.lower_case={other}.")
    if refuse:
      raise ValueError(message)
    print(f"Warning: {message}", flush=True)
  elif result.rate > limit:
    print(f"Warning: {100 * result.rate:.1f}% of the tokens of {source} are "
          f"[UNK] (above {owner}.max_unk_rate={limit:g}); the vocabulary "
          f"{config.vocab_file} covers this text poorly.", flush=True)
  return result


def sample_corpus(input_path: str, max_sentences: int = SAMPLE_SENTENCES,
                  split: str = "all", heldout_percent: int = 0,
                  skip_invalid_lines: bool = False) -> List[str]:
  """About `max_sentences` sentences of a text corpus: the first ones of up
  to `MAX_SAMPLED_FILES` of its files, spread over them (or of TFRecord pair
  files: both sentences of the first pairs)."""
  files = corpus.expand_path_spec(input_path)
  if any(map(pair_tfrecords.is_pair_tfrecord_file, files)):
    serialized = tf.data.TFRecordDataset(files).take(
        (max_sentences + 1) // 2).batch(_BATCH)
    sentences = []
    for batch in serialized:
      for side in pair_tfrecords.parse_pair_examples(batch):
        sentences.extend(t.decode("utf-8", "replace") for t in side.numpy())
    return sentences[:max_sentences]
  files = files[::-(-len(files) // MAX_SAMPLED_FILES)]  # evenly spread
  per_file = -(-max_sentences // len(files))
  sentences = []
  for path in files:
    taken = []
    for document in corpus.select_split(
        corpus._file_documents(path, corpus.CorpusStats(), skip_invalid_lines),  # pylint: disable=protected-access
        split, heldout_percent):
      taken.extend(sentence_splitter.split_sentences(document))
      if len(taken) >= per_file:
        break
    sentences.extend(taken[:per_file])
  return sentences[:max_sentences]


def sides(pairs, max_sentences: int = SAMPLE_SENTENCES) -> List[str]:
  """Both texts of the first pairs of an iterable, `max_sentences` in all."""
  sentences = []
  for pair in itertools.islice(pairs, (max_sentences + 1) // 2):
    sentences.extend(pair[:2])
  return sentences[:max_sentences]
