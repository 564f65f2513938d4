"""Any model of the garden, or any TF-Hub one, as one `Embedder`.

    embedder = load_embedder(model, checkpoint=None, backend=None,
                             quantized=False)
    vectors = embedder.embed(sentences, batch_size=32)  # float32 [n, dim]

`load_embedder` is the one loader `encode`, `eval`, `pcr`, the demo and
`cmlm.SentenceEncoder` use. `model` is any of

  * a training `--model_dir` (`params.yaml` + `ckpt-N`), or the run as
    already read (`inference.run_record.RunRecord`): its encoder restored
    (latest checkpoint, or `checkpoint`) and fed the run's own tokenization;
  * an export of `python -m cmlm export` (its published version), or any
    TF-Hub style `encoder/` + `preprocessor/` pair in one directory (the
    embedding is the encoder's `"default"`);
  * `ENCODER_DIR,PREPROCESSOR_DIR`: such a pair kept in two directories;
  * a text-to-embedding SavedModel (`saved_model.pb` with a
    `serving_default` signature from strings to one embedding), or the base
    of TF Serving's layout, `<base>/<version>/` (the highest version).

An export written with `--formats=...,tflite,onnx` also holds `tflite/`
and `onnx/` (`export.artifacts`); `backend` picks what computes the
embedding: "saved_model" (encoder + preprocessor), "tflite" or "onnx"
(`inference.artifact_runtime`), and `quantized` their int8 model. Left out,
the backend is the fastest float32 one the export holds (`float32_order`,
measured by benchmarks/encode_vs_sentence_transformers.py: ONNX first when
its graph is the fused one, else TFLite); with `quantized`, the fastest
int8 one. An artifact directory itself
(`EXPORT/tflite`) loads too. Every file of an export is checked against
what `export` recorded before it loads, and one that does not load is named
with the command that writes it again (`inference.integrity`). Every other kind is a SavedModel or a run:
asking it for another backend, or int8, is an error.

`encoder_embedder` makes the same object from an encoder in memory (the demo,
best-checkpoint selection). `embed` orders sentences by length so that each
batch pads little, and returns rows in input order.
"""
import os
from typing import Optional, Tuple, Union

import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the ops the SavedModels use)

from cmlm.data_pipelines import unk_rate
from cmlm.data_pipelines.tokenization import STRING_BATCH
from cmlm.inference import artifact_runtime
from cmlm.inference import input_paths
from cmlm.inference import integrity
from cmlm.inference import layout
from cmlm.inference import run_record
from cmlm.modeling import length_chunks
from cmlm.modeling.embedder import Embedder
from cmlm.modeling.embedder import as_embedder  # noqa: F401  (re-exported)
from cmlm.modeling.embedder import encoder_embedder
from cmlm.training import run_dir

BACKENDS = ("saved_model",) + artifact_runtime.FORMATS
# The backends by speed at float32 on a CPU, fastest first, and the
# artifacts' at int8 (benchmarks/encode_vs_sentence_transformers.py; BUILD.md).
FASTEST_FIRST = ("tflite", "onnx", "saved_model")
# An ONNX artifact in onnxruntime's fused kernels (export.fused_onnx) ran
# float32 at 1.14x-1.27x the TFLite file at batch 1 and 0.99x-1.07x at 32
# and 256 on MiniLM, two runs (docs/benchmarks.md); tf2onnx's graph below.
FASTEST_FIRST_FUSED_ONNX = ("onnx", "tflite", "saved_model")
FASTEST_INT8_FIRST = ("tflite", "onnx")


# How errors name the arguments: the commands' flags, or the Python
# API's arguments (`cmlm.SentenceEncoder(model, checkpoint, backend,
# quantized)`).
FLAG_NAMES = ("--model", "--checkpoint", "--backend", "--quantized")
ARGUMENT_NAMES = ("model", "checkpoint", "backend", "quantized")


