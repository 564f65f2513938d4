"""`python -m cmlm encode`: a file of sentences to a file of embeddings.

    python -m cmlm encode --model=exports/tiny --input=sentences.txt \
        --output=embeddings.npy [--batch_size=256] [--nonormalize]

`--input` holds one sentence per line (UTF-8; or .jsonl, .csv, .tsv, stdin:
`inference.text_inputs`); row i of the array written to `--output` (.npy, or
.jsonl/.parquet: `inference.embedding_outputs`) is the embedding of sentence
i, L2-normalised unless `--nonormalize`, truncated and quantized on request
(`inference.postprocess`). `--model` is any kind `inference.embedders` loads:
an export, a SavedModel, a TF Serving base, a training run or a TF-Hub pair
(an export's fastest backend unless `--backend` says).

A file of any size streams through in chunks of `CHUNK_BATCHES` batches:
the input is read a chunk at a time (after one pass that checks and counts
it), each chunk is embedded in batches of sentences of about one length
(`Embedder.embed` orders a chunk by tokens and puts its rows back in
order), post-processed and appended to the output, so memory is bounded by
the chunk, not the file. int8/uint8 without `--calibration` take their
ranges from all the embeddings written: the float rows then wait in an
unnamed temporary file beside the output (4 bytes a dimension a sentence
on disk, none in memory) and are quantized in a second pass.
"""
import contextlib
import dataclasses
import os
import sys
import tempfile
from typing import Iterator, List, Optional, Tuple

import numpy as np

from cmlm.inference import embedders
from cmlm.inference import embedding_outputs
from cmlm.inference import input_paths
from cmlm.inference import postprocess
from cmlm.inference import progress as progress_lib
from cmlm.inference import quantization
from cmlm.inference import text_inputs

# Batches read, embedded and written at a time: enough sentences for the
# length ordering to pad little (as ordering the whole file would), few
# enough to hold (8192 sentences at --batch_size=256).
CHUNK_BATCHES = 32


@dataclasses.dataclass
class Written:
  """What `encode_file` wrote: its path, dtype and `[rows, width]`."""
  path: str
  dtype: np.dtype
  shape: List[int]


def encode_file(model: str, input_path: str, output_path: str,
                batch_size: int = 256, normalize: bool = True,
                overwrite: bool = False, show_progress: bool = True,
                checkpoint: Optional[str] = None, input_format: str = "auto",
                text_field: str = "text", column: Optional[str] = None,
                header: bool = True, output_format: str = "auto",
                precision: str = "float32",
                truncate_dim: Optional[int] = None,
                calibration: Optional[str] = None, stdin=None,
                backend: Optional[str] = None, quantized: bool = False,
                chunk_size: Optional[int] = None) -> Written:
  """Encodes `input_path` chunk by chunk into `output_path`.

  Inputs are read by `inference.text_inputs` (`input_format`, `text_field`,
  `column`, `header`; `-` is stdin), the model loaded by
  `inference.embedders` (any kind; `checkpoint` for a training run), the
  embeddings truncated, normalised and quantized by `inference.postprocess`
  and written by `inference.embedding_outputs` (`output_format`). `normalize`
  False is refused for a model that normalises in its graph. `calibration`
  (int8/uint8): a .npy of float embeddings of the same model, or a file of
  sentences (read like the input) to embed; the quantization ranges are
  its per-dimension minima and maxima (sentence-transformers'
  `calibration_embeddings`); without it, those of the embeddings written.
  `backend` and `quantized` pick an export's SavedModels or its TFLite /
  ONNX artifact, float32 or int8 (`inference.embedders.load_embedder`).
  `chunk_size` sentences are held at a time (default `CHUNK_BATCHES`
  batches). Every argument and file is checked before the model loads;
  nothing is written unless all went well.
  """
  if batch_size < 1:
    raise ValueError(f"--batch_size must be 1 or more, got {batch_size}.")
  chunk_size = chunk_size or CHUNK_BATCHES * batch_size
  quantization.check_precision(precision)
  if truncate_dim is not None and truncate_dim < 1:
    raise ValueError(f"--truncate_dim must be 1 or more, got {truncate_dim}.")
  if calibration and precision not in ("int8", "uint8"):
    raise ValueError("--calibration sets the int8/uint8 ranges; it does "
                     f"nothing with --precision={precision}.")
  if input_path:  # a missing one is said when it is opened
    text_inputs.check_input_options(input_path, input_format, text_field,
                                    column)
  output_format = embedding_outputs.check_output(output_path, output_format,
                                                 overwrite)
  # Temporaries (standard input, int8's float rows) beside the output: the
  # disk that will hold it, not a memory file system's /tmp. Its directory
  # is made only once the output is written.
  spool_dir = os.path.dirname(os.path.abspath(output_path))
  with contextlib.ExitStack() as stack:
    def opened(path, fmt):
      return stack.enter_context(text_inputs.opened_input(
          path, fmt, text_field, column, header, stdin,
          spool_dir if os.path.isdir(spool_dir) else None))
    source = opened(input_path, input_format)
    calibration_rows = calibration_source = None
    if calibration:
      if calibration.lower().endswith(".npy"):
        calibration_rows = _load_calibration(calibration)
      else:
        calibration_source = opened(calibration, "auto")
    embedder = embedders.load_embedder(model, checkpoint, backend, quantized)
    postprocess.check_normalize(normalize, embedder.normalizes_in_graph, model)
    if truncate_dim is not None:  # the model's width, from one sentence
      postprocess.check_truncate_dim(
          truncate_dim, embedder.embed(["."], 1).shape[1])
    if show_progress:
      print(f"Encoding {source.count} sentences of {source.name} with "
            f"{getattr(embedder, 'backend', 'saved_model')}, batches of "
            f"{batch_size} ordered by length, {chunk_size} sentences at a "
            "time.", file=sys.stderr, flush=True)

    def floats(sentence_file) -> Iterator[Tuple[List[str], np.ndarray]]:
      """(sentences, truncated and normalised float32 rows), a chunk at a
      time, with a progress line."""
      progress = progress_lib.Progress(sentence_file.count,
                                       enabled=show_progress)
      for sentences in sentence_file.chunks(chunk_size):
        rows = embedder.embed(sentences, batch_size, progress.update)
        yield sentences, postprocess.truncate_and_normalize(
            rows, truncate_dim, normalize)
      progress.close()

    def calibration_ranges(width: int) -> np.ndarray:
      """int8/uint8 ranges of `--calibration`, its rows `width` wide."""
      if calibration_rows is None:
        return _ranges(precision, (rows for _, rows in floats(
            calibration_source)))
      if calibration_rows.shape[1] < width:
        raise ValueError(f"--calibration={calibration} holds embeddings of "
                         f"{calibration_rows.shape[1]} dimensions; expected "
                         f"{width} (or the model's full size).")
      return _ranges(precision, (
          postprocess.truncate_and_normalize(
              calibration_rows[start:start + chunk_size], width, normalize)
          for start in range(0, len(calibration_rows), chunk_size)))

    with embedding_outputs.embedding_writer(output_path, source.count,
                                            output_format) as writer:
      if precision in ("int8", "uint8") and not calibration:
        chunks = _quantized_from_spool(floats(source), source, chunk_size,
                                       precision, spool_dir)
      else:
        chunks = _quantized(floats(source), precision,
                            calibration_ranges if calibration else None)
      dtype = None
      for sentences, rows in chunks:
        writer.write(rows, sentences)
        dtype = rows.dtype
  return Written(output_path, dtype, [source.count, int(rows.shape[1])])


