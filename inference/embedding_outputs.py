"""Where `python -m cmlm encode` writes embeddings: .npy, .jsonl, .parquet.

    with embedding_writer(path, rows, output_format="auto") as writer:
      writer.write(embeddings, sentences)   # a chunk at a time
    write_embeddings(path, embeddings, sentences, output_format="auto")

  * `npy`: the array itself (`np.load`), float32 or the quantized dtype;
    row i is sentence i.
  * `jsonl`: one object a line, `{"text": sentence, "embedding": [...]}`,
    in input order (integers for a quantized precision).
  * `parquet`: a table with a `text` string column and an `embedding`
    column of fixed-size lists of the array's dtype (needs `pyarrow`).

The format is `output_format`, or the extension of `path`. The file is
written beside `path` under a temporary name and renamed into place, so a
reader never sees half of it and a failure leaves nothing. A writer holds
no row: `encode` writes a file of any size in chunks, memory bounded by
the chunk.
"""
import contextlib
import json
import os
from typing import Iterator, List

import numpy as np

from cmlm.data_pipelines import atomic_file

FORMATS = ("npy", "jsonl", "parquet")
_EXTENSIONS = {".npy": "npy", ".jsonl": "jsonl", ".ndjson": "jsonl",
               ".parquet": "parquet"}


def output_format_of(path: str, output_format: str = "auto") -> str:
  """The format to write `path` in: `output_format` or from its extension."""
  if output_format not in ("auto",) + FORMATS:
    raise ValueError(f"--output_format must be auto or one of "
                     f"{', '.join(FORMATS)}, got {output_format!r}.")
  if output_format != "auto":
    return output_format
  extension = os.path.splitext(path)[1].lower()
  if extension not in _EXTENSIONS:
    raise ValueError(f"--output={path}: name a .npy, .jsonl or .parquet file, "
                     "or set --output_format.")
  return _EXTENSIONS[extension]


def check_output(path: str, output_format: str = "auto",
                 overwrite: bool = False) -> str:
  """Checks `path` before any work; returns its format."""
  if not path:
    raise ValueError("--output is required: the .npy, .jsonl or .parquet "
                     "file to write.")
  if os.path.isdir(path):  # said first: --overwrite would not replace it
    raise ValueError(f"--output={path} is a directory; name a file.")
  kind = output_format_of(path, output_format)
  if os.path.lexists(path) and not overwrite:
    raise FileExistsError(f"{path} already exists; pass --overwrite to "
                          "replace it.")
  if kind == "parquet":
    _pyarrow()
  return kind


def write_embeddings(path: str, embeddings: np.ndarray, sentences: List[str],
                     output_format: str = "auto") -> None:
  """Writes `embeddings` (row i: `sentences[i]`) to `path`, atomically."""
  if len(sentences) != len(embeddings):
    raise ValueError(f"{len(embeddings)} embeddings for {len(sentences)} "
                     "sentences.")
  with embedding_writer(path, len(sentences), output_format) as writer:
    writer.write(embeddings, sentences)


@contextlib.contextmanager
def embedding_writer(path: str, rows: int, output_format: str = "auto"
                     ) -> Iterator["EmbeddingWriter"]:
  """An `EmbeddingWriter` of `rows` rows into a temporary beside `path`,
  renamed onto `path` when the block ends with every row written; on an
  error (or fewer rows) the temporary is removed and `path` left as it was.

  Examples:
    >>> with embedding_writer("e.npy", rows=3) as writer:
    ...   writer.write(np.ones([2, 4], np.float32), ["a", "b"])
    ...   writer.write(np.ones([1, 4], np.float32), ["c"])
  """
  kind = output_format_of(path, output_format)
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  with atomic_file.atomic_file(path) as temporary:
    writer = _WRITERS[kind](temporary, rows)
    try:
      yield writer
      writer.finish()
    finally:
      writer.close()


