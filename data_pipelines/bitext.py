"""Translation pairs for bitext retrieval (paper section 4.2).

Two layouts, mixed freely in one comma-separated path spec:
  * a TSV file whose rows hold the source and the target in two columns
    (`source_column`, `target_column`; the last two by default, so that
    `src<TAB>tgt` and `domain<TAB>src<TAB>tgt` both work), optionally with a
    header row;
  * two line-aligned files joined by `|`: `train.en.gz|train.de.gz`.
Files ending in `.gz` are read through gzip. Every problem is reported with its
file and line: a line that is not UTF-8, a row with too few columns, an empty
side, or aligned files whose line counts differ.

TFRecord files (`*.tfrecord`, `*.tfrecord-*`) of `source` / `target`
records, which `python -m cmlm prepare --data=bitext` writes
(`beam_bitext`), are read as pairs too, in record order.
"""
import glob
import gzip
import itertools
import os
from typing import Iterator, List, Tuple

from cmlm.data_pipelines import corpus
from cmlm.data_pipelines import text_lines


class BitextError(corpus.CorpusError):
  """A bitext file or one of its lines is not usable."""


def _lines(path: str) -> Iterator[Tuple[int, str]]:
  """(line number, text without its line end) of a UTF-8 (maybe .gz) file;
  LF, CRLF and CR end lines alike."""
  opener = gzip.open if path.endswith(".gz") else open
  try:
    with opener(path, "rb") as f:
      for number, raw in enumerate(text_lines.iter_lines(f), start=1):
        try:
          yield number, raw.decode("utf-8")
        except UnicodeDecodeError as e:
          raise BitextError(f"{path}:{number} is not valid UTF-8 text "
                            f"(byte {e.start}).") from None
  except FileNotFoundError:
    raise BitextError(f"Bitext file {path} does not exist.") from None
  except (OSError, EOFError) as e:
    raise BitextError(f"Cannot read bitext file {path}: {e}.") from None


def expand_files(part: str) -> List[str]:
  """The files of one part of a path spec: a file or a glob (sorted)."""
  files = sorted(glob.glob(part)) if any(c in part for c in "*?[") else [part]
  if not files:
    raise BitextError(f"No bitext file matches {part!r}.")
  return files


def _is_tfrecord(path: str) -> bool:
  name = os.path.basename(path)
  return name.endswith(".tfrecord") or ".tfrecord-" in name


def read_tfrecord_pairs(path: str) -> Iterator[Tuple[str, str]]:
  """(source, target) of the records of one TFRecord file, in order."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  spec = {side: tf.io.FixedLenFeature([], tf.string)
          for side in ("source", "target")}
  try:
    for batch in tf.data.TFRecordDataset(path).batch(1024):
      features = tf.io.parse_example(batch, spec)
      for source, target in zip(features["source"].numpy(),
                                features["target"].numpy()):
        yield source.decode("utf-8"), target.decode("utf-8")
  except tf.errors.OpError as e:
    raise BitextError(f"Cannot read bitext records {path}: "
                      f"{e.message}.") from None


def _check_sides(path, number, source, target):
  for side, text in (("source", source), ("target", target)):
    if not text.strip():
      raise BitextError(f"{path}:{number}: the {side} side is empty.")


def read_tsv_pairs(path: str, source_column: int = -2,
                   target_column: int = -1, header: bool = False
                   ) -> Iterator[Tuple[str, str]]:
  """(source, target) rows of a TSV file."""
  needed = max(c if c >= 0 else -c - 1 for c in (source_column,
                                                  target_column)) + 1
  for number, line in _lines(path):
    if header and number == 1:
      continue
    columns = line.split("\t")
    if len(columns) < max(needed, 2):
      raise BitextError(
          f"{path}:{number} has {len(columns)} tab-separated column(s); "
          f"source_column={source_column} and target_column={target_column} "
          "need more.")
    source, target = columns[source_column], columns[target_column]
    _check_sides(path, number, source, target)
    yield source, target


def read_aligned_pairs(source_path: str, target_path: str
                       ) -> Iterator[Tuple[str, str]]:
  """(source, target) pairs of two line-aligned files."""
  for left, right in itertools.zip_longest(_lines(source_path),
                                           _lines(target_path)):
    if left is None or right is None:
      shorter, line = ((source_path, right[0]) if left is None
                       else (target_path, left[0]))
      raise BitextError(
          f"{source_path} and {target_path} are not line-aligned: "
          f"{shorter} ends before line {line}.")
    _check_sides(source_path if not left[1].strip() else target_path,
                 left[0], left[1], right[1])
    yield left[1], right[1]


def iter_bitext(path_spec: str, source_column: int = -2,
                target_column: int = -1, header: bool = False
                ) -> Iterator[Tuple[str, str]]:
  """The (source, target) pairs of a bitext path spec, read lazily."""
  if not path_spec:
    raise BitextError("The bitext input_path is empty.")
  for part in (p.strip() for p in path_spec.split(",") if p.strip()):
    if "|" in part:
      source_path, target_path = (s.strip() for s in part.split("|", 1))
      yield from read_aligned_pairs(source_path, target_path)
    else:
      for path in expand_files(part):
        if _is_tfrecord(path):
          yield from read_tfrecord_pairs(path)
        else:
          yield from read_tsv_pairs(path, source_column, target_column,
                                    header)


def read_bitext(path_spec: str, source_column: int = -2,
                target_column: int = -1, header: bool = False
                ) -> List[Tuple[str, str]]:
  """All (source, target) pairs of a bitext path spec (see module doc)."""
  pairs = list(iter_bitext(path_spec, source_column, target_column, header))
  if not pairs:
    raise BitextError(f"The bitext {path_spec} holds no translation pair.")
  return pairs
