"""Seeded fuzzed text for tokenizer equality tests, and a vocabulary for it.

`fuzz_strings(count, seed, words)` mixes words drawn from character pools
(ASCII, accented Latin and combining marks, Greek, Cyrillic, Cherokee, CJK,
kana and Hangul, Arabic / Devanagari / Thai / Hebrew, emoji with ZWJ,
skin tones and flags, ASCII and C1 controls and format characters, Unicode
spaces, compatibility forms, private use, and any character Unicode 3.2
already had), `words` (in either casing), very long words (40-160
characters, in any pool: past TF Text's 100 bytes in some scripts well
before 100 characters) and empty strings. Characters are taken from old
Unicode versions or fixed ranges so that every library's tables know them.
`fuzz_vocab` writes a WordPiece vocabulary covering a sample of every pool
in its cased, lower-cased, case-folded and accent-stripped forms (and as
`##` continuations), so that words are cut into pieces, not only [UNK].
"""
import random
import unicodedata
from typing import List, Sequence, Tuple

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "sentence", "un", "believ", "able", "stop", "ing", "ed", "s",
         "привет", "мир", "東京", "ελληνικά", "straße", "[CLS]", "[MASK]",
         "[unused1]"]


def _chars(*ranges) -> List[str]:
  return [chr(code) for start, end in ranges for code in range(start, end + 1)]


def _known_since_3_2(character: str) -> bool:
  category = unicodedata.category(character)
  return category != "Cn" and (
      unicodedata.ucd_3_2_0.category(character) == category)


POOLS = {
    "ascii": _chars((0x20, 0x7E)),
    "latin": _chars((0xC0, 0x24F), (0x1E00, 0x1EFF)) + list("ßẞİıǅǆǄÅµſﬀﬁﬂ"),
    "combining": _chars((0x300, 0x36F)),
    "greek": _chars((0x370, 0x3FF), (0x1F00, 0x1FFE)),
    "cyrillic": _chars((0x400, 0x4FF), (0x1C80, 0x1C88)),
    "cherokee": _chars((0x13A0, 0x13F5), (0xAB70, 0xABBF)),
    "cjk": _chars((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF),
                  (0xF900, 0xFAFF)),
    "kana_hangul": _chars((0x3040, 0x30FF), (0xAC00, 0xD7A3),
                          (0x3000, 0x303F), (0xFF01, 0xFF9F)),
    "scripts": _chars((0x600, 0x6FF), (0x900, 0x97F), (0xE00, 0xE7F),
                      (0x5D0, 0x5EA)),
    "emoji": _chars((0x1F300, 0x1F64F), (0x1F900, 0x1F9FF), (0x1F3FB, 0x1F3FF),
                    (0x1F1E6, 0x1F1FF), (0x2600, 0x27BF)) + [
                        "\u200d", "\ufe0f"],
    "controls": _chars((0x0, 0x1F), (0x7F, 0x9F)) + list(
        "\u00ad\u200b\u200c\u200d\u200e\u200f\u2028\u2029\u202a\u202e\u2060"
        "\u2061\ufeff\ufffd\U000e0001\U000e0041\u061c\u180e\u034f"),
    "spaces": list("\u00a0\u1680\u2000\u2001\u2002\u2003\u2009\u200a\u202f"
                   "\u205f\u3000\t\n\r \x0b\x0c\x85"),
    "compat": _chars((0x2460, 0x2473), (0xFB00, 0xFB06), (0x2150, 0x218F),
                     (0x3300, 0x33FF), (0x1D400, 0x1D47F)),
    "private": _chars((0xE000, 0xE0FF)),
    "unicode_3_2": [chr(code) for code in range(0x20, 0x30000)
                    if not 0xD800 <= code <= 0xDFFF
                    and _known_since_3_2(chr(code))],
}
_NAMES = sorted(POOLS)
_SEPARATORS = [" ", " ", " ", "", "\t", "\n", "  ", "\u3000", "\u00a0"]


def fuzz_strings(count: int, seed: int = 0,
                 words: Sequence[str] = WORDS) -> List[str]:
  """`count` strings (module docstring), the same for the same seed."""
  rng = random.Random(seed)
  strings = []
  for _ in range(count):
    if rng.random() < 0.02:
      strings.append("")
      continue
    parts = []
    for _ in range(rng.randint(1, 12)):
      if words and rng.random() < 0.3:
        word = rng.choice(words)
        parts.append(word.upper() if rng.random() < 0.3 else word)
      else:
        length = (rng.randint(40, 160) if rng.random() < 0.05 else
                  min(int(rng.expovariate(0.25)) + 1, 30))
        if rng.random() < 0.5:  # one script
          pool = POOLS[rng.choice(_NAMES)]
          parts.append("".join(rng.choice(pool) for _ in range(length)))
        else:  # mixed
          parts.append("".join(rng.choice(POOLS[rng.choice(_NAMES)])
                               for _ in range(length)))
      parts.append(rng.choice(_SEPARATORS))
    strings.append("".join(parts))
  return strings


def _forms(character: str) -> Tuple[str, ...]:
  stripped = "".join(c for c in unicodedata.normalize("NFD", character.lower())
                     if unicodedata.category(c) != "Mn")
  return (character, character.lower(), character.upper(),
          character.casefold(),
          unicodedata.normalize("NFKC", character).casefold(), stripped)


def fuzz_vocab(path: str, seed: int = 1, words: Sequence[str] = WORDS
               ) -> List[str]:
  """Writes the vocabulary (module docstring) to `path`; returns it."""
  rng = random.Random(seed)
  body = set(word.lower() for word in words if not word.startswith("["))
  for pool in POOLS.values():
    for character in rng.sample(pool, min(len(pool), 400)):
      body.update(form for form in _forms(character)
                  if form and not any(c.isspace() for c in form))
  vocab = list(SPECIAL)
  for token in sorted(body):
    vocab += [token, "##" + token]
  vocab = list(dict.fromkeys(vocab))
  with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join(vocab) + "\n")
  return vocab

