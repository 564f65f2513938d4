"""The sentences `python -m cmlm encode` reads: text, JSON Lines, CSV, TSV.

    read_input(path, input_format="auto", text_field="text", column=None,
               header=True) -> List[str]

Row i of the embeddings written is sentence i of what this returns:

  * `txt` (any other extension, and stdin by default): one sentence a line,
    empty lines included (`data_pipelines.text_lines`: LF, CRLF, CR);
  * `jsonl`: one JSON object a line, the sentence under `text_field`;
    whitespace-only lines are skipped (JSON Lines allows a trailing one);
  * `csv` (RFC 4180 quoting, so a quoted cell may hold commas and line
    ends) and `tsv` (tab-separated, no quoting: a `"` is an ordinary
    character, as in STS-B's and SICK's files): the cell of `column`, a
    header name or a 0-based index; with `header` (the default) the first
    row names the columns and is not a sentence.

`path` may be `-`, standard input (read as bytes: UTF-8 whatever the
locale). Files are UTF-8, a byte order mark is dropped; every error names
the file and line, and comes before any model is loaded. An input without
any text (only empty lines, white space or control characters) is refused.
"""
import csv
import io
import json
import os
import sys
from typing import List, Optional

import tensorflow as tf

from cmlm.data_pipelines import text_lines

FORMATS = ("txt", "jsonl", "csv", "tsv")
STDIN = "-"
_EXTENSIONS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv",
               ".tsv": "tsv"}


def input_format_of(path: str, input_format: str = "auto") -> str:
  """The format to read `path` as: `input_format`, or from its extension."""
  if input_format not in ("auto",) + FORMATS:
    raise ValueError(f"--input_format must be auto or one of "
                     f"{', '.join(FORMATS)}, got {input_format!r}.")
  if input_format != "auto":
    return input_format
  return _EXTENSIONS.get(os.path.splitext(path)[1].lower(), "txt")


def read_input(path: str, input_format: str = "auto", text_field: str = "text",
               column: Optional[str] = None, header: bool = True,
               stdin=None) -> List[str]:
  """The sentences of `path` (see the module docstring), in file order.

  Args:
    path: a file, or `-` for standard input.
    input_format: `auto` (from the extension; `txt` for stdin) or one of
      `FORMATS`.
    text_field: `jsonl`: the key holding the sentence.
    column: `csv`/`tsv`: the column's header name or 0-based index; may be
      left out when rows have one cell.
    header: `csv`/`tsv`: the first row is a header, not a sentence.
    stdin: the binary stream `-` reads (default `sys.stdin.buffer`).
  """
  if not path:
    raise ValueError("--input is required: a .txt (one sentence a line), "
                     ".jsonl, .csv or .tsv file, or - for standard input.")
  kind = input_format_of(path, input_format)
  name = "standard input" if path == STDIN else path
  data = _read_bytes(path, stdin)
  if data.startswith(text_lines.UTF8_BOM):
    data = data[len(text_lines.UTF8_BOM):]
  if kind == "txt":
    sentences = _text_lines(data, name)
  elif kind == "jsonl":
    sentences = _jsonl(data, name, text_field)
  else:
    sentences = _table(data, name, kind, column, header)
  if not sentences:
    raise ValueError(f"--input={name} holds no sentence.")
  if not any(map(text_lines.has_visible_text, sentences)):
    raise ValueError(f"--input={name} holds {len(sentences)} sentence(s) but "
                     "no text: only empty lines, white space or control "
                     "characters; nothing to embed.")
  return sentences


def _read_bytes(path: str, stdin) -> bytes:
  if path == STDIN:
    stream = stdin if stdin is not None else sys.stdin.buffer
    return stream.read()
  if not tf.io.gfile.exists(path) or tf.io.gfile.isdir(path):
    raise FileNotFoundError(f"--input={path} is not a file.")
  with tf.io.gfile.GFile(path, "rb") as f:
    return f.read()


def _decode(raw: bytes, name: str, number: int) -> str:
  try:
    return raw.decode("utf-8")
  except UnicodeDecodeError:
    raise ValueError(f"--input={name} is not UTF-8 text (line {number})."
                     ) from None


def _text_lines(data: bytes, name: str) -> List[str]:
  return [_decode(raw, name, number) for number, raw in
          enumerate(text_lines.split_lines(data), start=1)]


def _jsonl(data: bytes, name: str, text_field: str) -> List[str]:
  if not text_field:
    raise ValueError("--text_field must name the JSON key holding the "
                     "sentence, e.g. --text_field=text.")
  sentences = []
  for number, raw in enumerate(text_lines.split_lines(data), start=1):
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
    sentences.append(text)
  return sentences


def _table(data: bytes, name: str, kind: str, column: Optional[str],
           header: bool) -> List[str]:
  try:
    text = data.decode("utf-8")
  except UnicodeDecodeError as error:
    line = data[:error.start].count(b"\n") + 1
    raise ValueError(f"--input={name} is not UTF-8 text (line {line})."
                     ) from None
  if kind == "csv":
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
  else:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t",
                        quoting=csv.QUOTE_NONE)
  sentences, index = [], None
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
      sentences.append(row[index])
  except csv.Error as error:
    raise ValueError(f"{name}, line {reader.line_num}: not {kind.upper()} "
                     f"({error}).") from None
  return sentences


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
