"""Lines of text files, whatever their line ends: LF, CRLF or CR.

Every reader of the garden (the corpus, bitext, NLI, `encode` input, pcr
samples and the benchmark readers of `evaluation/`) splits its files here,
so a file written on Windows (CRLF) or by classic Mac OS tools (CR only)
reads exactly like one with Unix line ends: the same lines, the same line
numbers in error messages. Lines are split as bytes, before decoding: the
bytes 0x0A and 0x0D never occur inside a UTF-8 character, so splitting
first is safe and lets a decoding error name its line. Only these three
line ends count (not the form feed, vertical tab or U+2028 that
`str.splitlines` would also split on).
"""
import unicodedata
from typing import BinaryIO, Iterator, List

_CHUNK_SIZE = 1 << 20

UTF8_BOM = b'\xef\xbb\xbf'


def split_lines(data: bytes) -> List[bytes]:
  """The lines of `data` without their ends; a final line end adds no line.

  >>> split_lines(b'a\\r\\nb\\rc\\n\\nd\\n')
  [b'a', b'b', b'c', b'', b'd']
  """
  return data.splitlines()  # bytes: LF, CRLF and CR only


def iter_lines(f: BinaryIO, chunk_size: int = _CHUNK_SIZE,
               keep_ends: bool = False) -> Iterator[bytes]:
  """Streams the lines of a binary file object as `split_lines` splits them
  (with their line ends if `keep_ends`: what `csv.reader` reads).

  Reads `chunk_size` bytes at a time, so a huge file (or one huge line
  without a line end in it) never has to be held in memory more than once.
  """
  pending = b''
  while True:
    chunk = f.read(chunk_size)
    if not chunk:
      break
    lines = (pending + chunk).splitlines(keepends=True)
    # The last piece may continue in the next chunk: a line without its end
    # yet, or a CR whose LF has not been read.
    pending = b'' if lines[-1].endswith(b'\n') else lines.pop()
    for line in lines:
      yield line if keep_ends else line.rstrip(b'\r\n')
  if pending:
    yield pending if keep_ends else pending.rstrip(b'\r\n')


def has_visible_text(text: str) -> bool:
  """Whether `text` holds a character a tokenizer keeps: one that is not
  white space nor a control, format, surrogate, private-use or unassigned
  code point (Unicode category C*). A line of NUL or control bytes has none.
  """
  return any(not character.isspace() and
             not unicodedata.category(character).startswith('C')
             for character in text)
