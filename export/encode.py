"""`python -m cmlm encode`: a file of sentences to a .npy of embeddings.

    python -m cmlm encode --model=exports/tiny --input=sentences.txt \
        --output=embeddings.npy [--batch_size=256] [--nonormalize]

`--input` holds one sentence per line (UTF-8; or .jsonl, .csv, .tsv, stdin:
`export.text_inputs`); row i of the array written to `--output` (.npy, or
.jsonl/.parquet: `export.embedding_outputs`) is the embedding of sentence
i, L2-normalised unless `--nonormalize`, truncated and quantized on request
(`export.postprocess`). `encode_file` also takes a training run or an
`ENCODER_DIR,PREPROCESSOR_DIR` pair (`export.model_sources`);
`load_embedder` below loads the SavedModel kinds, which are
  * a directory with `encoder/` and `preprocessor/` SavedModels: ours
    (`python -m cmlm export`) or any TF-Hub style pair, e.g. a BERT encoder
    and `bert_en_uncased_preprocess` (the embedding is `"default"`);
  * a text-to-embedding SavedModel (`saved_model.pb` with a
    `serving_default` signature from strings to one embedding output);
  * the base of TF Serving's layout, `<base>/<version>/`: the highest version.
"""
import os
from typing import Callable, List, Optional

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the ops the SavedModels use)

from data_pipelines import text_lines
from export import progress as progress_lib
from export import publish
from export import serving
from export.preprocessor import STRING_BATCH
from modeling import length_chunks

Embedder = Callable[[List[str]], np.ndarray]
# Sentences tokenized at once to count their tokens before batching.
LENGTH_BATCH = 4096


def _is_saved_model(path: str) -> bool:
  return tf.io.gfile.exists(os.path.join(path, "saved_model.pb"))


def pair_embedder(preprocessor, encoder) -> Embedder:
  """A TF-Hub encoder + preprocessor pair (loaded SavedModels) as an Embedder.

  As fast as the serving model: the encoder reads rows ordered by length in
  chunks cut to their longest sentence (`length_chunks.encode_by_length`), not the
  preprocessor's padded length; the embedding is the pair's `"default"`
  output, not normalised.
  """
  @tf.function(input_signature=[STRING_BATCH])
  def embed_batch(sentences):
    return length_chunks.encode_by_length(
        lambda inputs: encoder(inputs, training=False)["default"],
        preprocessor(sentences))

  @tf.function(input_signature=[STRING_BATCH])
  def token_lengths(sentences):
    return tf.reduce_sum(preprocessor(sentences)["input_mask"], axis=1)

  def embed(sentences):
    return embed_batch(tf.constant(sentences, tf.string)).numpy()
  embed.token_lengths = token_lengths
  embed.loaded = (preprocessor, encoder)  # keeps the variables alive
  return embed


def _pair_embedder(model: str) -> Embedder:
  return pair_embedder(
      tf.saved_model.load(os.path.join(model, "preprocessor")),
      tf.saved_model.load(os.path.join(model, "encoder")))


def _signature_embedder(path: str) -> Embedder:
  loaded = tf.saved_model.load(path)
  signature = loaded.signatures.get(serving.SIGNATURE_NAME)
  if signature is None:
    raise ValueError(f"The SavedModel {path} has no "
                     f"{serving.SIGNATURE_NAME!r} signature.")
  _, inputs = signature.structured_input_signature
  strings = [k for k, spec in inputs.items() if spec.dtype == tf.string]
  outputs = signature.structured_outputs
  names = [serving.OUTPUT_NAME] if serving.OUTPUT_NAME in outputs else [
      k for k, spec in outputs.items() if spec.dtype.is_floating]
  if len(strings) != 1 or len(inputs) != 1 or len(names) != 1:
    raise ValueError(
        f"The {serving.SIGNATURE_NAME!r} signature of {path} does not map one "
        f"string input to one embedding: inputs {sorted(inputs)}, outputs "
        f"{sorted(outputs)}.")

  def embed(sentences):
    result = signature(**{strings[0]: tf.constant(sentences, tf.string)})
    return result[names[0]].numpy()
  embed.loaded = loaded  # keeps the variables alive
  if hasattr(loaded, "token_lengths"):  # ours (`serving.TextEmbedding`)
    embed.token_lengths = loaded.token_lengths
  return embed


def load_embedder(model: str) -> Embedder:
  """A function from a list of sentences to their embeddings, for `--model`."""
  if not model:
    raise ValueError("--model is required: an export directory, a SavedModel "
                     "or a TF Serving base path.")
  if not tf.io.gfile.isdir(model):
    raise FileNotFoundError(f"--model={model} is not a directory.")
  # An export of ours: its published version, resolved once, so that the
  # encoder and the preprocessor are of the same export (export/publish.py).
  model = publish.resolve(model)
  if all(_is_saved_model(os.path.join(model, name))
         for name in ("encoder", "preprocessor")):
    return _pair_embedder(model)
  if _is_saved_model(model):
    return _signature_embedder(model)
  versions = [int(name) for name in tf.io.gfile.listdir(model)
              if name.strip("/").isdigit()
              and _is_saved_model(os.path.join(model, name.strip("/")))]
  if os.path.isdir(os.path.join(model, "serving")) and not versions:
    return load_embedder(os.path.join(model, "serving"))
  if versions:
    return _signature_embedder(os.path.join(model, str(max(versions))))
  raise FileNotFoundError(
      f"--model={model} holds no SavedModel: expected encoder/ and "
      "preprocessor/, a saved_model.pb, or version directories <base>/N/.")