def load_embedder(model: Union[str, run_record.RunRecord],
                  checkpoint: Optional[str] = None,
                  backend: Optional[str] = None, quantized: bool = False,
                  names: Tuple[str, ...] = FLAG_NAMES,
                  pooling: Optional[str] = None) -> Embedder:
  """The `Embedder` of `model` (see the module docstring); errors name the
  arguments as `names` says. `pooling` reads a training run's encoder
  through another pooling than its own (`run_dir.with_pooling`).

  Examples:
    >>> embedder = load_embedder("runs/tiny")  # or an export, a SavedModel
    >>> embedder.embed(["A sentence.", "Another."], batch_size=32).shape
    (2, 128)
  """
  model_name, checkpoint_name, backend_name, quantized_name = names
  if not model:
    raise ValueError(f"{model_name} is required: {input_paths.MODEL_KINDS}.")
  if backend not in (None, "auto") + BACKENDS:
    raise ValueError(f"{backend_name} must be auto or one of "
                     f"{', '.join(BACKENDS)}, got {backend!r}.")
  backend = None if backend == "auto" else backend
  if quantized and backend == "saved_model":
    raise ValueError(f"{quantized_name}: the SavedModels are float32 only; "
                     "int8 is the tflite or onnx backend's.")
  if isinstance(model, run_record.RunRecord):
    if backend not in (None, "saved_model") or quantized:
      raise _no_artifacts(backend_name, backend, quantized_name,
                          f"{model_name}={model.model_dir}")
    return run_embedder(model, pooling)
  model = os.fspath(model)
  if checkpoint and "," in model:
    raise ValueError(f"{checkpoint_name} applies to a training run, not to "
                     f"{model_name}={model}.")
  input_paths.check_model(model, model_name)
  if pooling is not None and not run_dir.is_run_dir(model):
    raise ValueError(f"pooling={pooling} re-reads a training run's encoder; "
                     f"{model_name}={model} is not a run directory (an "
                     "export's pooling is fixed in its graph).")
  if artifact_runtime.is_artifact(model):
    return _artifact_embedder(model, backend, quantized)
  if (backend not in (None, "saved_model") or quantized) and (
      "," in model or run_dir.is_run_dir(model) or
      not tf.io.gfile.isdir(model) or
      not artifact_runtime.available_formats(layout.resolve(model))):
    raise _no_artifacts(backend_name, backend, quantized_name,
                        f"{model_name}={model}")
  if "," in model:
    return hub_pair_embedder(*model.split(",", 1), model_name=model_name)
  if run_dir.is_run_dir(model):
    return run_embedder(run_record.read_run(
        model, checkpoint, find_report=False, checkpoint_name=checkpoint_name),
        pooling)
  if checkpoint:
    raise ValueError(f"{checkpoint_name} applies to a training run; {model} "
                     f"holds no {run_dir.PARAMS_FILE}.")
  if tf.io.gfile.isdir(model) and backend != "saved_model":
    version_dir = layout.resolve(model)
    held = artifact_runtime.available_formats(version_dir)
    if backend is not None and backend not in held:
      raise FileNotFoundError(
          f"{backend_name}={backend}: {model} holds no {backend}/ artifact "
          f"(it holds {', '.join(held + ['saved_model'])}); export with "
          f"--formats=saved_model,{backend}.")
    order = FASTEST_INT8_FIRST if quantized else float32_order(version_dir)
    for name in ([backend] if backend else order):
      if name in held and _runtime_installed(name):
        return _artifact_embedder(os.path.join(version_dir, name), name,
                                  quantized)
  return saved_model_embedder(model, model_name)


def float32_order(version_dir: str) -> Tuple[str, ...]:
  """The float32 backends of an export's version, fastest first: the ONNX
  artifact leads when its graph is the fused one.

  Examples:
    >>> float32_order("exports/tiny/current")
    ('onnx', 'tflite', 'saved_model')
  """
  onnx_dir = os.path.join(version_dir, "onnx")
  if artifact_runtime.is_artifact(onnx_dir):
    graph = artifact_runtime.read_manifest(onnx_dir).get("graph")
    if graph == artifact_runtime.FUSED_GRAPH:
      return FASTEST_FIRST_FUSED_ONNX
  return FASTEST_FIRST


def _runtime_installed(name: str) -> bool:
  """Whether `name`'s runtime imports here (TFLite comes with TensorFlow)."""
  if name != "onnx":
    return True
  try:
    import onnxruntime  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  except ImportError:
    return False
  return True


def _artifact_embedder(directory: str, backend: Optional[str],
                       quantized: bool) -> Embedder:
  """A TFLite or ONNX artifact (`inference.artifact_runtime`) as an Embedder:
  tokenized in Python, run by its runtime, the encoder's `default`."""
  manifest = artifact_runtime.read_manifest(directory)
  if backend not in (None, manifest["format"]):
    raise ValueError(f"--backend={backend}: {directory} is a "
                     f"{manifest['format']} artifact.")
  try:
    model = artifact_runtime.ArtifactModel(directory, quantized)
  except ImportError as error:
    raise ValueError(str(error)) from None
  embedder = Embedder(model.embed_batch, token_lengths=model.token_lengths,
                      lengths_take_text=True, keep_alive=model)
  embedder.backend = f"{model.format} {'int8' if quantized else 'float32'}"
  return embedder


