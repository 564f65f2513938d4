"""Rule-based sentence splitter for building (s1, s2) pairs.

CMLM (Yang et al., 2021, sections 2-3 and, for many languages, 4.1) trains on
consecutive sentences, so running text has to be cut into sentences first.
This splitter is deliberately small and predictable, per script:

* `.`, `!`, `?` and the ends of scripts written with spaces -- Devanagari
  `।` `॥`, Arabic `؟` and Urdu `۔`, the Greek question mark `;` (U+037E, or
  `;` after a Greek letter), the Armenian full stop `։` (or `:` after an
  Armenian letter), `…` -- end a sentence when whitespace follows and then
  an uppercase letter, a digit, an opening quote, or a letter of a script
  without case (Devanagari, Arabic, Hebrew, Thai, CJK...) or whose
  sentences start in lower case (Georgian Mkhedruli). In the other cased
  scripts (Latin, Cyrillic, Greek, Armenian) a lower-case word after a
  period goes on the sentence ("etc. and", "т. е. каждый"; in UDHR's Russian
  and Ukrainian every lower-case word after an end mark follows a `;`).
* The CJK and Ethiopic ends `。！？｡．` `።፧` need no whitespace: Chinese and
  Japanese are written without spaces, and anything may follow.
* Closing quotes or brackets after the end stay with the sentence; common
  abbreviations (Mr., Mrs., Dr., St., e.g., i.e., etc.) and initials (J. K.)
  stay inside their sentence. It understands curly quotes as used in Project
  Gutenberg texts and CJK corner brackets.
"""
import re
import unicodedata
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

_OPENING_QUOTES = '"\'“‘([«„「『（《【'
_OPENERS = _OPENING_QUOTES + '_*'
_CLOSING_QUOTES = '"\'”’)]»」』）》】'

# Ends that need whitespace after them (scripts written with spaces).
_SPACED_ENDS = '.!?…।॥؟۔\u037e։'
# Ends of scripts written without spaces: CJK and Ethiopic.
_UNSPACED_ENDS = '。！？｡።፧'
# Punctuation that ends a sentence only after a letter of one script: `;` is
# the Greek question mark, `:` an Armenian full stop (typed for `։`).
_SCRIPT_ENDS = {';': 'GREEK', ':': 'ARMENIAN'}
# Scripts whose sentences start with lower-case letters: Georgian writes in
# Mkhedruli, which Unicode counts as lower case (Mtavruli is its upper case).
_LOWER_CASE_START_SCRIPTS = ('GEORGIAN',)
_ENDS = _SPACED_ENDS + _UNSPACED_ENDS + ''.join(_SCRIPT_ENDS)

# A sentence end run, its closing quotes or brackets, then any whitespace.
# A match starts only where a run starts (the lookbehind): otherwise a long
# run of periods with no whitespace after it would be rescanned from each of
# its characters, quadratic time (a hang on a line of "....").
_BOUNDARY = re.compile(
    r'(?<![' + re.escape(_ENDS) + r'])([' + re.escape(_ENDS) + r']+)([' +
    re.escape(_CLOSING_QUOTES) + r'፡]*)(\s*)')
# Dotted acronyms such as "U.S" or "a.m" (the final period is not included).
_DOTTED_ACRONYM = re.compile(r'^(?:[^\W\d_]\.)+[^\W\d_]$')
_WHITESPACE = re.compile(r'\s+')
# Longer than any abbreviation or dotted acronym worth keeping.
_LONGEST_WORD = 64


def normalize_whitespace(text: str) -> str:
  """Collapses every run of whitespace (newlines, tabs, NBSP) to one space."""
  return _WHITESPACE.sub(' ', text).strip()


def _starts_sentence(text: str, index: int) -> bool:
  """True if a sentence may start at `index`, after openers.

  That is an uppercase letter, a digit, or a letter of a script without case
  (neither upper nor lower case: Devanagari, Arabic, CJK...). Opening quotes
  and brackets, and the `_` that marks italics in Project Gutenberg texts,
  may come first: `“_You_ want`.
  """
  while index < len(text) and text[index] in _OPENERS:
    index += 1
  if index >= len(text):
    return False
  char = text[index]
  return (char.isupper() or char.isdigit() or
          (char.isalpha() and not char.islower()) or
          (char.islower() and unicodedata.name(char, '').startswith(
              _LOWER_CASE_START_SCRIPTS)))


def _is_script_end(terminator: str, text_before: str) -> bool:
  """True unless `terminator` is `;` or `:` and the letter before it is not
  of the script where it ends a sentence (Greek `;`, Armenian `:`)."""
  script = _SCRIPT_ENDS.get(terminator[0])
  if script is None:
    return all(char not in _SCRIPT_ENDS for char in terminator)
  if terminator != terminator[0] or not text_before:
    return False
  return unicodedata.name(text_before[-1], '').startswith(script)


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
    terminator, closing, space = match.groups()
    if match.end() == len(text):
      break
    if not _is_script_end(terminator, text[max(start, match.start() - 1):
                                           match.start()]):
      continue
    unspaced = all(char in _UNSPACED_ENDS for char in terminator)
    if not unspaced and not (space and _starts_sentence(text, match.end())):
      continue
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
