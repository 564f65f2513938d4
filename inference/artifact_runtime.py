"""A TFLite or ONNX artifact of an export, run with its runtime alone.

    from cmlm.inference import artifact_runtime
    model = artifact_runtime.load("exports/tiny/tflite", quantized=True)
    embeddings = model.embed(["A sentence.", "Another."], normalize=True)

An artifact directory (`export/artifacts.py` writes it) holds the encoder,
token ids to the embedding, in float32 and int8 (`model.tflite` and
`model_int8.tflite`, or `model.onnx` and `model_int8.onnx`), the vocabulary
(`vocab.txt`) and `artifact.json` (the tokenization, the files, what the
export measured, each file's size and SHA-256, checked before the model
loads: `inference.integrity`). The text is tokenized here, in plain Python
(`data_pipelines.plain_tokenizer`, tested equal to the garden's in-graph
tokenizer), and the encoder reads rows ordered by length in chunks of 32
cut to their longest, as the SavedModels do. This module imports neither
TensorFlow nor anything of the garden that does: a TFLite artifact runs
with `ai-edge-litert` (or TensorFlow's `tf.lite` where that is missing), an
ONNX one with `onnxruntime`. The embedding is the encoder's `default`
output, as the export's encoder + preprocessor give it (not normalised
unless `normalize=True`).
"""
import json
import os
import threading
from typing import Callable, List, Optional, Sequence

import numpy as np

from cmlm.data_pipelines import plain_tokenizer
from cmlm.inference import integrity
from cmlm.modeling import vectors

MANIFEST = "artifact.json"
FORMATS = ("tflite", "onnx")
# `artifact.json`'s `graph` of an ONNX artifact (`export.fused_onnx`).
FUSED_GRAPH = "onnxruntime fused operators (com.microsoft)"
TF2ONNX_GRAPH = "tf2onnx (standard ONNX operators)"
# As modeling.length_chunks.ENCODER_CHUNK (which imports TensorFlow): rows
# read at once, so that activations stay in the CPU's caches.
ENCODER_CHUNK = 32
# Sentences whose tokens `token_lengths` keeps for the `embed_batch` calls
# that follow (an `embed` counts tokens to order its batches, then embeds
# them: the text is tokenized once, ~10 us a sentence saved).
RECENT_TOKENS = 1 << 16


def is_artifact(directory: str) -> bool:
  """Whether `directory` is an artifact directory (holds artifact.json)."""
  return os.path.isfile(os.path.join(directory, MANIFEST))


def read_manifest(directory: str) -> dict:
  """The artifact's `artifact.json` (`integrity.DamagedModel` when it is
  not readable JSON)."""
  path = os.path.join(directory, MANIFEST)
  with integrity.loading(path, MANIFEST):
    with open(path, encoding="utf-8") as f:
      manifest = json.load(f)
    if not isinstance(manifest, dict) or "files" not in manifest:
      raise ValueError("no 'files'")
  return manifest


def default_threads() -> int:
  """The CPUs this process may run on."""
  try:
    return len(os.sched_getaffinity(0))
  except AttributeError:
    return os.cpu_count() or 1


