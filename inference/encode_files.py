"""`python -m cmlm encode`: a file of sentences to a file of embeddings.

    python -m cmlm encode --model=exports/tiny --input=sentences.txt \
        --output=embeddings.npy [--batch_size=256] [--nonormalize]

`--input` holds one sentence per line (UTF-8; or .jsonl, .csv, .tsv, stdin:
`inference.text_inputs`); row i of the array written to `--output` (.npy, or
.jsonl/.parquet: `inference.embedding_outputs`) is the embedding of sentence
i, L2-normalised unless `--nonormalize`, truncated and quantized on request
(`inference.postprocess`). `--model` is any kind `inference.embedders` loads:
an export, a SavedModel, a TF Serving base, a training run or a TF-Hub pair.
"""
import os
from typing import Optional

import numpy as np

from cmlm.inference import embedders
from cmlm.inference import embedding_outputs
from cmlm.inference import postprocess
from cmlm.inference import progress as progress_lib
from cmlm.inference import quantization
from cmlm.inference import text_inputs


def encode_file(model: str, input_path: str, output_path: str,
                batch_size: int = 256, normalize: bool = True,
                overwrite: bool = False, show_progress: bool = True,
                checkpoint: Optional[str] = None, input_format: str = "auto",
                text_field: str = "text", column: Optional[str] = None,
                header: bool = True, output_format: str = "auto",
                precision: str = "float32",
                truncate_dim: Optional[int] = None,
                calibration: Optional[str] = None, stdin=None,
                backend: Optional[str] = None,
                quantized: bool = False) -> np.ndarray:
  """Encodes `input_path` in batches; writes and returns the embeddings.

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
  Every argument and file is checked before the model loads; nothing is
  written unless all went well.
  """
  if batch_size < 1:
    raise ValueError(f"--batch_size must be 1 or more, got {batch_size}.")
  quantization.check_precision(precision)
  if truncate_dim is not None and truncate_dim < 1:
    raise ValueError(f"--truncate_dim must be 1 or more, got {truncate_dim}.")
  if calibration and precision not in ("int8", "uint8"):
    raise ValueError("--calibration sets the int8/uint8 ranges; it does "
                     f"nothing with --precision={precision}.")
  output_format = embedding_outputs.check_output(output_path, output_format,
                                                 overwrite)
  read = lambda path, fmt: text_inputs.read_input(  # pylint: disable=g-long-lambda
      path, fmt, text_field, column, header, stdin)
  sentences = read(input_path, input_format)
  calibration_embeddings = calibration_sentences = None
  if calibration:
    if calibration.lower().endswith(".npy"):
      calibration_embeddings = _load_calibration(calibration)
    else:
      calibration_sentences = read(calibration, "auto")
  embedder = embedders.load_embedder(model, checkpoint, backend, quantized)
  postprocess.check_normalize(normalize, embedder.normalizes_in_graph, model)

  def embed_all(texts):
    progress = progress_lib.Progress(len(texts), enabled=show_progress)
    embeddings = embedder.embed(texts, batch_size, progress.update)
    progress.close()
    return embeddings
  embeddings = embed_all(sentences)
  postprocess.check_truncate_dim(truncate_dim, embeddings.shape[1])
  if calibration_sentences is not None:
    calibration_embeddings = embed_all(calibration_sentences)
  embeddings = postprocess.postprocess(
      embeddings, truncate_dim, normalize, precision, calibration_embeddings)
  embedding_outputs.write_embeddings(output_path, embeddings, sentences,
                                     output_format)
  return embeddings


def _load_calibration(path: str) -> np.ndarray:
  """The float `[n, dim]` embeddings of a calibration .npy file."""
  if not os.path.isfile(path):
    raise FileNotFoundError(f"--calibration={path} is not a file.")
  try:
    array = np.load(path, allow_pickle=False)
  except ValueError as error:
    raise ValueError(f"--calibration={path} is not a .npy array ({error})."
                     ) from None
  if array.ndim != 2 or array.dtype.kind != "f" or len(array) < 2:
    raise ValueError(f"--calibration={path} holds {array.dtype} "
                     f"{list(array.shape)}; expected float embeddings "
                     "[n >= 2, dim], e.g. written by encode --precision=float32.")
  return array