class EmbeddingWriter:
  """Appends rows of embeddings (and their sentences) to one file.

  `write` takes one chunk at a time and keeps none of it: the .npy header
  says the final `rows` from the start, .jsonl appends lines, .parquet
  writes a row group per chunk. Every chunk has the first one's dtype and
  width.
  """

  def __init__(self, path: str, rows: int):
    self.path, self.rows, self.written = path, rows, 0
    self._layout = None  # (dtype, width) of the first chunk

  def write(self, embeddings: np.ndarray, sentences: List[str]) -> None:
    embeddings = np.asarray(embeddings)
    if embeddings.ndim != 2 or len(sentences) != len(embeddings):
      raise ValueError(f"{len(embeddings)} embeddings of shape "
                       f"{list(embeddings.shape)} for {len(sentences)} "
                       "sentences.")
    layout = (embeddings.dtype, embeddings.shape[1])
    if self._layout is None:
      self._layout = layout
      self._start(*layout)
    elif layout != self._layout:
      raise ValueError(f"A chunk of {layout[0]} [n, {layout[1]}] after "
                       f"{self._layout[0]} [n, {self._layout[1]}].")
    if self.written + len(embeddings) > self.rows:
      raise ValueError(f"More than the {self.rows} rows announced: the "
                       "input changed while it was encoded.")
    self._append(embeddings, sentences)
    self.written += len(embeddings)

  def finish(self) -> None:
    """Refuses a file short of its rows (then nothing is published)."""
    if self.written != self.rows:
      raise ValueError(f"{self.written} of {self.rows} rows written: the "
                       "input changed while it was encoded.")
    if self._layout is None:
      raise ValueError("No embedding was written.")

  def _start(self, dtype: np.dtype, width: int) -> None:
    del dtype, width

  def _append(self, embeddings: np.ndarray, sentences: List[str]) -> None:
    raise NotImplementedError

  def close(self) -> None:
    pass


class _NpyWriter(EmbeddingWriter):
  """The .npy header for `[rows, width]`, then the rows' bytes (C order)."""

  def __init__(self, path: str, rows: int):
    super().__init__(path, rows)
    self._file = open(path, "wb")  # pylint: disable=consider-using-with

  def _start(self, dtype, width):
    np.lib.format.write_array_header_1_0(self._file, {
        "descr": np.lib.format.dtype_to_descr(dtype),
        "fortran_order": False, "shape": (self.rows, width)})

  def _append(self, embeddings, sentences):
    del sentences
    self._file.write(np.ascontiguousarray(embeddings).tobytes())

  def close(self):
    self._file.close()


class _JsonlWriter(EmbeddingWriter):
  """`{"text": sentence, "embedding": [...]}` a line."""

  def __init__(self, path: str, rows: int):
    super().__init__(path, rows)
    self._file = open(path, "w", encoding="utf-8")  # pylint: disable=consider-using-with

  def _append(self, embeddings, sentences):
    self._file.writelines(
        json.dumps({"text": sentence, "embedding": row.tolist()},
                   ensure_ascii=False) + "\n"
        for sentence, row in zip(sentences, embeddings))

  def close(self):
    self._file.close()


class _ParquetWriter(EmbeddingWriter):
  """`text` and `embedding` (fixed-size lists) columns, a row group a
  chunk (pyarrow's `ParquetWriter`)."""

  def __init__(self, path: str, rows: int):
    super().__init__(path, rows)
    self._pa = _pyarrow()
    self._writer = None

  def _start(self, dtype, width):
    import pyarrow.parquet as pq  # pylint: disable=g-import-not-at-top
    pa = self._pa
    schema = pa.schema([("text", pa.string()), ("embedding", pa.list_(
        pa.from_numpy_dtype(dtype), width))])
    self._writer = pq.ParquetWriter(self.path, schema)

  def _append(self, embeddings, sentences):
    pa = self._pa
    values = pa.array(np.ascontiguousarray(embeddings).reshape(-1))
    column = pa.FixedSizeListArray.from_arrays(values, embeddings.shape[1])
    self._writer.write_table(pa.table({"text": pa.array(sentences,
                                                        pa.string()),
                                       "embedding": column}))

  def close(self):
    if self._writer is not None:
      self._writer.close()


_WRITERS = {"npy": _NpyWriter, "jsonl": _JsonlWriter,
            "parquet": _ParquetWriter}


def _pyarrow():
  try:
    import pyarrow  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise ValueError("Writing .parquet needs the pyarrow package (pip install "
                     "pyarrow); or write .npy or .jsonl.") from None
  return pyarrow
