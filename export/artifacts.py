"""TFLite and ONNX artifacts of the encoder, float32 and int8, for CPU speed.

`python -m cmlm export --formats=saved_model,tflite,onnx` writes, beside the
SavedModels of the same published version (`export.publish`):

    tflite/model.tflite       token ids -> embedding, float32, TFLite builtins
    tflite/model_int8.tflite  the same with int8 weights (dynamic range:
                              activations quantized per call)
    onnx/model.onnx           the same encoder in onnxruntime's fused
                              transformer kernels, written from its weights
                              (`export.fused_onnx`); an encoder of another
                              shape: its graph through tf2onnx (opset 17,
                              standard operators, constants folded);
                              `artifact.json`'s `graph` says which
    onnx/model_int8.onnx      onnxruntime's quantize_dynamic, QInt8 weights
                              per output channel (tf2onnx's Gemms as
                              MatMuls first, so that every projection is
                              int8)
    */vocab.txt               the vocabulary, for the tokenizer
    */tokenizer.json          the same tokenization for Hugging Face's
                              `tokenizers` (Python, Rust, Node, Java, ...:
                              `data_pipelines.tokenizer_json`), so that any
                              runtime can feed the model without the garden
    */artifact.json           tokenization, files, sizes and SHA-256 (checked
                              before a model loads), measured agreement

Each model maps `input_word_ids`, `input_mask` int32 `[batch, time]` to the
encoder's `default` float32 `[batch, dim]` (the embedding as trained, as
`encoder/` gives it; one segment). The tokenization stays outside the graph,
in plain Python (`data_pipelines.plain_tokenizer`, read by
`inference.artifact_runtime`): TF Text's ops are not TFLite builtins (they
need Flex or TF Text's own kernels) nor ONNX ops, and in Python a sentence
costs ~7 us against ~0.3 ms for a TensorFlow call at batch 1.

Every artifact is checked before it is kept: its embeddings of
`PROBE_SENTENCES` (long, empty, non-Latin, emoji, controls), tokenized as
the runtime does, against the SavedModel's encoder on the in-graph
tokenization; `artifact.json` records the smallest cosine of float32 and of
int8. An artifact that cannot be made (a converter error, a missing
package) is reported in one line by `write_artifacts` and the others are
written. Nothing here names a local path.
`--formats=sentence_transformers` (`export.sentence_transformers_folder`)
is parsed here too: the transformer as a Hugging Face / sentence-transformers
folder.
"""
import contextlib
import json
import logging
import os
import shutil
from typing import Callable, Dict, Optional, Sequence

import numpy as np
import tensorflow as tf
import tf_keras

from cmlm.data_pipelines import file_digests
from cmlm.data_pipelines import tokenization as tokenization_lib
from cmlm.data_pipelines import tokenizer_json
from cmlm.data_pipelines import vocabulary
from cmlm.export import fused_onnx
from cmlm.inference import artifact_runtime
from cmlm.modeling.siamese_encoder import SiameseEncoder
from cmlm.modeling.vectors import paired_cosine_similarity

SENTENCE_TRANSFORMERS = "sentence_transformers"
FORMATS = (("saved_model",) + artifact_runtime.FORMATS +
           (SENTENCE_TRANSFORMERS,))
FILES = {"tflite": {"float32": "model.tflite", "int8": "model_int8.tflite"},
         "onnx": {"float32": "model.onnx", "int8": "model_int8.onnx"}}
