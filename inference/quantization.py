"""Embedding quantization, as sentence-transformers' `quantize_embeddings`.

    quantize(embeddings, precision, ranges=None, calibration_embeddings=None)

`precision` is one of `PRECISIONS`, with sentence-transformers' semantics
(`sentence_transformers.util.quantization.quantize_embeddings`, 6.x), so
that embeddings quantized here and there compare bit for bit:

  * `float32`: unchanged (as float32);
  * `int8` / `uint8` (scalar quantization): each dimension's range
    [min, max] is cut into 255 steps, `q = clip(floor((x - min) / step),
    0, 255)`, stored as uint8, or as `q - 128` in int8. The ranges are
    `ranges` (`[2, dim]`: row 0 the minima, row 1 the maxima), else the
    per-dimension min and max of `calibration_embeddings`, else of
    `embeddings` themselves (then queries and a corpus quantized apart do
    not share a scale: give the corpus's embeddings as calibration);
  * `binary` / `ubinary`: one bit per dimension, `x > 0`, packed 8 to a
    byte (`np.packbits`, the last byte zero-padded): ubinary as uint8,
    binary as that minus 128 in int8. `[n, dim]` becomes `[n, ceil(dim/8)]`.
"""
import sys
from typing import Optional

import numpy as np

PRECISIONS = ("float32", "int8", "uint8", "binary", "ubinary")
# Fewer calibration rows than this give ranges that the next data will
# often leave (sentence-transformers warns likewise).
FEW_CALIBRATION_ROWS = 100


def check_precision(precision: str) -> None:
  if precision not in PRECISIONS:
    raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, "
                     f"got {precision!r}.")


def ranges_of(calibration_embeddings: np.ndarray) -> np.ndarray:
  """`[2, dim]`: each dimension's minimum (row 0) and maximum (row 1)."""
  calibration_embeddings = np.asarray(calibration_embeddings)
  return np.vstack((np.min(calibration_embeddings, axis=0),
                    np.max(calibration_embeddings, axis=0)))


class RangeTracker:
  """Each dimension's minimum and maximum over rows given a chunk at a time:
  `ranges_of` of all of them, holding `[2, dim]` (so a file of any size
  calibrates in bounded memory).

  Examples:
    >>> tracker = RangeTracker()
    >>> tracker.update(np.array([[0.0, 1.0], [2.0, -1.0]]))
    >>> tracker.update(np.array([[-3.0, 0.5]]))
    >>> tracker.ranges("int8").tolist()
    [[-3.0, -1.0], [2.0, 1.0]]
  """

  def __init__(self):
    self.count = 0
    self._ranges = None  # [2, dim]

  def update(self, rows: np.ndarray) -> None:
    rows = np.asarray(rows)
    if not len(rows):
      return
    chunk = ranges_of(rows)
    if self._ranges is None:
      self._ranges = chunk
    else:
      if chunk.shape != self._ranges.shape:
        raise ValueError(f"Calibration rows of shape {rows.shape} after "
                         f"rows of {self._ranges.shape[1]} dimensions.")
      self._ranges = np.vstack((np.minimum(self._ranges[0], chunk[0]),
                                np.maximum(self._ranges[1], chunk[1])))
    self.count += len(rows)

  def ranges(self, precision: str, warn_stream=None) -> np.ndarray:
    """`[2, dim]` of the rows seen, refused for fewer than 2 and warned
    about for fewer than `FEW_CALIBRATION_ROWS`, as `quantize` does."""
    if self.count < 2:
      raise ValueError(f"{precision} ranges cannot be computed from "
                       f"{self.count} embedding(s); give calibration "
                       "embeddings or ranges.")
    if self.count < FEW_CALIBRATION_ROWS:
      (warn_stream or sys.stderr).write(
          f"warning: {precision} ranges from only {self.count} embeddings; "
          f"calibrate on {FEW_CALIBRATION_ROWS} or more for stable buckets.\n")
    return self._ranges


def quantize(embeddings: np.ndarray, precision: str,
             ranges: Optional[np.ndarray] = None,
             calibration_embeddings: Optional[np.ndarray] = None,
             warn_stream=None) -> np.ndarray:
  """`embeddings` `[n, dim]` (float) at `precision`; see the module docstring.

  Raises:
    ValueError: an unknown precision; int8/uint8 ranges to be computed from
      one embedding; ranges or calibration of another dimension.
  """
  check_precision(precision)
  embeddings = np.asarray(embeddings)
  if embeddings.dtype.kind not in "f":
    raise ValueError(f"Only float embeddings can be quantized, got "
                     f"{embeddings.dtype}.")
  if embeddings.ndim != 2:
    raise ValueError(f"quantize takes embeddings [n, dim], got shape "
                     f"{embeddings.shape}.")
  dim = embeddings.shape[1]
  if precision == "float32":
    return embeddings.astype(np.float32)
  if precision in ("binary", "ubinary"):
    packed = np.packbits(embeddings > 0, axis=-1)  # [n, ceil(dim / 8)] uint8
    return packed if precision == "ubinary" else (packed - 128).astype(np.int8)
  # int8 / uint8: scalar quantization over calibrated ranges.
  if ranges is None:
    if calibration_embeddings is None:
      if len(embeddings) == 0:
        return np.zeros([0, dim], np.int8 if precision == "int8" else np.uint8)
      if len(embeddings) == 1:
        raise ValueError(f"{precision} ranges cannot be computed from a single "
                         "embedding; give calibration embeddings or ranges.")
      calibration_embeddings = embeddings
    calibration_embeddings = np.asarray(calibration_embeddings)
    if calibration_embeddings.ndim != 2 or (
        calibration_embeddings.shape[1] != dim):
      raise ValueError(f"The calibration embeddings have shape "
                       f"{calibration_embeddings.shape}; expected [n, {dim}] "
                       "like the embeddings.")
    if len(calibration_embeddings) < FEW_CALIBRATION_ROWS:
      (warn_stream or sys.stderr).write(
          f"warning: {precision} ranges from only "
          f"{len(calibration_embeddings)} embeddings; calibrate on "
          f"{FEW_CALIBRATION_ROWS} or more for stable buckets.\n")
    ranges = ranges_of(calibration_embeddings)
  ranges = np.asarray(ranges).astype(np.float32, copy=False)
  if ranges.shape != (2, dim):
    raise ValueError(f"The quantization ranges have shape {ranges.shape}; "
                     f"expected [2, {dim}] (minima, then maxima).")
  starts = ranges[0]
  steps = (ranges[1] - starts) / 255
  steps = np.where(steps == 0, 1, steps)
  buckets = np.clip(np.floor((embeddings - starts) / steps), 0, 255)
  if precision == "uint8":
    return buckets.astype(np.uint8)
  return (buckets - 128).astype(np.int8)
