"""The sentences `python -m cmlm encode` reads: text, JSON Lines, CSV, TSV.

    with opened_input(path, input_format="auto", text_field="text",
                      column=None, header=True) as source:
      source.count                  # sentences, all checked
      for sentences in source.chunks(8192): ...   # lists, in file order
    read_input(path, ...) -> List[str]            # all of them at once

Row i of the embeddings written is sentence i of what these give:

  * `txt` (any other extension, and stdin by default): one sentence a line,
    empty lines included (`data_pipelines.text_lines`: LF, CRLF, CR);
  * `jsonl`: one JSON object a line, the sentence under `text_field`;
    whitespace-only lines are skipped (JSON Lines allows a trailing one);
  * `csv` (RFC 4180 quoting, so a quoted cell may hold commas and line
    ends) and `tsv` (tab-separated, no quoting: a `"` is an ordinary
    character, as in STS-B's and SICK's files): the cell of `column`, a
    header name or a 0-based index; with `header` (the default) the first
    row names the columns and is not a sentence.

`opened_input` reads the input twice, holding no more than one chunk of it:
a first pass checks every line and counts the sentences (so every error
comes before any model is loaded, and a writer knows the rows to come),
then `chunks` reads it again. `path` may be `-`, standard input (read as
bytes: UTF-8 whatever the locale), which is first copied to an unnamed
temporary file in `spool_dir` so that it can be read twice. Files are
UTF-8, a byte order mark is dropped; every error names the file and line.
An input without any text (only empty lines, white space or control
characters) is refused.
"""
import contextlib
import csv
import json
import os
import shutil
import sys
import tempfile
from typing import Callable, ContextManager, Iterator, List, Optional

import tensorflow as tf

from cmlm.data_pipelines import text_lines

FORMATS = ("txt", "jsonl", "csv", "tsv")
STDIN = "-"
_EXTENSIONS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv",
               ".tsv": "tsv"}
# Sentences per list `read_input` gathers them in.
_READ_CHUNK = 1 << 14
# Bytes read at a time: their lines are split at once, so this bounds what
# reading holds besides the chunk of sentences.
_READ_BYTES = 1 << 16


def input_format_of(path: str, input_format: str = "auto") -> str:
  """The format to read `path` as: `input_format`, or from its extension."""
  if input_format not in ("auto",) + FORMATS:
    raise ValueError(f"--input_format must be auto or one of "
                     f"{', '.join(FORMATS)}, got {input_format!r}.")
  if input_format != "auto":
    return input_format
  return _EXTENSIONS.get(os.path.splitext(path)[1].lower(), "txt")


def check_input_options(path: str, input_format: str = "auto",
                        text_field: str = "text",
                        column: Optional[str] = None) -> None:
  """Refuses `column` for an input not read as csv/tsv, and a `text_field`
  other than the default for one not read as jsonl: a flag that would be
  ignored (a mistaken extension or --input_format, most likely)."""
  kind = input_format_of(path, input_format)
  name = "standard input" if path == STDIN else path
  if column is not None and kind not in ("csv", "tsv"):
    raise ValueError(f"--column={column} picks a column of a csv or tsv "
                     f"input, but {name} is read as {kind}; give "
                     "--input_format=csv (or tsv), or drop --column.")
  if text_field != "text" and kind != "jsonl":
    raise ValueError(f"--text_field={text_field} names the key of a jsonl "
                     f"input, but {name} is read as {kind}; give "
                     "--input_format=jsonl, or drop --text_field.")