VOCAB_FILE = "vocab.txt"
ONNX_OPSET = 17
FUSED_GRAPH = artifact_runtime.FUSED_GRAPH
# The fused graph is kept only if it embeds random padded rows as the
# encoder does (float32 rounding: 1 - 1e-6 on MiniLM).
FUSED_MIN_COSINE = 0.9999
TF2ONNX_GRAPH = artifact_runtime.TF2ONNX_GRAPH
# Long, empty, non-Latin, emoji, controls: what every artifact must embed as
# the SavedModel does.
PROBE_SENTENCES = (
    "A plain English sentence about the weather.",
    "",
    "Élisabeth 東京 Москва القاهرة नमस्ते mixed scripts",
    "emoji 😀🎉👍🏽 and flags 🇫🇷 ❤️",
    "control\x00chars\x07 tab\t and\r\n newline",
    " ".join(["a long sentence of many words"] * 60),
    "Short.",
    "Don't stop-believing... (really?) [yes] {no} 3.14159",
)
# What `--formats` needs beyond TensorFlow.
_PACKAGES = {"tflite": ("tokenizers",),
             "onnx": ("tf2onnx", "onnx", "onnxruntime", "tokenizers"),
             SENTENCE_TRANSFORMERS: ("tf2onnx", "onnx", "onnxruntime",
                                     "tokenizers")}


class ArtifactUnavailable(Exception):
  """This artifact cannot be made for this model (one sentence why)."""


def parse_formats(formats: Sequence[str]) -> tuple:
  """`--formats` checked: known names, saved_model always included (the
  other formats are checked against it, and TF-Hub / TF Serving read it);
  a missing package is named before anything is built."""
  names = [name.strip() for name in formats if name.strip()]
  unknown = [name for name in names if name not in FORMATS]
  if unknown:
    raise ValueError(f"--formats: unknown {', '.join(map(repr, unknown))}; "
                     f"choose from {', '.join(FORMATS)}.")
  for name in names:
    for package in _PACKAGES.get(name, ()):
      try:
        __import__(package)
      except ImportError:
        raise ValueError(f"--formats={name} needs the {package} package: pip "
                         "install -r requirements.txt.") from None
  return tuple(name for name in FORMATS
               if name == "saved_model" or name in names)


def embedding_function(encoder_model: tf_keras.Model):
  """The traced function every artifact converts: ids and mask int32
  `[batch, time]` -> the encoder's `default` `[batch, dim]`."""
  spec = [tf.TensorSpec([None, None], tf.int32, name=name)
          for name in ("input_word_ids", "input_mask")]

  @tf.function(input_signature=spec, autograph=False)
  def embed(input_word_ids, input_mask):
    outputs = encoder_model(dict(input_word_ids=input_word_ids,
                                 input_mask=input_mask,
                                 input_type_ids=tf.zeros_like(input_word_ids)),
                            training=False)
    return {"default": outputs["default"]}
  return embed


def _write_tflite(directory: str, function, encoder_model) -> dict:
  del encoder_model  # the traced function is all TFLite's converter reads
  concrete = function.get_concrete_function()
  for precision, name in FILES["tflite"].items():
    converter = tf.lite.TFLiteConverter.from_concrete_functions([concrete])
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    if precision == "int8":  # dynamic range: int8 weights, no calibration
      converter.optimizations = [tf.lite.Optimize.DEFAULT]
    with open(os.path.join(directory, name), "wb") as f:
      f.write(converter.convert())
  return {}


def _write_onnx(directory: str, function, encoder_model) -> dict:
  """The fused graph where the encoder has BERT's shape (at batch 1 on
  MiniLM, tf2onnx's graph ran at 0.7x the fused one: docs/benchmarks.md),
  else tf2onnx's. Returns the manifest's `graph` (and `not_fused`: why)."""
  float32_path = os.path.join(directory, FILES["onnx"]["float32"])
  int8_path = os.path.join(directory, FILES["onnx"]["int8"])
  encoder = _sentence_encoder(encoder_model)
  reason = ("it is not a SiameseEncoder" if encoder is None else
            fused_onnx.why_not_fusable(encoder))
  if reason is None:
    model = fused_onnx.fused_model(encoder)
    cosine = fused_onnx.agreement(encoder, model)
    if cosine >= FUSED_MIN_COSINE:
      write_fused_onnx_pair(model, float32_path, int8_path)
      return dict(graph=FUSED_GRAPH)
    reason = (f"its fused graph disagreed with it (smallest cosine "
              f"{cosine:.4f})")
  write_onnx_pair(function, float32_path, int8_path)
  return dict(graph=TF2ONNX_GRAPH, not_fused=reason)


