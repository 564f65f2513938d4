"""Where `python -m cmlm encode` writes embeddings: .npy, .jsonl, .parquet.

    write_embeddings(path, embeddings, sentences, output_format="auto")

  * `npy`: the array itself (`np.load`), float32 or the quantized dtype;
    row i is sentence i.
  * `jsonl`: one object a line, `{"text": sentence, "embedding": [...]}`,
    in input order (integers for a quantized precision).
  * `parquet`: a table with a `text` string column and an `embedding`
    column of fixed-size lists of the array's dtype (needs `pyarrow`).

The format is `output_format`, or the extension of `path`. The file is
written beside `path` under a temporary name and renamed into place, so a
reader never sees half of it and a failure leaves nothing.
"""
import json
import os
from typing import Callable, List

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
  kind = output_format_of(path, output_format)
  if len(sentences) != len(embeddings):
    raise ValueError(f"{len(embeddings)} embeddings for {len(sentences)} "
                     "sentences.")
  writer = {"npy": _write_npy, "jsonl": _write_jsonl,
            "parquet": _write_parquet}[kind]
  _atomically(path, lambda temporary: writer(temporary, embeddings,
                                             sentences))


def _write_npy(path, embeddings, sentences):
  del sentences
  with open(path, "wb") as f:
    np.save(f, embeddings)


def _write_jsonl(path, embeddings, sentences):
  with open(path, "w", encoding="utf-8") as f:
    for sentence, row in zip(sentences, embeddings):
      f.write(json.dumps({"text": sentence, "embedding": row.tolist()},
                         ensure_ascii=False) + "\n")


def _write_parquet(path, embeddings, sentences):
  pa = _pyarrow()
  import pyarrow.parquet as pq  # pylint: disable=g-import-not-at-top
  values = pa.array(np.ascontiguousarray(embeddings).reshape(-1))
  column = pa.FixedSizeListArray.from_arrays(values, embeddings.shape[1])
  table = pa.table({"text": pa.array(sentences, pa.string()),
                    "embedding": column})
  pq.write_table(table, path)


def _pyarrow():
  try:
    import pyarrow  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise ValueError("Writing .parquet needs the pyarrow package (pip install "
                     "pyarrow); or write .npy or .jsonl.") from None
  return pyarrow


def _atomically(path: str, write: Callable[[str], None]) -> None:
  """`write(temporary)` beside `path`, then renamed onto `path`."""
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  with atomic_file.atomic_file(path) as temporary:
    write(temporary)
