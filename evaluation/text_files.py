"""Reading the lines of benchmark files, with errors that name file and line.

Every reader of `evaluation/` goes through `read_lines`, so a missing file or
an undecodable or malformed line is reported the same way:

    data/eval/sts/SICK/SICK_trial.txt, line 7: expected 5 tab-separated
    fields (pair_ID, sentence_A, sentence_B, relatedness_score,
    entailment_judgment), found 3.
"""
import gzip
import math
import os
from typing import List, Sequence, Tuple

from cmlm.data_pipelines import text_lines

Line = Tuple[int, str]  # (1-based line number, text without its line end)


class DataFormatError(ValueError):
  """A benchmark file's line is not in the format its reader expects."""

  def __init__(self, path: str, line_number: int, message: str):
    super().__init__(f"{path}, line {line_number}: {message}")
    self.path = path
    self.line_number = line_number


def require_file(path: str, what: str) -> str:
  """`path` if it is a file, else FileNotFoundError saying what was expected."""
  if not os.path.isfile(path):
    reason = "is a directory" if os.path.isdir(path) else "does not exist"
    raise FileNotFoundError(f"{path} {reason}; expected {what}.")
  return path


def require_directory(path: str, what: str) -> str:
  if not os.path.isdir(path):
    raise FileNotFoundError(f"{path} is not a directory; expected {what}.")
  return path


def read_lines(path: str, what: str, latin1_fallback: bool = False,
               skip_header: bool = False) -> List[Line]:
  """The numbered lines of a UTF-8 text file (`.gz` read transparently).

  Args:
    path: the file.
    what: what the file should be, for the error when it is missing.
    latin1_fallback: decode a line that is not UTF-8 as latin-1, as SentEval
      reads MR, SUBJ, MPQA and TREC (the original releases are latin-1).
    skip_header: drop the first line (column names).

  Returns:
    `(line_number, text)` for each line, line ends (LF, CRLF and CR alike:
    `data_pipelines.text_lines`) and a UTF-8 BOM removed.
  """
  require_file(path, what)
  opener = gzip.open if path.endswith(".gz") else open
  try:
    with opener(path, "rb") as f:
      data = f.read()
  except (OSError, EOFError) as error:
    raise ValueError(f"{path} cannot be read as {what}: {error}.") from None
  if data.startswith(text_lines.UTF8_BOM):
    data = data[len(text_lines.UTF8_BOM):]
  lines = []
  for number, raw in enumerate(text_lines.split_lines(data), start=1):
    try:
      text = raw.decode("utf-8")
    except UnicodeDecodeError:
      if not latin1_fallback:
        raise DataFormatError(path, number, "is not UTF-8 text.") from None
      text = raw.decode("latin-1")
    lines.append((number, text))
  if skip_header and lines:
    lines = lines[1:]
  return lines


def split_fields(path: str, line: Line, names: Sequence[str],
                 separator: str = "\t", allow_extra: bool = False
                 ) -> List[str]:
  """The fields of `line`, or an error naming the line and the expected columns.

  Args:
    path: the file, for the error.
    line: `(line_number, text)` from `read_lines`.
    names: the expected columns, in order.
    separator: the field separator.
    allow_extra: accept more fields than `names` (e.g. STS-B's optional
      license columns after sentence2); only the first `len(names)` are kept.
  """
  number, text = line
  fields = text.split(separator)
  if len(fields) < len(names) or (len(fields) > len(names) and
                                  not allow_extra):
    kind = {"\t": "tab-separated", " ": "space-separated"}.get(
        separator, f"{separator!r}-separated")
    raise DataFormatError(
        path, number, f"expected {len(names)} {kind} fields "
        f"({', '.join(names)}), found {len(fields)}.")
  return fields[:len(names)]


def parse_float(path: str, line: Line, field: str, name: str) -> float:
  """`field` as a finite float, or an error naming the file and line (a gold
  score of nan or inf would silently turn a correlation into n/a)."""
  try:
    value = float(field)
  except ValueError:
    raise DataFormatError(path, line[0], f"the {name} {field!r} is not a "
                          "number.") from None
  if not math.isfinite(value):
    raise DataFormatError(path, line[0], f"the {name} {field!r} is not a "
                          "finite number.")
  return value