def read_sentences(path: str) -> List[str]:
  """The lines of a UTF-8 text file, without their line ends (LF, CRLF and
  CR alike: `data_pipelines.text_lines`)."""
  if not path:
    raise ValueError("--input is required: a text file, one sentence a line.")
  if not tf.io.gfile.exists(path) or tf.io.gfile.isdir(path):
    raise FileNotFoundError(f"--input={path} is not a file.")
  with tf.io.gfile.GFile(path, "rb") as f:
    data = f.read()
  if data.startswith(text_lines.UTF8_BOM):
    data = data[len(text_lines.UTF8_BOM):]
  sentences = []
  for number, raw in enumerate(text_lines.split_lines(data), start=1):
    try:
      sentences.append(raw.decode("utf-8"))
    except UnicodeDecodeError:
      raise ValueError(
          f"--input={path} is not UTF-8 text (line {number}).") from None
  if not sentences:
    raise ValueError(f"--input={path} is empty; give one sentence a line.")
  return sentences


def lengths_of(embed: Embedder, sentences: List[str]) -> np.ndarray:
  """How long each sentence is for `embed`: its tokens where the embedder
  can count them (`token_lengths`), else its characters."""
  token_lengths = getattr(embed, "token_lengths", None)
  if token_lengths is None:
    return np.array([len(s) for s in sentences], np.int64)
  return np.concatenate(
      [token_lengths(tf.constant(sentences[start:start + LENGTH_BATCH],
                                 tf.string)).numpy()
       for start in range(0, len(sentences), LENGTH_BATCH)] or [[]]
  ).astype(np.int64)


def embed_in_batches(embed: Embedder, sentences: List[str], batch_size: int,
                     on_batch: Callable[[int], None] = lambda size: None,
                     lengths: Optional[np.ndarray] = None) -> np.ndarray:
  """`[len(sentences), hidden]` float32 embeddings, rows in input order.

  Batches hold sentences of one length, longest first (sentence-transformers'
  `encode` orders by characters; we order by tokens where the embedder counts
  them: on STS-B dev in batches of 32, 2% of the tokens computed are padding
  instead of 25%), so that a model that pads each batch only to its longest
  sentence pads little. `lengths` gives them instead (`lengths_of`).
  """
  if lengths is None:
    lengths = lengths_of(embed, sentences)
  order = np.argsort(-np.asarray(lengths), kind="stable")
  embeddings = None
  for start in range(0, len(sentences), batch_size):
    rows = order[start:start + batch_size]
    batch = np.asarray(embed([sentences[i] for i in rows]), np.float32)
    if embeddings is None:
      embeddings = np.empty([len(sentences), batch.shape[1]], np.float32)
    embeddings[rows] = batch
    on_batch(len(rows))
  return embeddings


def encode_file(model: str, input_path: str, output_path: str,
                batch_size: int = 256, normalize: bool = True,
                overwrite: bool = False, show_progress: bool = True,
                checkpoint: Optional[str] = None, input_format: str = "auto",
                text_field: str = "text", column: Optional[str] = None,
                header: bool = True, output_format: str = "auto",
                precision: str = "float32",
                truncate_dim: Optional[int] = None,
                calibration: Optional[str] = None, stdin=None) -> np.ndarray:
  """Encodes `input_path` in batches; writes and returns the embeddings.

  Inputs are read by `export.text_inputs` (`input_format`, `text_field`,
  `column`, `header`; `-` is stdin), the model loaded by
  `export.model_sources` (any kind; `checkpoint` for a training run), the
  embeddings truncated, normalised and quantized by `export.postprocess`
  and written by `export.embedding_outputs` (`output_format`). `normalize`
  False is refused for a model that normalises in its graph. `calibration`
  (int8/uint8): a .npy of float embeddings of the same model, or a file of
  sentences (read like the input) to embed; the quantization ranges are
  its per-dimension minima and maxima (sentence-transformers'
  `calibration_embeddings`); without it, those of the embeddings written.
  Every argument and file is checked before the model loads; nothing is
  written unless all went well.
  """
  # Imported here: model_sources imports this module.
  from export import embedding_outputs  # pylint: disable=g-import-not-at-top
  from export import model_sources  # pylint: disable=g-import-not-at-top
  from export import postprocess  # pylint: disable=g-import-not-at-top
  from export import quantization  # pylint: disable=g-import-not-at-top
  from export import text_inputs  # pylint: disable=g-import-not-at-top
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
  embed = model_sources.load(model, checkpoint)
  postprocess.check_normalize(normalize, model_sources.normalizes_in_graph(
      embed), model)

  def embed_all(texts):
    progress = progress_lib.Progress(len(texts), enabled=show_progress)
    embeddings = embed_in_batches(embed, texts, batch_size, progress.update)
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