def _quantized(chunks, precision: str, ranges_of_width=None):
  """`chunks` of float rows at `precision`; int8/uint8 over the ranges
  `ranges_of_width(width)` gives once the first chunk says the width."""
  ranges = None
  for sentences, rows in chunks:
    if ranges_of_width is not None and ranges is None:
      ranges = ranges_of_width(rows.shape[1])
    yield sentences, quantization.quantize(rows, precision, ranges)


def _ranges(precision: str, chunks) -> np.ndarray:
  """int8/uint8 ranges of float rows given a chunk at a time."""
  tracker = quantization.RangeTracker()
  for rows in chunks:
    tracker.update(rows)
  return tracker.ranges(precision)


def _quantized_from_spool(chunks, source, chunk_size: int, precision: str,
                          spool_dir: str):
  """int8/uint8 over the ranges of all the rows: the float rows of `chunks`
  kept in an unnamed temporary file (gone when closed or the process ends)
  while the ranges are gathered, then read back and quantized with the
  sentences read again."""
  tracker = quantization.RangeTracker()
  with tempfile.TemporaryFile(dir=spool_dir) as spool:
    width = None
    for _, rows in chunks:
      tracker.update(rows)
      width = rows.shape[1]
      spool.write(np.ascontiguousarray(rows, np.float32).tobytes())
    ranges = tracker.ranges(precision)
    spool.seek(0)
    for sentences in source.chunks(chunk_size):
      rows = np.frombuffer(spool.read(4 * width * len(sentences)),
                           np.float32).reshape(len(sentences), width)
      yield sentences, quantization.quantize(rows, precision, ranges)


def _load_calibration(path: str) -> np.ndarray:
  """The float `[n, dim]` embeddings of a calibration .npy file, mapped
  (read a chunk at a time, never whole)."""
  input_paths.check_file(path, "--calibration")
  try:
    array = np.load(path, mmap_mode="r", allow_pickle=False)
  except ValueError as error:
    raise ValueError(f"--calibration={path} is not a .npy array ({error})."
                     ) from None
  if array.ndim != 2 or array.dtype.kind != "f" or len(array) < 2:
    raise ValueError(f"--calibration={path} holds {array.dtype} "
                     f"{list(array.shape)}; expected float embeddings "
                     "[n >= 2, dim], e.g. written by encode --precision=float32.")
  return array
