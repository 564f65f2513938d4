"""The garden's tokenization as a Hugging Face `tokenizers` pipeline.

    tokenizer = build_huggingface_tokenizer(vocab, seq_length=256,
                                            lower_case=True,
                                            text_normalization="tf_text")
    tokenizer.save("tokenizer.json")

    # anywhere, with any `tokenizers` binding (Python, Rust, Node, Java, ...)
    Tokenizer.from_file("tokenizer.json").encode("A sentence.").ids

`tokenizer.json` gives, for every text, the ids of the garden's in-graph
tokenizer (`tokenization.WordPieceTokenizer.tokenize_and_pack`: `[CLS]
wordpieces [SEP]`, cut to `seq_length`; `encode_batch` pads to the longest
row with `[PAD]`), built from standard components only, so that serving
stacks built on `tokenizers` (text-embeddings-inference, FastEmbed, Infinity,
transformers.js) and the Hugging Face / sentence-transformers loaders read
it without the garden. Hugging Face's own BERT pipeline (`BertNormalizer`,
`BertPreTokenizer`) differs from TF Text's in places, so each step spells
out what TF Text's `BertTokenizer` does as `tokenization.py` configures it
(the same steps as `plain_tokenizer.py`):

  normalizer, "tf_text" uncased   ICU's NFKC case folding: default-ignorable
                                  characters dropped, NFKC, lower case, then
                                  each character whose case folding differs
                                  from its lower case replaced by its folding
                                  (ß -> ss, final ς -> σ, Cherokee, iota
                                  subscripts; `casefold_rules`), NFKC; then
                                  NFD and nonspacing marks (Mn) dropped
  normalizer, "tf_text" cased     none
  normalizer, "huggingface"       `tokenization.huggingface_normalize`: tab,
                                  line ends and Unicode spaces (Z) to spaces;
                                  controls, format and private-use characters
                                  and U+FFFD dropped; uncased: NFD, Mn
                                  dropped, lower case
  then, every mode                controls and format characters (Cc, Cf) to
                                  spaces
  pre-tokenizer                   words cut at [\\t\\n\\f\\r ] (RE2's `\\s`, not
                                  Unicode's spaces); ASCII symbols, Unicode
                                  punctuation (P) and CJK ideographs are
                                  words of their own
  model                           WordPiece, longest match first, `##`; a word
                                  that cannot be cut is [UNK]

A word longer than 100 UTF-8 bytes is [UNK] in TF Text; `tokenizers`'
WordPiece counts characters. So the pre-tokenizer's last step is the
`ByteLevel` map (one character per UTF-8 byte, GPT-2's table) and the
WordPiece vocabulary holds each token in that form: a word's characters
are then its bytes, and the ids are those of `vocab.txt`. ASCII tokens read
as themselves; the decoder maps the bytes back to text.

The special tokens are not "added tokens": the text "[CLS]" is cut as any
other text, as the garden does (a Hugging Face BERT tokenizer would read it
as the token). Unicode tables are those of each library (ICU and RE2 for TF
Text, Oniguruma and Rust's for `tokenizers`): a character assigned in a
newer Unicode version than one of them knows can differ. Equality with the
in-graph tokenizer is tested on fuzzed text
(tests/data_pipelines/test_tokenizer_json.py).
"""
import functools
import sys
import unicodedata
from typing import Dict, Optional, Sequence, Tuple

from tokenizers import Regex
from tokenizers import Tokenizer
from tokenizers import decoders
from tokenizers import models
from tokenizers import normalizers
from tokenizers import pre_tokenizers
from tokenizers import processors

from cmlm.data_pipelines import plain_tokenizer
from cmlm.data_pipelines import vocabulary

FILE_NAME = "tokenizer.json"
TEXT_NORMALIZATIONS = plain_tokenizer.TEXT_NORMALIZATIONS
MAX_BYTES_PER_WORD = 100  # TF Text's WordpieceTokenizer default
SUFFIX = "##"