class SentenceFile:
  """An input checked whole, read again in chunks (see the module docstring).

  Attributes:
    name: the file, or "standard input".
    count: how many sentences it holds (row count of the output).
  """

  def __init__(self, name: str, sentences: Callable[[], ContextManager]):
    self.name = name
    self._sentences = sentences  # () -> context of an iterator of str
    self.count = 0
    has_text = False
    with sentences() as all_sentences:
      for sentence in all_sentences:
        self.count += 1
        has_text = has_text or text_lines.has_visible_text(sentence)
    if not self.count:
      raise ValueError(f"--input={name} holds no sentence.")
    if not has_text:
      raise ValueError(f"--input={name} holds {self.count} sentence(s) but "
                       "no text: only empty lines, white space or control "
                       "characters; nothing to embed.")

  def chunks(self, size: int) -> Iterator[List[str]]:
    """The sentences in file order, `size` at a time (the last fewer)."""
    if size < 1:
      raise ValueError(f"chunk size must be 1 or more, got {size}.")
    with self._sentences() as sentences:
      chunk = []
      for sentence in sentences:
        chunk.append(sentence)
        if len(chunk) == size:
          yield chunk
          chunk = []
      if chunk:
        yield chunk


@contextlib.contextmanager
def opened_input(path: str, input_format: str = "auto",
                 text_field: str = "text", column: Optional[str] = None,
                 header: bool = True, stdin=None,
                 spool_dir: Optional[str] = None) -> Iterator[SentenceFile]:
  """`path` checked whole and counted, as a `SentenceFile`.

  Args:
    path: a file, or `-` for standard input.
    input_format: `auto` (from the extension; `txt` for stdin) or one of
      `FORMATS`.
    text_field: `jsonl`: the key holding the sentence.
    column: `csv`/`tsv`: the column's header name or 0-based index; may be
      left out when rows have one cell.
    header: `csv`/`tsv`: the first row is a header, not a sentence.
    stdin: the binary stream `-` reads (default `sys.stdin.buffer`).
    spool_dir: where standard input is kept while it is read (an unnamed
      file, gone when the block ends or the process dies; default: the
      system's temporary directory).
  """
  if not path:
    raise ValueError("--input is required: a .txt (one sentence a line), "
                     ".jsonl, .csv or .tsv file, or - for standard input.")
  kind = input_format_of(path, input_format)
  if kind == "jsonl" and not text_field:
    raise ValueError("--text_field must name the JSON key holding the "
                     "sentence, e.g. --text_field=text.")
  name = "standard input" if path == STDIN else path
  parse = {"txt": lambda lines: _text_lines(lines, name),
           "jsonl": lambda lines: _jsonl(lines, name, text_field),
           "csv": lambda lines: _table(lines, name, kind, column, header),
           "tsv": lambda lines: _table(lines, name, kind, column, header)
           }[kind]
  keep_ends = kind in ("csv", "tsv")  # a quoted CSV cell may hold a line end
  with _reopenable(path, stdin, spool_dir) as open_bytes:

    @contextlib.contextmanager
    def sentences():
      with open_bytes() as f:
        yield parse(text_lines.iter_lines(_WithoutBom(f), _READ_BYTES,
                                          keep_ends=keep_ends))
    yield SentenceFile(name, sentences)


def read_input(path: str, input_format: str = "auto", text_field: str = "text",
               column: Optional[str] = None, header: bool = True,
               stdin=None) -> List[str]:
  """All the sentences of `path` (see `opened_input`), in file order."""
  with opened_input(path, input_format, text_field, column, header,
                    stdin) as source:
    return [sentence for chunk in source.chunks(_READ_CHUNK)
            for sentence in chunk]


@contextlib.contextmanager
def _reopenable(path: str, stdin, spool_dir: Optional[str]):
  """Yields `open_bytes()`: a context of `path`'s binary file object, from
  its start, as often as asked."""
  if path == STDIN:
    stream = stdin if stdin is not None else sys.stdin.buffer
    with tempfile.TemporaryFile(dir=spool_dir) as spool:
      shutil.copyfileobj(stream, spool)

      @contextlib.contextmanager
      def from_start():
        spool.seek(0)
        yield spool
      yield from_start
    return
  if not tf.io.gfile.exists(path) or tf.io.gfile.isdir(path):
    raise FileNotFoundError(f"--input={path} is not a file.")
  yield lambda: tf.io.gfile.GFile(path, "rb")


