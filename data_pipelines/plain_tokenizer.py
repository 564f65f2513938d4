"""The garden's tokenization in plain Python: no TensorFlow.

    tokenizer = PlainTokenizer(vocab, seq_length=256, lower_case=True,
                               text_normalization="tf_text")
    ids = tokenizer.encode(["A sentence.", ""])  # [[CLS] ... [SEP]] per row

gives the token ids `tokenization.WordPieceTokenizer.tokenize_and_pack` gives
(the same normalisation, word splitting, WordPiece, truncation and
`[CLS] ... [SEP]`), one unpadded list a sentence. The TFLite and ONNX
artifacts (`export/artifacts.py`) take token ids, not text: their runtime
(`inference/artifact_runtime.py`) tokenizes with this, so that they load with
their runtime and the vocabulary they carry, and so that a call at batch 1
costs tens of microseconds, not a TensorFlow call (~0.3 ms).

It follows TF Text's `BertTokenizer` as `tokenization.py` configures it:

  * "tf_text" uncased: ICU's NFKC case folding (default-ignorable characters
    dropped, NFKC, case fold, NFKC), NFD, nonspacing marks (Mn) removed;
  * "huggingface": `tokenization.huggingface_normalize` (tabs, line ends and
    Unicode spaces become spaces; other controls, format, private-use
    characters and U+FFFD are dropped; uncased: NFD, Mn removed, lower case);
  * then control and format characters (Cc, Cf) become spaces, words are cut
    at RE2's `\\s` ([\\t\\n\\f\\r ]), and every punctuation character (ASCII
    symbols and Unicode P*) and CJK ideograph is a word of its own;
  * WordPiece, greedy longest match first, `##` continuations; a word longer
    than 100 UTF-8 bytes, or one that cannot be cut into known pieces, is
    `[UNK]`.

Unicode tables are Python's `unicodedata` (RE2 and ICU may be a version
apart: a character assigned in between can differ); equality with the TF
tokenizer is tested on mixed text (tests/data_pipelines/test_plain_tokenizer.py).
"""
import functools
import re
import sys
import unicodedata
from typing import Dict, List, Sequence

PAD, UNK, CLS, SEP = "[PAD]", "[UNK]", "[CLS]", "[SEP]"
TEXT_NORMALIZATIONS = ("tf_text", "huggingface")


def check_settings(seq_length: int, text_normalization: str) -> None:
  """One ValueError line for a tokenization no tokenizer of the garden takes
  (this one and `tokenizer_json`'s)."""
  if text_normalization not in TEXT_NORMALIZATIONS:
    raise ValueError(f"text_normalization must be one of "
                     f"{', '.join(TEXT_NORMALIZATIONS)}, got "
                     f"{text_normalization!r}.")
  if seq_length < 3:
    raise ValueError(f"seq_length={seq_length} leaves no room for a token "
                     "between [CLS] and [SEP]; use 3 or more.")
MAX_BYTES_PER_WORD = 100  # TF Text's WordpieceTokenizer default
SUFFIX = "##"
_CACHE_LIMIT = 1 << 16  # words remembered with their pieces

# Default_Ignorable_Code_Point (Unicode's DerivedCoreProperties.txt): what
# ICU's NFKC_Casefold drops.
_DEFAULT_IGNORABLE = (
    "\u00ad\u034f\u061c\u115f-\u1160\u17b4-\u17b5\u180b-\u180f\u200b-\u200f"
    "\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff")
# TF Text's BasicTokenizer: ASCII symbols, \p{P} and CJK ideographs are
# words of their own.
_ASCII_PUNCTUATION = "!-/:-@\\[-`{-~"
_CJK = ("\u4e00-\u9fff\u3400-\u4dbf\U00020000-\U0002a6df\U0002a700-\U0002b73f"
        "\U0002b740-\U0002b81f\U0002b820-\U0002ceaf\uf900-\ufaff"
        "\U0002f800-\U0002fa1f")
_RE2_SPACE = "\t\n\f\r "


@functools.lru_cache(maxsize=None)
def _category_class(categories: str) -> str:
  """A regex character class body of every code point whose general
  category is one of `categories` (space-separated, e.g. "Cc Cf")."""
  wanted = set(categories.split())
  ranges, start, previous = [], None, None
  for code in range(sys.maxunicode + 1):
    if unicodedata.category(chr(code)) in wanted:
      if start is None:
        start = code
      previous = code
    elif start is not None:
      ranges.append((start, previous))
      start = None
  if start is not None:
    ranges.append((start, previous))
  return "".join(re.escape(chr(a)) if a == b else
                 f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges)


@functools.lru_cache(maxsize=None)
def _patterns():
  """The compiled patterns (built once: scanning Unicode takes ~0.5 s)."""
  delimiter = _ASCII_PUNCTUATION + _category_class("Pc Pd Pe Pf Pi Po Ps") + _CJK
  return dict(
      ignorable=re.compile(f"[{_DEFAULT_IGNORABLE}]"),
      nonspacing=re.compile(f"[{_category_class('Mn')}]"),
      control=re.compile(f"[{_category_class('Cc Cf')}]"),
      hf_space=re.compile(f"[\t\n\r{_category_class('Zs Zl Zp')}]"),
      hf_drop=re.compile(f"[{_category_class('Cc Cf Co Cs')}\ufffd]"),
      words=re.compile(f"[{delimiter}]|[^{delimiter}{_RE2_SPACE}]+"))