def _no_artifacts(backend_name: str, backend: Optional[str],
                  quantized_name: str, model: str) -> ValueError:
  """The error for a backend or int8 asked of a model without artifacts."""
  what = f"{backend_name}={backend}" if backend else quantized_name
  return ValueError(
      f"{what} needs an export holding TFLite or ONNX artifacts "
      f"(python -m cmlm export --formats=saved_model,tflite,onnx); "
      f"{model} holds none.")


def run_embedder(run: run_record.RunRecord,
                 pooling: Optional[str] = None) -> Embedder:
  """A training run's encoder, fed its training tokenization (the run as
  `run_record.read_run` read it; read through `pooling` when given). The
  run's casing is checked against the first batch it embeds (a warning)."""
  tokenization = run.tokenization
  return encoder_embedder(
      run.restore_encoder(pooling=pooling), run.tokenizer(), tokenization,
      run.checkpoint_path,
      check_first_batch=lambda sentences: unk_rate.check(
          tokenization, sentences[:unk_rate.SAMPLE_SENTENCES],
          "the evaluation data", refuse=False,
          owner=f"{run.model_dir}'s task.tokenization", verbose=False,
          vocab=run.vocabulary))


def pair_embedder(preprocessor, encoder) -> Embedder:
  """A TF-Hub encoder + preprocessor pair (loaded SavedModels).

  As fast as the serving model: the encoder reads rows ordered by length in
  chunks cut to their longest sentence (`length_chunks.encode_by_length`),
  not the preprocessor's padded length; the embedding is the pair's
  `"default"` output, not normalised.
  """
  @tf.function(input_signature=[STRING_BATCH], autograph=False)
  def embed_batch(sentences):
    return length_chunks.encode_by_length(
        lambda inputs: encoder(inputs, training=False)["default"],
        preprocessor(sentences))

  @tf.function(input_signature=[STRING_BATCH], autograph=False)
  def token_lengths(sentences):
    return tf.reduce_sum(preprocessor(sentences)["input_mask"], axis=1)

  return Embedder(
      lambda sentences: embed_batch(tf.constant(sentences, tf.string)).numpy(),
      token_lengths=token_lengths, keep_alive=(preprocessor, encoder))


def hub_pair_embedder(encoder_dir: str, preprocessor_dir: str,
                      model_name: str = "--model") -> Embedder:
  """A pair kept in two directories (`ENCODER_DIR,PREPROCESSOR_DIR`)."""
  for path, what in ((encoder_dir, "encoder"),
                     (preprocessor_dir, "preprocessor")):
    if not _is_saved_model(path):
      raise FileNotFoundError(
          f"{model_name}: {path} is not a SavedModel (no saved_model.pb); "
          f"ENCODER_DIR,PREPROCESSOR_DIR expects the {what} there.")
  encoder = _load_saved_model(encoder_dir)
  preprocessor = _load_saved_model(preprocessor_dir)
  _check_pair(encoder, preprocessor, model_name, encoder_dir,
              preprocessor_dir)
  return pair_embedder(preprocessor, encoder)


# What a TF-Hub BERT preprocessor has beside its call; an encoder has
# neither.
_PREPROCESSOR_PARTS = ("tokenize", "bert_pack_inputs")
# What calling a SavedModel with inputs it has no signature for raises.
_CALL_ERRORS = (ValueError, TypeError, KeyError, tf.errors.OpError)