class _WithoutBom:
  """A binary file object whose first read drops a UTF-8 byte order mark."""

  def __init__(self, f):
    self._f, self._first = f, True

  def read(self, size: int = -1) -> bytes:
    data = self._f.read(size)
    if self._first:
      self._first = False
      if data.startswith(text_lines.UTF8_BOM):
        data = data[len(text_lines.UTF8_BOM):]
    return data


def _decode(raw: bytes, name: str, number: int) -> str:
  try:
    return raw.decode("utf-8")
  except UnicodeDecodeError:
    raise ValueError(f"--input={name} is not UTF-8 text (line {number})."
                     ) from None


def _text_lines(lines: Iterator[bytes], name: str) -> Iterator[str]:
  for number, raw in enumerate(lines, start=1):
    yield _decode(raw, name, number)


def _jsonl(lines: Iterator[bytes], name: str, text_field: str
           ) -> Iterator[str]:
  for number, raw in enumerate(lines, start=1):
    line = _decode(raw, name, number)
    if not line.strip():
      continue
    try:
      record = json.loads(line)
    except json.JSONDecodeError as error:
      raise ValueError(f"{name}, line {number}: not JSON ({error.msg})."
                       ) from None
    if not isinstance(record, dict):
      raise ValueError(f"{name}, line {number}: expected a JSON object with "
                       f"a {text_field!r} key, got {type(record).__name__}.")
    if text_field not in record:
      raise ValueError(f"{name}, line {number}: no {text_field!r} key (keys: "
                       f"{', '.join(map(repr, record)) or 'none'}); set "
                       "--text_field.")
    text = record[text_field]
    if not isinstance(text, str):
      raise ValueError(f"{name}, line {number}: {text_field!r} is "
                       f"{type(text).__name__}, not a string.")
    yield text


def _table(lines: Iterator[bytes], name: str, kind: str,
           column: Optional[str], header: bool) -> Iterator[str]:
  """The cells of `column`, rows read from lines that keep their ends."""
  decoded = (_decode(raw, name, number)
             for number, raw in enumerate(lines, start=1))
  if kind == "csv":
    reader = csv.reader(decoded, strict=True)
  else:
    reader = csv.reader(decoded, delimiter="\t", quoting=csv.QUOTE_NONE)
  index = None
  try:
    for row in reader:
      number = reader.line_num
      if index is None:
        index = _column_index(row, column, header, name, kind)
        if header:
          continue
      if not row:  # an empty line: an empty one-cell row
        row = [""]
      if index >= len(row):
        raise ValueError(f"{name}, line {number}: {len(row)} cell(s), but "
                         f"column {column or 0} is cell {index + 1}.")
      yield row[index]
  except csv.Error as error:
    raise ValueError(f"{name}, line {reader.line_num}: not {kind.upper()} "
                     f"({error}).") from None


def _column_index(first_row: List[str], column: Optional[str], header: bool,
                  name: str, kind: str) -> int:
  """The 0-based index of `column`, from the first row."""
  if column is None or column == "":
    if len(first_row) == 1:
      return 0
    listing = (f"its header: {', '.join(map(repr, first_row))}" if header
               else f"its rows have {len(first_row)} cells")
    raise ValueError(f"--input={name} has {len(first_row)} columns; name the "
                     f"sentences' with --column ({listing}).")
  if header and column in first_row:
    return first_row.index(column)
  if column.isdigit():
    return int(column)
  if not header:
    raise ValueError(f"--column={column} is a name, but --noheader says "
                     f"{name} has no header row; give a 0-based index.")
  raise ValueError(f"--column={column} is not a column of {name} (its "
                   f"{kind.upper()} header: {', '.join(map(repr, first_row))}).")