def _sentence_encoder(encoder_model: tf_keras.Model):
  """The `SiameseEncoder` inside the export's functional model (or the
  model itself), None if there is none."""
  if isinstance(encoder_model, SiameseEncoder):
    return encoder_model
  found = [layer for layer in encoder_model.layers
           if isinstance(layer, SiameseEncoder)]
  return found[0] if len(found) == 1 else None


def write_fused_onnx_pair(model, float32_path: str, int8_path: str) -> None:
  """`model` (`fused_onnx.fused_model`'s) float32 at `float32_path`, and
  int8 at `int8_path` (dynamic quantization, QInt8 weights per output
  channel: QAttention, MatMulInteger and a uint8 embedding table).

  Examples:
    >>> write_fused_onnx_pair(fused_onnx.fused_model(encoder),
    ...                       "onnx/model.onnx", "onnx/model_int8.onnx")
  """
  import onnx  # pylint: disable=g-import-not-at-top
  from onnxruntime import quantization  # pylint: disable=g-import-not-at-top
  onnx.save(model, float32_path)
  quantization.quantize_dynamic(
      float32_path, int8_path, weight_type=quantization.QuantType.QInt8,
      per_channel=True)


def write_onnx_pair(function, float32_path: str, int8_path: str) -> None:
  """The traced `function` as ONNX: float32 at `float32_path` (tf2onnx,
  constants folded) and int8 at `int8_path` (onnxruntime's dynamic
  quantization, QInt8 weights per output channel, every projection).
  Its inputs and outputs keep the names of the function's signature and
  of its output dict.

  Examples:
    >>> write_onnx_pair(embedding_function(encoder_model),
    ...                 "onnx/model.onnx", "onnx/model_int8.onnx")
  """
  import tf2onnx  # pylint: disable=g-import-not-at-top
  from onnxruntime import quantization  # pylint: disable=g-import-not-at-top
  directory = os.path.dirname(float32_path)
  converted = os.path.join(directory, "converted.onnx")
  tf2onnx.convert.from_function(
      function, input_signature=function.input_signature, opset=ONNX_OPSET,
      output_path=converted)
  _fold_constants(converted, float32_path)
  os.remove(converted)
  for_int8 = os.path.join(directory, "for_int8.onnx")
  _gemms_as_matmuls(float32_path, for_int8)
  # Per output channel: on MiniLM, per-tensor weights (the default) left
  # the embeddings of STS-B sentences at a mean cosine of 0.973 to float32
  # (smallest 0.954), per channel at 0.996 (0.993).
  quantization.quantize_dynamic(
      for_int8, int8_path, weight_type=quantization.QuantType.QInt8,
      per_channel=True)
  os.remove(for_int8)


def _fold_constants(source: str, target: str) -> None:
  """`source` with onnxruntime's basic graph optimizations (constant
  folding, redundant nodes; standard ONNX ops, no hardware-specific
  kernels) saved as `target`. tf2onnx's graph of the attention einsums
  keeps each kernel twice, once only for a `Shape` node, and reshapes the
  output projection's kernel at run time: folded, MiniLM's float32 file
  is 90 instead of 101 MB and every projection's kernel is a constant."""
  import onnxruntime  # pylint: disable=g-import-not-at-top
  options = onnxruntime.SessionOptions()
  options.graph_optimization_level = (
      onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC)
  options.optimized_model_filepath = target
  options.log_severity_level = 3
  onnxruntime.InferenceSession(source, options,
                               providers=["CPUExecutionProvider"])


