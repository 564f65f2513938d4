"""Does the tokenizer fit the text? Casing, and the [UNK] rate on a sample.

A vocabulary of the wrong casing trains without complaint but turns much of
the text into `[UNK]` (a cased vocabulary read with `lower_case=true` lost
82.7% of an English corpus's tokens; the shipped uncased one with
`lower_case=false`, 8.3%), or, where the vocabulary holds every single
character, into pieces of words while its capitalised entries can never be
produced (then the [UNK] rate reads 0% both ways). Before training, `check`
  * refuses a casing mismatch by what it is (`casing_mismatch`): with
    `lower_case=true`, a vocabulary with upper-case letters in more than
    `CASED_VOCABULARY_SHARE` of its entries (lower-cased text never
    produces them); with `lower_case=false`, a vocabulary with (almost) no
    upper-case entry while more than `UPPER_CASE_WORD_SHARE` of the
    sample's words hold upper-case letters;
  * tokenizes a sample of each objective's text (about a thousand
    sentences: a second or two) with the run's tokenization
    (`TokenizationConfig`, paper section 3's WordPiece) and with the other
    `lower_case`, prints the rate, and when it is above `max_unk_rate`
    while the other casing gives far fewer `[UNK]`, refuses too.
Each refusal is one line naming the setting to change. `eval` and `pcr` run
the same check on their inputs as a warning.
"""
import dataclasses
import itertools
from typing import List, Optional, Sequence

import tensorflow as tf

from cmlm.data_pipelines import corpus
from cmlm.data_pipelines import pair_tfrecords
from cmlm.data_pipelines import sentence_splitter
from cmlm.data_pipelines import tokenization
from cmlm.data_pipelines import vocabulary

SAMPLE_SENTENCES = 1000
# With lower_case=true, a vocabulary with upper-case letters in more of its
# entries than this is cased (an uncased one has none, or a symbol like ℝ).
CASED_VOCABULARY_SHARE = 0.01
# With lower_case=false, a vocabulary with upper-case letters in at most
# this share of its entries is uncased, and text with upper-case letters in
# more than `UPPER_CASE_WORD_SHARE` of its words does not fit it.
UNCASED_VOCABULARY_SHARE = 0.001
UPPER_CASE_WORD_SHARE = 0.01
_EXAMPLES = 3
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
            sentences: Sequence[str],
            vocab: Optional[vocabulary.VocabularyFile] = None) -> UnkRate:
  """The [UNK] rate of `sentences` under `config`, and with `lower_case`
  flipped. `vocab`: `config.vocab_file` already read."""
  sentences = [s for s in sentences if s.strip()]
  vocab = vocabulary.read_vocabulary(config.vocab_file, vocab)
  rates = []
  for lower_case in (config.lower_case, not config.lower_case):
    tokenizer = tokenization.WordPieceTokenizer(
        config.vocab_file, config.seq_length, lower_case=lower_case,
        text_normalization=config.text_normalization, vocab=vocab)
    unknown, total = _rate(tokenizer, sentences)
    rates.append((unknown / total if total else 0.0, total))
  return UnkRate(rates[0][0], rates[1][0], rates[0][1], len(sentences))


