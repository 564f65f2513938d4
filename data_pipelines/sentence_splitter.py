"""Rule-based sentence splitter for building (s1, s2) pairs.

CMLM (Yang et al., 2021, sections 2-3) trains on pairs of consecutive
sentences, so running text has to be cut into sentences first. This splitter
is deliberately small and predictable: it cuts after `.`, `!` or `?`
(optionally followed by closing quotes or brackets) when whitespace and then
an uppercase letter, a digit or an opening quote follow, and it keeps common
abbreviations (Mr., Mrs., Dr., St., e.g., i.e., etc.) and initials (J. K.)
inside their sentence. It understands curly quotes as used in Project
Gutenberg texts.
"""
import re
from typing import List

# Words that end with a period without ending the sentence. Compared in lower
# case, without the final period.
ABBREVIATIONS = frozenset([
    'mr', 'mrs', 'ms', 'messrs', 'mme', 'mlle', 'dr', 'prof', 'rev', 'hon',
    'st', 'sr', 'jr', 'capt', 'col', 'gen', 'lt', 'sgt', 'maj', 'gov', 'sen',
    'rep', 'pres', 'esq', 'e.g', 'i.e', 'etc', 'viz', 'cf', 'vs', 'al',
    'fig', 'vol', 'pp', 'ch', 'art', 'sec', 'jan', 'feb', 'mar', 'apr', 'jun',
    'jul', 'aug', 'sep', 'sept', 'oct', 'nov', 'dec', 'inc', 'ltd', 'co',
    'corp', 'mt', 'ft', 'approx',
])

_OPENING_QUOTES = '"\'“‘(['
_OPENERS = _OPENING_QUOTES + '_*'
_CLOSING_QUOTES = '"\'”’)]'

# A sentence terminator run, its closing quotes or brackets, then whitespace.
# A match starts only where a run starts (the lookbehind): otherwise a long
# run of periods with no whitespace after it would be rescanned from each of
# its characters, quadratic time (a hang on a line of "....").
_BOUNDARY = re.compile(
    r'(?<![.!?])([.!?]+)([' + re.escape(_CLOSING_QUOTES) + r']*)\s+')
# Dotted acronyms such as "U.S" or "a.m" (the final period is not included).
_DOTTED_ACRONYM = re.compile(r'^(?:[^\W\d_]\.)+[^\W\d_]$')
_WHITESPACE = re.compile(r'\s+')
# Longer than any abbreviation or dotted acronym worth keeping.
_LONGEST_WORD = 64


def normalize_whitespace(text: str) -> str:
  """Collapses every run of whitespace (newlines, tabs, NBSP) to one space."""
  return _WHITESPACE.sub(' ', text).strip()


def _starts_sentence(text: str, index: int) -> bool:
  """True if an uppercase letter or digit starts at `index`, after openers.

  Opening quotes and brackets, and the `_` that marks italics in Project
  Gutenberg texts, may come first: `“_You_ want`.
  """
  while index < len(text) and text[index] in _OPENERS:
    index += 1
  return index < len(text) and (text[index].isupper() or text[index].isdigit())


def _is_abbreviation(text_before_period: str) -> bool:
  """True if the word that ends `text_before_period` is an abbreviation."""
  word = text_before_period.rsplit(' ', 1)[-1].lstrip(_OPENING_QUOTES)
  if not word:
    return False
  if word.lower() in ABBREVIATIONS or _DOTTED_ACRONYM.match(word):
    return True
  # A single capital letter is an initial ("J. K. Rowling"). "I" is left out:
  # "so did I. Then" ends a sentence far more often than it names someone.
  return len(word) == 1 and word.isupper() and word != 'I'


def split_sentences(text: str) -> List[str]:
  """Splits running text into sentences.

  Whitespace is normalised first, so hard-wrapped prose and text that is
  already one sentence per line give the same result.

  Args:
    text: any amount of running text.

  Returns:
    The sentences, each stripped, in order; empty for blank text.
  """
  text = normalize_whitespace(text)
  sentences = []
  start = 0
  for match in _BOUNDARY.finditer(text):
    if not _starts_sentence(text, match.end()):
      continue
    terminator, closing = match.group(1), match.group(2)
    # Only the last word counts; a bounded window keeps a long run of
    # abbreviations ("Mr. A Mr. A ...") linear, not quadratic.
    if (terminator == '.' and not closing and _is_abbreviation(
        text[max(start, match.start() - _LONGEST_WORD):match.start()])):
      continue
    sentences.append(text[start:match.end(2)])
    start = match.end()
  if start < len(text):
    sentences.append(text[start:])
  return sentences