class _TfliteRunner:
  """`(ids, mask) -> [rows, dim]` with a TFLite interpreter (XNNPack).

  An interpreter is one set of tensors: two threads resizing, filling and
  invoking it at once fail ("There is at least 1 reference to internal
  data in the interpreter") or mix their rows, so a call holds the
  runner's lock throughout (uncontended, under a microsecond against an
  invoke's milliseconds; the interpreter uses every core of a call
  anyway)."""

  def __init__(self, path: str, threads: int):
    try:
      from ai_edge_litert.interpreter import Interpreter  # pylint: disable=g-import-not-at-top
    except ImportError:
      try:
        import tensorflow as tf  # pylint: disable=g-import-not-at-top
      except ImportError:
        raise ImportError(
            f"{path} needs a TFLite runtime: pip install ai-edge-litert (or "
            "tensorflow).") from None
      Interpreter = tf.lite.Interpreter  # pylint: disable=invalid-name
    self._interpreter = Interpreter(model_path=path, num_threads=threads)
    inputs = {d["name"]: d["index"]
              for d in self._interpreter.get_input_details()}
    self._ids = next(i for n, i in inputs.items() if "input_word_ids" in n)
    self._mask = next(i for n, i in inputs.items() if "input_mask" in n)
    self._output = self._interpreter.get_output_details()[0]["index"]
    self._shape = None
    self._lock = threading.Lock()

  def __call__(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    with self._lock:
      if ids.shape != self._shape:  # re-planning is a call's costly part
        self._interpreter.resize_tensor_input(self._ids, ids.shape)
        self._interpreter.resize_tensor_input(self._mask, ids.shape)
        self._interpreter.allocate_tensors()
        self._shape = ids.shape
      self._interpreter.set_tensor(self._ids, ids)
      self._interpreter.set_tensor(self._mask, mask)
      self._interpreter.invoke()
      return self._interpreter.get_tensor(self._output)  # a copy


class _OnnxRunner:
  """`(ids, mask) -> [rows, dim]` with an onnxruntime CPU session (whose
  `run` may be called from several threads at once)."""

  def __init__(self, path: str, threads: int):
    try:
      import onnxruntime  # pylint: disable=g-import-not-at-top
    except ImportError:
      raise ImportError(f"{path} needs onnxruntime: pip install "
                        "onnxruntime.") from None
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 3
    self._session = onnxruntime.InferenceSession(
        path, options, providers=["CPUExecutionProvider"])

  def __call__(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return self._session.run(None, {"input_word_ids": ids,
                                    "input_mask": mask})[0]


_RUNNERS = {"tflite": _TfliteRunner, "onnx": _OnnxRunner}


class ArtifactModel:
  """Sentences to embeddings with one artifact (see the module docstring).

  Attributes:
    format: "tflite" or "onnx".
    quantized: the int8 model is loaded (else float32).
    dimension: the embedding's size.
    tokenizer: the `PlainTokenizer` of the artifact's vocabulary.
    manifest: `artifact.json`.
  """

  def __init__(self, directory: str, quantized: bool = False,
               threads: Optional[int] = None):
    if not is_artifact(directory):
      raise FileNotFoundError(f"{directory} is not a TFLite or ONNX artifact "
                              f"of an export (no {MANIFEST}).")
    self.manifest = read_manifest(directory)
    self.format = self.manifest["format"]
    self.quantized = bool(quantized)
    precision = "int8" if quantized else "float32"
    # The model and the vocabulary as export wrote them (artifact.json's
    # sizes and SHA-256): a truncated or altered file is named, not run.
    integrity.check_artifact(directory, self.manifest, [precision])
    self.dimension = int(self.manifest["dimension"])
    tokenization = self.manifest["tokenization"]
    self.tokenizer = plain_tokenizer.PlainTokenizer.from_file(
        os.path.join(directory, self.manifest["vocab_file"]),
        seq_length=tokenization["seq_length"],
        lower_case=tokenization["lower_case"],
        text_normalization=tokenization["text_normalization"])
    self._recent = {}  # sentence -> tokens, of the last `token_lengths`
    model_path = os.path.join(directory, self.manifest["files"][precision])
    with integrity.loading(model_path, f"{self.format} model"):
      self._run: Callable[[np.ndarray, np.ndarray], np.ndarray] = _RUNNERS[
          self.format](model_path, threads or default_threads())

  def token_lengths(self, sentences: Sequence[str]) -> np.ndarray:
    """int64 `[n]`: the tokens each sentence fills ([CLS] and [SEP] too).
    Up to `RECENT_TOKENS` of them are kept for the `embed_batch` calls that
    follow."""
    tokens = self.tokenizer.encode(sentences)
    self._recent = (dict(zip(sentences, tokens))
                    if len(tokens) <= RECENT_TOKENS else {})
    return np.array([len(ids) for ids in tokens], np.int64)

  def embed_batch(self, sentences: Sequence[str]) -> np.ndarray:
    """float32 `[n, dim]`, one call's worth: rows ordered by length and read
    in chunks of `ENCODER_CHUNK`, each padded to its longest row."""
    recent, encode_one = self._recent, self.tokenizer.encode_one
    tokens = [recent.get(s) or encode_one(s) for s in sentences]
    embeddings = np.empty([len(tokens), self.dimension], np.float32)
    order = sorted(range(len(tokens)), key=lambda i: -len(tokens[i]))
    for start in range(0, len(order), ENCODER_CHUNK):
      rows = order[start:start + ENCODER_CHUNK]
      longest = len(tokens[rows[0]])
      ids = np.full([len(rows), longest], self.tokenizer.pad_id, np.int32)
      mask = np.zeros([len(rows), longest], np.int32)
      for row, index in enumerate(rows):
        ids[row, :len(tokens[index])] = tokens[index]
        mask[row, :len(tokens[index])] = 1
      embeddings[rows] = self._run(ids, mask)
    return embeddings

  def embed(self, sentences: Sequence[str], batch_size: int = 32,
            normalize: bool = False) -> np.ndarray:
    """float32 `[len(sentences), dim]`, rows in input order, in calls of
    `batch_size` sentences of about one length; unit rows if `normalize`."""
    if batch_size < 1:
      raise ValueError(f"batch_size must be 1 or more, got {batch_size}.")
    sentences = list(sentences)
    order = np.argsort(-self.token_lengths(sentences), kind="stable")
    embeddings = np.zeros([len(sentences), self.dimension], np.float32)
    for start in range(0, len(sentences), batch_size):
      rows = order[start:start + batch_size]
      embeddings[rows] = self.embed_batch([sentences[i] for i in rows])
    self._recent = {}
    return vectors.l2_normalize(embeddings) if normalize else embeddings


def load(directory: str, quantized: bool = False,
         threads: Optional[int] = None) -> ArtifactModel:
  """The artifact in `directory` (or, given an export directory, its
  `tflite/`, else its `onnx/`); `quantized` loads the int8 model."""
  if not is_artifact(directory):
    for name in FORMATS:
      if is_artifact(os.path.join(directory, name)):
        return ArtifactModel(os.path.join(directory, name), quantized, threads)
  return ArtifactModel(directory, quantized, threads)


def available_formats(directory: str) -> List[str]:
  """The artifact formats an export's version directory holds."""
  return [name for name in FORMATS
          if is_artifact(os.path.join(directory, name))]