def check(config: tokenization.TokenizationConfig, sentences: Sequence[str],
          source: str, refuse: bool = True,
          owner: str = "task.tokenization",
          verbose: bool = True,
          vocab: Optional[vocabulary.VocabularyFile] = None
          ) -> Optional[UnkRate]:
  """Prints the [UNK] rate of `sentences` (text of `source`) and acts on it.

  A casing mismatch (`casing_mismatch`, or a rate above
  `config.max_unk_rate` that the other casing would halve): raises
  ValueError (`refuse`) or prints a warning. A rate above the limit
  otherwise: a warning (the vocabulary does not cover the text). `verbose`:
  print the rate even when all is well. Returns None for no sentences (the
  vocabulary's own casing is still checked). `vocab`: `config.vocab_file`
  already read (`vocabulary.read_vocabulary`).
  """
  result = measure(config, sentences, vocab) if sentences else None
  casing = "true" if config.lower_case else "false"
  other = "false" if config.lower_case else "true"
  if verbose and result and result.tokens:
    print(f"[UNK] tokens: {100 * result.rate:.1f}% of {result.tokens} in "
          f"{result.sentences} sentences of {source} ({owner}.lower_case="
          f"{casing}; {100 * result.other_casing_rate:.1f}% with {other}).",
          flush=True)
  limit = config.max_unk_rate
  message = casing_mismatch(config, sentences or (), source, owner, vocab)
  if (message is None and result and result.tokens and
      result.casing_mismatch_suspected(limit)):
    message = (
        f"{100 * result.rate:.1f}% of the tokens of {source} are [UNK] with "
        f"{owner}.lower_case={casing} (the limit {owner}.max_unk_rate is "
        f"{100 * limit:g}%), {100 * result.other_casing_rate:.1f}% with "
        f"{other}: the vocabulary {config.vocab_file} looks "
        f"{'cased' if config.lower_case else 'uncased'}; set "
        f"{owner}.lower_case={other}.")
  if message:
    if refuse:
      raise ValueError(message)
    print(f"Warning: {message}", flush=True)
  elif result and result.tokens and result.rate > limit:
    print(f"Warning: {100 * result.rate:.1f}% of the tokens of {source} are "
          f"[UNK] (above {owner}.max_unk_rate={limit:g}); the vocabulary "
          f"{config.vocab_file} covers this text poorly.", flush=True)
  return result


def casing_mismatch(config: tokenization.TokenizationConfig,
                    sentences: Sequence[str], source: str,
                    owner: str = "task.tokenization",
                    vocab: Optional[vocabulary.VocabularyFile] = None
                    ) -> Optional[str]:
  """Why the vocabulary's casing cannot fit `config.lower_case` (one line
  naming the setting to change), or None.

  lower_case=true: the vocabulary is cased when more than
  `CASED_VOCABULARY_SHARE` of its entries (special tokens aside) hold
  upper-case letters, which lower-cased text never produces. lower_case=
  false: an uncased vocabulary (at most `UNCASED_VOCABULARY_SHARE` such
  entries) does not fit `sentences` (text of `source`) when more than
  `UPPER_CASE_WORD_SHARE` of their words hold upper-case letters.
  `config.max_unk_rate` 1 turns this off. `vocab`: `config.vocab_file`
  already read.
  """
  if not config.vocab_file or config.max_unk_rate >= 1:
    return None
  entries = [token[2:] if token.startswith("##") else token
             for token in vocabulary.read_vocabulary(config.vocab_file,
                                                     vocab).tokens
             if not (token.startswith("[") and token.endswith("]"))]
  upper = [token for token in entries if _has_upper_case(token)]
  share = len(upper) / max(len(entries), 1)
  if config.lower_case and share > CASED_VOCABULARY_SHARE:
    return (f"{len(upper)} of the {len(entries)} entries of the vocabulary "
            f"{config.vocab_file} ({100 * share:.1f}%, e.g. "
            f"{', '.join(map(repr, upper[:_EXAMPLES]))}) hold upper-case "
            f"letters, which {owner}.lower_case=true never produces: the "
            f"vocabulary is cased; set {owner}.lower_case=false.")
  if config.lower_case or share > UNCASED_VOCABULARY_SHARE:
    return None
  words = [word for sentence in sentences for word in sentence.split()]
  capitalised = [word for word in words if _has_upper_case(word)]
  word_share = len(capitalised) / max(len(words), 1)
  if word_share <= UPPER_CASE_WORD_SHARE:
    return None
  return (f"{100 * word_share:.1f}% of the words of {source} hold "
          f"upper-case letters (e.g. "
          f"{', '.join(map(repr, capitalised[:_EXAMPLES]))}), but the "
          f"vocabulary {config.vocab_file} is uncased ({len(upper)} of its "
          f"{len(entries)} entries hold any): with {owner}.lower_case=false "
          f"such words become [UNK]; set {owner}.lower_case=true.")


def _has_upper_case(text: str) -> bool:
  return any(character.isupper() for character in text)


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