def _gemms_as_matmuls(source: str, target: str) -> None:
  """`source` with each `Gemm` of a constant kernel written as `MatMul`
  (+ `Add` of its bias), saved as `target`: onnxruntime's dynamic
  quantization makes int8 kernels of MatMul, not of Gemm, and tf2onnx
  writes the attention's projections as Gemm. On MiniLM the int8 file was
  45 MB with the 24 attention kernels left float32, 24 MB with them int8."""
  import onnx  # pylint: disable=g-import-not-at-top
  from onnx import helper  # pylint: disable=g-import-not-at-top
  from onnx import numpy_helper  # pylint: disable=g-import-not-at-top
  model = onnx.load(source)
  graph = model.graph
  constants = {tensor.name: tensor for tensor in graph.initializer}
  nodes = []
  for node in graph.node:
    attributes = {a.name: helper.get_attribute_value(a)
                  for a in node.attribute}
    if (node.op_type != "Gemm" or node.input[1] not in constants or
        attributes.get("transA", 0) or attributes.get("alpha", 1.0) != 1.0
        or attributes.get("beta", 1.0) not in (0.0, 1.0)):
      nodes.append(node)
      continue
    kernel = numpy_helper.to_array(constants[node.input[1]])
    if attributes.get("transB", 0):
      kernel = kernel.T
    # Named after the Gemm's output, unique in the graph (a node's name
    # may be empty).
    output = node.output[0]
    kernel_name = f"{output}/kernel"
    graph.initializer.append(
        numpy_helper.from_array(np.ascontiguousarray(kernel), kernel_name))
    bias = (len(node.input) > 2 and node.input[2] and
            attributes.get("beta", 1.0) == 1.0)
    product = f"{output}/matmul" if bias else output
    nodes.append(helper.make_node("MatMul", [node.input[0], kernel_name],
                                  [product], name=f"{output}/matmul"))
    if bias:
      nodes.append(helper.make_node("Add", [product, node.input[2]], [output],
                                    name=f"{output}/bias"))
  del graph.node[:]
  graph.node.extend(nodes)
  used = {name for node in graph.node for name in node.input}
  kept = [tensor for tensor in graph.initializer if tensor.name in used]
  del graph.initializer[:]
  graph.initializer.extend(kept)
  onnx.save(model, target)


_WRITERS: Dict[str, Callable] = {"tflite": _write_tflite, "onnx": _write_onnx}


def min_cosine(a: np.ndarray, b: np.ndarray) -> float:
  """The smallest cosine between the rows of `a` and `b`.

  Examples:
    >>> min_cosine(np.eye(2), np.array([[1.0, 0.0], [1.0, 1.0]]))
    0.7071067811865475
  """
  return float(np.min(paired_cosine_similarity(a, b, dtype=None)))


def write_artifact(directory: str, name: str, encoder_model: tf_keras.Model,
                   tokenization: tokenization_lib.TokenizationConfig,
                   vocab: Optional[vocabulary.VocabularyFile] = None) -> dict:
  """Writes one artifact (`name`: tflite or onnx) into the new `directory`
  and returns its `artifact.json`; raises `ArtifactUnavailable`. `vocab`:
  the run's vocabulary file as read (read here when not given)."""
  vocab = vocabulary.read_vocabulary(tokenization.vocab_file, vocab)
  function = embedding_function(encoder_model)
  os.makedirs(directory)
  try:
    with quiet_converters():
      written = _WRITERS[name](directory, function, encoder_model)
  except Exception as error:  # pylint: disable=broad-except
    # A converter's failure is about this model (an op it lacks), not a bug
    # of the export: the other formats are still written.
    first_line = (str(error).strip().splitlines() or [type(error).__name__])
    raise ArtifactUnavailable(first_line[-1][:300]) from error
  vocab.write_copy(os.path.join(directory, VOCAB_FILE))
  tokenizer_json.write_tokenizer_json(
      tokenization, os.path.join(directory, tokenizer_json.FILE_NAME), vocab)
  manifest = dict(
      format=name, files=FILES[name], vocab_file=VOCAB_FILE,
      tokenizer_file=tokenizer_json.FILE_NAME,
      inputs=["input_word_ids", "input_mask"], output="default",
      dimension=int(encoder_model.output["default"].shape[-1]),
      tokenization=dict(lower_case=bool(tokenization.lower_case),
                        text_normalization=tokenization.text_normalization,
                        seq_length=int(tokenization.seq_length)),
      int8="dynamic-range: int8 weights, activations quantized per call",
      **written,
      bytes={precision: os.path.getsize(os.path.join(directory, file))
             for precision, file in FILES[name].items()},
      # What a reader checks before it loads a file (inference.integrity).
      sha256={file: digest["sha256"] for file, digest in
              file_digests.digests(directory, list(FILES[name].values()) +
                                   [VOCAB_FILE]).items()})
  with open(os.path.join(directory, artifact_runtime.MANIFEST), "w",
            encoding="utf-8") as f:
    json.dump(manifest, f, indent=1)
  manifest["check"] = check_artifact(directory, encoder_model, tokenization,
                                     vocab)
  with open(os.path.join(directory, artifact_runtime.MANIFEST), "w",
            encoding="utf-8") as f:
    json.dump(manifest, f, indent=1)
  return manifest


