"""What `encode` and `cmlm.SentenceEncoder` do to the model's embeddings.

In sentence-transformers' order (`SentenceTransformer.encode`): truncate to
`truncate_dim` (Matryoshka-style: the first dimensions), then L2-normalise,
then quantize (`inference.quantization`). Normalising after truncation keeps
the rows unit vectors, so a dot product stays the cosine.
"""
from typing import Optional

import numpy as np

from cmlm.inference import quantization
from cmlm.modeling.vectors import l2_normalize

def check_truncate_dim(truncate_dim: Optional[int], dim: int) -> None:
  """Refuses a `truncate_dim` that is not 1..`dim` (the model's size)."""
  if truncate_dim is None:
    return
  if not 1 <= truncate_dim <= dim:
    raise ValueError(f"truncate_dim={truncate_dim} must be between 1 and "
                     f"the model's {dim} dimensions.")


def check_normalize(normalize: Optional[bool], normalizes_in_graph: bool,
                    model: str) -> None:
  """Refuses `normalize=False` (raw embeddings asked for explicitly) when
  the model L2-normalises in its graph: it cannot give them."""
  if normalize is False and normalizes_in_graph:
    raise ValueError(
        f"{model} L2-normalises its embeddings in its graph (exported with "
        "--normalize), so un-normalised embeddings cannot be given; use the "
        "export's encoder + preprocessor pair, the training run, or an export "
        "made with --nonormalize.")


def truncate_and_normalize(embeddings: np.ndarray,
                           truncate_dim: Optional[int] = None,
                           normalize: Optional[bool] = None) -> np.ndarray:
  """float32 `[n, truncate_dim or dim]`, L2-normalised if `normalize`."""
  embeddings = np.asarray(embeddings, np.float32)
  if truncate_dim is not None:
    check_truncate_dim(truncate_dim, embeddings.shape[1])
    embeddings = embeddings[:, :truncate_dim]
  if normalize:
    embeddings = l2_normalize(embeddings)
  return embeddings


def postprocess(embeddings: np.ndarray, truncate_dim: Optional[int] = None,
                normalize: Optional[bool] = None, precision: str = "float32",
                calibration_embeddings: Optional[np.ndarray] = None,
                ranges: Optional[np.ndarray] = None,
                warn_stream=None) -> np.ndarray:
  """Truncates, normalises, then quantizes `embeddings` `[n, dim]`.

  `calibration_embeddings` (for int8/uint8) are model embeddings like
  `embeddings`: they are truncated and normalised the same way first, so
  their ranges are those of the space quantized.
  """
  quantization.check_precision(precision)
  embeddings = truncate_and_normalize(embeddings, truncate_dim, normalize)
  if calibration_embeddings is not None:
    calibration_embeddings = np.asarray(calibration_embeddings, np.float32)
    if calibration_embeddings.ndim != 2 or (
        calibration_embeddings.shape[1] < embeddings.shape[1]):
      raise ValueError(f"The calibration embeddings have shape "
                       f"{calibration_embeddings.shape}; expected [n, "
                       f"{embeddings.shape[1]}] (or the model's full size).")
    calibration_embeddings = truncate_and_normalize(
        calibration_embeddings, embeddings.shape[1], normalize)
  return quantization.quantize(embeddings, precision, ranges,
                               calibration_embeddings, warn_stream)