def _check_pair(encoder, preprocessor, model_name: str, encoder_dir: str,
                preprocessor_dir: str) -> None:
  """The pair fits: the preprocessor turns text into inputs that the
  encoder takes, giving a `"default"` embedding. Otherwise one line naming
  `model_name` (`--model=ENCODER_DIR,PREPROCESSOR_DIR`), not TensorFlow's
  dump of the signatures at the first batch; the two given the wrong way
  round are said to be."""
  given = f"{model_name}={encoder_dir},{preprocessor_dir}"
  if _looks_like_preprocessor(encoder):
    swapped = "" if _looks_like_preprocessor(preprocessor) else (
        f": {model_name}={preprocessor_dir},{encoder_dir}")
    raise ValueError(
        f"{given}: the first directory looks like a preprocessor (it has "
        f"{' and '.join(_PREPROCESSOR_PARTS)}); give the encoder first, "
        f"ENCODER_DIR,PREPROCESSOR_DIR{swapped}.")
  try:
    inputs = preprocessor(tf.constant(["a"]))
  except _CALL_ERRORS:
    raise ValueError(
        f"{given}: the second directory is not a preprocessor (it does not "
        "take text); ENCODER_DIR,PREPROCESSOR_DIR expects a TF-Hub BERT "
        "preprocessor there.") from None
  try:
    encoder(inputs, training=False)["default"]
  except _CALL_ERRORS:
    raise ValueError(
        f"{given}: the first directory does not take the second's outputs "
        "(or gives no 'default' embedding); ENCODER_DIR,PREPROCESSOR_DIR "
        "expects a TF-Hub BERT encoder and its preprocessor.") from None


def _looks_like_preprocessor(loaded) -> bool:
  return all(hasattr(loaded, name) for name in _PREPROCESSOR_PARTS)


def signature_embedder(path: str) -> Embedder:
  """A text-to-embedding SavedModel's `serving_default` signature."""
  loaded = _load_saved_model(path)
  signature = loaded.signatures.get(layout.SIGNATURE_NAME)
  if signature is None:
    raise ValueError(f"The SavedModel {path} has no "
                     f"{layout.SIGNATURE_NAME!r} signature.")
  _, inputs = signature.structured_input_signature
  strings = [k for k, spec in inputs.items() if spec.dtype == tf.string]
  outputs = signature.structured_outputs
  names = [layout.OUTPUT_NAME] if layout.OUTPUT_NAME in outputs else [
      k for k, spec in outputs.items() if spec.dtype.is_floating]
  if len(strings) != 1 or len(inputs) != 1 or len(names) != 1:
    raise ValueError(
        f"The {layout.SIGNATURE_NAME!r} signature of {path} does not map one "
        f"string input to one embedding: inputs {sorted(inputs)}, outputs "
        f"{sorted(outputs)}.")

  def embed(sentences):
    result = signature(**{strings[0]: tf.constant(sentences, tf.string)})
    return result[names[0]].numpy()
  normalized = getattr(loaded, layout.NORMALIZED_VARIABLE, None)
  return Embedder(
      embed, token_lengths=getattr(loaded, "token_lengths", None),  # ours
      normalizes_in_graph=bool(normalized.numpy()) if normalized is not None
      else False, keep_alive=loaded)


def saved_model_embedder(model: str, model_name: str = "--model"
                         ) -> Embedder:
  """An export, a pair in one directory, a SavedModel or a TF Serving base."""
  if not tf.io.gfile.isdir(model):
    raise FileNotFoundError(f"{model_name}={model} is not a directory.")
  # An export of ours: its published version, resolved once, so that the
  # encoder and the preprocessor are of the same export (inference/layout.py).
  model = layout.resolve(model)
  if all(_is_saved_model(os.path.join(model, name))
         for name in ("encoder", "preprocessor")):
    return pair_embedder(
        _load_saved_model(os.path.join(model, "preprocessor")),
        _load_saved_model(os.path.join(model, "encoder")))
  if _is_saved_model(model):
    return signature_embedder(model)
  versions = [int(name) for name in tf.io.gfile.listdir(model)
              if name.strip("/").isdigit()
              and _is_saved_model(os.path.join(model, name.strip("/")))]
  if os.path.isdir(os.path.join(model, "serving")) and not versions:
    return saved_model_embedder(os.path.join(model, "serving"), model_name)
  if versions:
    return signature_embedder(os.path.join(model, str(max(versions))))
  raise FileNotFoundError(
      f"{model_name}={model} holds no SavedModel: expected encoder/ and "
      "preprocessor/, a saved_model.pb, or version directories <base>/N/.")


def _load_saved_model(path: str):
  """`tf.saved_model.load(path)`, its files first checked against the
  export's record; a damaged file is one line naming it and the export
  command that writes it again (`inference.integrity`)."""
  integrity.check_saved_model(path)
  with integrity.loading(path):
    return tf.saved_model.load(path)


def _is_saved_model(path: str) -> bool:
  return tf.io.gfile.exists(os.path.join(path, "saved_model.pb"))