def check_artifact(directory: str, encoder_model: tf_keras.Model,
                   tokenization: tokenization_lib.TokenizationConfig,
                   vocab: Optional[vocabulary.VocabularyFile] = None) -> dict:
  """The smallest cosine, float32 and int8, between the artifact's
  embeddings of `PROBE_SENTENCES` and the SavedModel encoder's on the
  in-graph tokenization (`vocab`: the vocabulary file as read)."""
  tokenizer = tokenization_lib.build_wordpiece_tokenizer(tokenization,
                                                         vocab=vocab)
  reference = encoder_model(
      tokenizer.tokenize_and_pack(tf.constant(PROBE_SENTENCES)),
      training=False)["default"].numpy()
  check = {"sentences": len(PROBE_SENTENCES)}
  for precision in ("float32", "int8"):
    model = artifact_runtime.ArtifactModel(directory,
                                           quantized=precision == "int8")
    check[f"{precision}_min_cosine"] = round(
        min_cosine(model.embed(PROBE_SENTENCES), reference), 6)
  return check


def write_artifacts(directory: str, formats: Sequence[str],
                    encoder_model: tf_keras.Model,
                    tokenization: tokenization_lib.TokenizationConfig,
                    log: Callable[[str], None] = print,
                    vocab: Optional[vocabulary.VocabularyFile] = None
                    ) -> Dict[str, dict]:
  """Writes `directory/<format>/` for each artifact format of `formats`;
  one that cannot be made is reported with `log` in one line and left out.
  Returns the manifests of those written. `vocab`: the run's vocabulary
  file as read (the run record's), shared by every format."""
  vocab = vocabulary.read_vocabulary(tokenization.vocab_file, vocab)
  written = {}
  for name in formats:
    if name not in _WRITERS:
      continue
    path = os.path.join(directory, name)
    log(f"Writing the {name} artifact (float32 and int8)...")
    try:
      written[name] = write_artifact(path, name, encoder_model, tokenization,
                                     vocab)
    except ArtifactUnavailable as error:
      shutil.rmtree(path, ignore_errors=True)
      log(f"export: {name} not written: this model does not convert "
          f"({error}); the other formats are.")
  return written


@contextlib.contextmanager
def quiet_converters():
  """tf2onnx and the TFLite converter log every pass at INFO; onnxruntime's
  quantization warns on the root logger about a pre-processing it does not
  need here.

  Examples:
    >>> with quiet_converters():
    ...   write_onnx_pair(function, "model.onnx", "model_int8.onnx")
  """
  loggers = [logging.getLogger(name) for name in ("tf2onnx", "absl", "")]
  levels = [logger.level for logger in loggers]
  for logger in loggers:
    logger.setLevel(logging.ERROR)
  try:
    yield
  finally:
    for logger, level in zip(loggers, levels):
      logger.setLevel(level)
