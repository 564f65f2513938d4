"""A cased multilingual WordPiece vocabulary with language smoothing (4.4).

"A new cased vocabulary is built from all data sources using the WordPiece
vocabulary generation library from Tensorflow Text. The language smoothing
exponent from the vocab generation tool is set to 0.3, as the distribution of
data size for each language is imbalanced." Language l holds a share p_l of
all words; its word counts are rescaled so that its share becomes
p_l^alpha / sum_k p_k^alpha (alpha = 1: as is; alpha = 0: every language
equal), then TF Text's WordPiece learner runs on the merged counts.
"""
import collections
from typing import Dict, Iterable, List, Mapping

import tensorflow as tf

from cmlm.data_pipelines import corpus
from cmlm.data_pipelines import text_lines
from cmlm.data_pipelines import vocabulary


def check_smoothing_exponent(smoothing_exponent: float) -> None:
  if not 0 <= smoothing_exponent <= 1:
    raise ValueError(f"smoothing_exponent={smoothing_exponent} must be in "
                     "[0, 1].")


def language_weights(word_totals: Mapping[str, int],
                     smoothing_exponent: float) -> Dict[str, float]:
  """Factor for each language's word counts, giving shares p_l^a / sum p^a."""
  check_smoothing_exponent(smoothing_exponent)
  total = sum(word_totals.values())
  shares = {lang: n / total for lang, n in word_totals.items() if n}
  smoothed = {lang: p ** smoothing_exponent for lang, p in shares.items()}
  norm = sum(smoothed.values())
  return {lang: smoothed[lang] / norm / shares[lang] for lang in shares}


def _word_counts(texts: Iterable[str], lower_case: bool) -> collections.Counter:
  from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner  # pylint: disable=g-import-not-at-top
  from tensorflow_text.python.ops import bert_tokenizer  # pylint: disable=g-import-not-at-top
  # The word splitting of the BERT tokenizer, as bert_vocab_from_dataset does.
  tokenizer = bert_tokenizer.BasicTokenizer(lower_case=lower_case)
  texts = list(texts)
  if not any(text_lines.has_visible_text(text) for text in texts):
    return collections.Counter()  # the learner's count fails on no word
  dataset = tf.data.Dataset.from_tensor_slices(tf.constant(texts))
  try:
    return learner.count_words(dataset.batch(1024).map(tokenizer.tokenize))
  except StopIteration:  # no word survived the tokenizer
    return collections.Counter()


def build_multilingual_vocab(language_texts: Mapping[str, Iterable[str]],
                             vocab_size: int, smoothing_exponent: float = 0.3,
                             lower_case: bool = False) -> List[str]:
  """Learns one vocabulary from per-language texts, smoothing their sizes."""
  from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner  # pylint: disable=g-import-not-at-top
  counts = {lang: _word_counts(texts, lower_case)
            for lang, texts in language_texts.items()}
  totals = {lang: sum(c.values()) for lang, c in counts.items()}
  empty = [lang for lang, total in totals.items() if not total]
  if empty:
    raise vocabulary.VocabularyError(
        f"No word for language(s) {', '.join(empty)}: their text is empty "
        "or only white space and control characters; no vocabulary was "
        "written.")
  weights = language_weights(totals, smoothing_exponent)
  merged = collections.Counter()
  for lang, language_counts in counts.items():
    for word, count in language_counts.items():
      merged[word] += count * weights[lang]
  # The learner works on integer counts; keep at least 1 for a seen word.
  merged = {word: max(1, round(count)) for word, count in merged.items()}
  vocab = learner.learn(merged, vocab_size, list(vocabulary.SPECIAL_TOKENS),
                        lower_thresh=1)
  vocabulary.check_vocab(vocab, "The learned vocabulary")
  return vocab


def build_vocab_from_language_corpora(spec: str, output_path: str,
                                      vocab_size: int,
                                      smoothing_exponent: float = 0.3,
                                      lower_case: bool = False,
                                      skip_invalid_lines: bool = False
                                      ) -> List[str]:
  """`python -m cmlm vocab --input=en=...,de=...`: prints progress, writes.
  A language whose corpus holds no word is refused, naming the corpus; a
  size or exponent out of range, before any is read."""
  vocabulary.check_vocab_size(vocab_size)
  check_smoothing_exponent(smoothing_exponent)
  texts = {}
  for lang, path_spec in corpus.parse_language_corpora(spec).items():
    texts[lang] = list(corpus.read_documents(
        path_spec, skip_invalid_lines=skip_invalid_lines,
        how_to_skip="pass --skip_invalid_lines"))
    vocabulary.check_has_words(texts[lang], f"{lang}={path_spec}")
    print(f"{lang}: {len(texts[lang])} documents from {path_spec}",
          flush=True)
  print(f"Learning a {'uncased' if lower_case else 'cased'} WordPiece "
        f"vocabulary of up to {vocab_size} tokens over {len(texts)} languages "
        f"(smoothing exponent {smoothing_exponent}) ...", flush=True)
  vocab = build_multilingual_vocab(texts, vocab_size, smoothing_exponent,
                                   lower_case)
  vocabulary.write_vocab(vocab, output_path)
  print(f"Wrote {len(vocab)} tokens to {output_path}.", flush=True)
  return vocab