# Default_Ignorable_Code_Point, as plain_tokenizer lists it: what ICU's
# NFKC case folding drops. Characters, not escapes: Oniguruma, JavaScript
# and Python read a class of literal characters alike.
_DEFAULT_IGNORABLE = (
    "\u00ad\u034f\u061c\u115f-\u1160\u17b4-\u17b5\u180b-\u180f\u200b-\u200f"
    "\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff")
# TF Text's BasicTokenizer delimiters that stay words: ASCII symbols,
# Unicode punctuation, CJK ideographs.
_PUNCTUATION_OR_CJK = (
    "[!-/:-@\\[-`{-~\\p{P}\u4e00-\u9fff\u3400-\u4dbf\U00020000-\U0002a6df"
    "\U0002a700-\U0002b73f\U0002b740-\U0002b81f\U0002b820-\U0002ceaf"
    "\uf900-\ufaff\U0002f800-\U0002fa1f]")
_RE2_SPACES = "[\t\n\f\r ]+"


def _byte_level_map() -> Dict[int, str]:
  """GPT-2's byte -> character table (`tokenizers`' ByteLevel): printable
  bytes stand for themselves, the others for characters from U+0100."""
  printable = (list(range(ord("!"), ord("~") + 1)) +
               list(range(ord("¡"), ord("¬") + 1)) +
               list(range(ord("®"), ord("ÿ") + 1)))
  table, extra = {}, 0
  for byte in range(256):
    if byte in printable:
      table[byte] = chr(byte)
    else:
      table[byte] = chr(256 + extra)
      extra += 1
  return table


_BYTE_LEVEL = _byte_level_map()


def byte_level(token: str) -> str:
  """`token` as the ByteLevel pre-tokenizer writes it: a character a byte.

  Examples:
    >>> byte_level("##ing"), byte_level("é")
    ('##ing', 'Ã©')
  """
  return "".join(_BYTE_LEVEL[byte] for byte in token.encode("utf-8"))


@functools.lru_cache(maxsize=None)
def casefold_rules() -> Tuple[Tuple[str, str], ...]:
  """(character, its case folding) for each character that lower-casing
  (after NFKC) can give and whose case folding differs from it: with these
  replaced after `Lowercase`, NFKC(lower) equals ICU's NFKC case folding.

  Computed from Python's Unicode tables (~1 s, once).

  Examples:
    >>> dict(casefold_rules())["ß"]
    'ss'
  """
  rules = {}
  for code in range(sys.maxunicode + 1):
    if 0xD800 <= code <= 0xDFFF:  # surrogates are no text
      continue
    for character in unicodedata.normalize("NFKC", chr(code)):
      for lower in character.lower():
        folded = lower.casefold()
        if folded != lower:
          rules[lower] = folded
  return tuple(sorted(rules.items()))


def _normalizer(lower_case: bool, text_normalization: str):
  """The normalizer of the module docstring's table."""
  control_to_space = normalizers.Replace(Regex("[\\p{Cc}\\p{Cf}]"), " ")
  drop_nonspacing = normalizers.Replace(Regex("\\p{Mn}"), "")
  steps = []
  if text_normalization == "huggingface":
    steps += [normalizers.Replace(Regex("[\t\n\r\\p{Z}]"), " "),
              # RE2's \p{C}: Cc, Cf, Co, Cs (unassigned characters stay).
              normalizers.Replace(
                  Regex("[\\p{Cc}\\p{Cf}\\p{Co}\\p{Cs}\ufffd]"), "")]
    if lower_case:
      steps += [normalizers.NFD(), drop_nonspacing, normalizers.Lowercase()]
  elif lower_case:
    steps += [normalizers.Replace(Regex(f"[{_DEFAULT_IGNORABLE}]"), ""),
              normalizers.NFKC(), normalizers.Lowercase()]
    steps += [normalizers.Replace(character, folded)
              for character, folded in casefold_rules()]
    steps += [normalizers.NFKC(), normalizers.NFD(), drop_nonspacing]
  return normalizers.Sequence(steps + [control_to_space])