# ASCII controls (Cc) become spaces; "huggingface" first turns \t \n \r into
# spaces and drops the other controls.
_ASCII_CONTROL_TO_SPACE = {c: " " for c in list(range(32)) + [127]}
_HF_ASCII = {c: None for c in list(range(32)) + [127]}
_HF_ASCII.update({9: " ", 10: " ", 13: " "})


class PlainTokenizer:
  """Sentences to `[CLS] wordpieces [SEP]` ids, as the garden's tokenizer.

  Args:
    vocab: the WordPiece vocabulary, a token a line (id = line number).
    seq_length: the packed length, [CLS] and [SEP] included (longer
      sentences are cut, as in training).
    lower_case: uncased (see the module docstring).
    text_normalization: "tf_text" or "huggingface".
  """

  def __init__(self, vocab: Sequence[str], seq_length: int,
               lower_case: bool = True, text_normalization: str = "tf_text"):
    check_settings(seq_length, text_normalization)
    self.ids: Dict[str, int] = {}
    for index, token in enumerate(vocab):
      self.ids.setdefault(token, index)
    missing = [t for t in (PAD, UNK, CLS, SEP) if t not in self.ids]
    if missing:
      raise ValueError(f"The vocabulary lacks {', '.join(missing)}.")
    self.seq_length = seq_length
    self.lower_case = lower_case
    self.text_normalization = text_normalization
    self.pad_id, self.unk_id = self.ids[PAD], self.ids[UNK]
    self.cls_id, self.sep_id = self.ids[CLS], self.ids[SEP]
    self._patterns = _patterns()
    self._pieces: Dict[str, List[int]] = {}

  @classmethod
  def from_file(cls, vocab_file: str, **kwargs) -> "PlainTokenizer":
    """Reads the vocabulary from `vocab_file` (UTF-8, a token a line)."""
    with open(vocab_file, encoding="utf-8") as f:
      return cls([line.rstrip("\n") for line in f], **kwargs)

  def normalize(self, text: str) -> str:
    """The text the word splitting sees (controls already spaces)."""
    p = self._patterns
    if self.text_normalization == "huggingface":
      if text.isascii():
        text = text.translate(_HF_ASCII)
        return text.lower() if self.lower_case else text
      text = p["hf_drop"].sub("", p["hf_space"].sub(" ", text))
      if self.lower_case:
        text = p["nonspacing"].sub("", unicodedata.normalize("NFD", text))
        # Per character, no final-sigma rule (as Hugging Face's normalizer).
        text = text.replace("Σ", "σ").lower()
      return p["control"].sub(" ", text)
    if text.isascii():
      text = text.translate(_ASCII_CONTROL_TO_SPACE)
      return text.lower() if self.lower_case else text
    if self.lower_case:  # ICU's NFKC_Casefold, then NFD without accents
      text = p["ignorable"].sub("", text)
      text = unicodedata.normalize(
          "NFKC", unicodedata.normalize("NFKC", text).casefold())
      text = p["nonspacing"].sub("", unicodedata.normalize("NFD", text))
    return p["control"].sub(" ", text)

  def words(self, text: str) -> List[str]:
    """The words WordPiece reads: whitespace and punctuation cut."""
    return self._patterns["words"].findall(self.normalize(text))

  def word_pieces(self, word: str) -> List[int]:
    """WordPiece ids of one word: longest known piece first; `[UNK]` alone
    for a word that cannot be cut or is over 100 bytes."""
    pieces = self._pieces.get(word)
    if pieces is not None:
      return pieces
    pieces, start = [], 0
    if len(word.encode("utf-8")) > MAX_BYTES_PER_WORD:
      start = len(word)
      pieces = [self.unk_id]
    while start < len(word):
      end, found = len(word), None
      while end > start and found is None:
        found = self.ids.get(word[start:end] if start == 0 else
                             SUFFIX + word[start:end])
        end -= 1
      if found is None:  # no known piece here: the whole word is unknown
        pieces, start = [self.unk_id], len(word)
      else:
        pieces.append(found)
        start = end + 1
    if len(self._pieces) >= _CACHE_LIMIT:
      self._pieces.clear()
    self._pieces[word] = pieces
    return pieces

  def encode_one(self, text: str) -> List[int]:
    """`[CLS] pieces [SEP]` of one sentence, cut to `seq_length`."""
    ids = []
    room = self.seq_length - 2
    for word in self.words(text):
      ids.extend(self.word_pieces(word))
      if len(ids) >= room:
        break
    return [self.cls_id] + ids[:room] + [self.sep_id]

  def encode(self, sentences: Sequence[str]) -> List[List[int]]:
    """`encode_one` of each sentence."""
    return [self.encode_one(text) for text in sentences]