def build_huggingface_tokenizer(vocab: Sequence[str], seq_length: int,
                                lower_case: bool = True,
                                text_normalization: str = "tf_text"
                                ) -> Tokenizer:
  """The `tokenizers.Tokenizer` of the garden's tokenization (module doc).

  Args:
    vocab: the WordPiece vocabulary, a token a line (id = line number), with
      the special tokens (`vocabulary.check_vocab`).
    seq_length: the packed length, [CLS] and [SEP] included: longer text is
      cut (the truncation `tokenizer.json` carries).
    lower_case: uncased.
    text_normalization: "tf_text" or "huggingface" (`tokenization.py`).

  Examples:
    >>> tokenizer = build_huggingface_tokenizer(
    ...     vocabulary.load_vocab("vocab.txt"), 256)
    >>> tokenizer.encode("A sentence.").ids
    [2, 1037, 6251, 1012, 3]
  """
  plain_tokenizer.check_settings(seq_length, text_normalization)
  vocabulary.check_vocab(list(vocab))
  ids = {}
  for index, token in enumerate(vocab):
    ids.setdefault(byte_level(token), index)
  special = vocabulary.special_token_ids(list(vocab))
  tokenizer = Tokenizer(models.WordPiece(
      ids, unk_token=vocabulary.UNK, continuing_subword_prefix=SUFFIX,
      max_input_chars_per_word=MAX_BYTES_PER_WORD))
  tokenizer.normalizer = _normalizer(lower_case, text_normalization)
  tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
      pre_tokenizers.Split(Regex(_RE2_SPACES), behavior="removed"),
      pre_tokenizers.Split(Regex(_PUNCTUATION_OR_CJK), behavior="isolated"),
      pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False,
                               use_regex=False)])
  cls, sep = vocabulary.CLS, vocabulary.SEP
  tokenizer.post_processor = processors.TemplateProcessing(
      single=f"{cls} $A {sep}", pair=f"{cls} $A {sep} $B:1 {sep}:1",
      special_tokens=[(cls, special[cls]), (sep, special[sep])])
  # WordPiece joins the pieces, then the bytes become text again (the
  # spaces it puts between words as ByteLevel's own space character).
  tokenizer.decoder = decoders.Sequence([
      decoders.WordPiece(prefix=SUFFIX), decoders.Replace(" ", byte_level(" ")),
      decoders.ByteLevel()])
  tokenizer.enable_truncation(max_length=seq_length)
  tokenizer.enable_padding(pad_id=special[vocabulary.PAD],
                           pad_token=vocabulary.PAD)
  return tokenizer


def from_config(tokenization, seq_length: int = None,
                vocab: Optional[vocabulary.VocabularyFile] = None
                ) -> Tokenizer:
  """`build_huggingface_tokenizer` of a `tokenization.TokenizationConfig` (its
  vocabulary file read and checked, or `vocab`: that file already read);
  `seq_length` replaces the config's.

  Examples:
    >>> from_config(params.task.tokenization).encode("Hi.").ids
    [2, 7632, 1012, 3]
  """
  vocab = vocabulary.read_vocabulary(tokenization.vocab_file, vocab)
  return build_huggingface_tokenizer(
      vocab.tokens, seq_length or tokenization.seq_length,
      lower_case=tokenization.lower_case,
      text_normalization=tokenization.text_normalization)


def write_tokenizer_json(tokenization, path: str,
                         vocab: Optional[vocabulary.VocabularyFile] = None
                         ) -> None:
  """Writes `from_config(tokenization, vocab=vocab)` to `path`
  (`tokenizer.json`).

  Examples:
    >>> write_tokenizer_json(params.task.tokenization, "tokenizer.json")
    >>> Tokenizer.from_file("tokenizer.json").encode("Hi.").ids
    [2, 7632, 1012, 3]
  """
  from_config(tokenization, vocab=vocab).save(path, pretty=True)
