"""`python -m cmlm encode`: a file of sentences to a .npy of embeddings.

    python -m cmlm encode --model=exports/tiny --input=sentences.txt \
        --output=embeddings.npy [--batch_size=256] [--nonormalize]

`--input` holds one sentence per line (UTF-8); row i of the float32 array
`[num_lines, hidden]` written to `--output` is the embedding of line i, L2-
normalised unless `--nonormalize`. `--model` is any of
  * a directory with `encoder/` and `preprocessor/` SavedModels: ours
    (`python -m cmlm export`) or any TF-Hub style pair, e.g. a BERT encoder
    and `bert_en_uncased_preprocess` (the embedding is `"default"`);
  * a text-to-embedding SavedModel (`saved_model.pb` with a
    `serving_default` signature from strings to one embedding output);
  * the base of TF Serving's layout, `<base>/<version>/`: the highest version.
"""
import os
from typing import Callable, List

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the ops the SavedModels use)

from data_pipelines import text_lines
from export import progress as progress_lib
from export import publish
from export import serving

Embedder = Callable[[List[str]], np.ndarray]


def _is_saved_model(path: str) -> bool:
  return tf.io.gfile.exists(os.path.join(path, "saved_model.pb"))


def _pair_embedder(model: str) -> Embedder:
  preprocessor = tf.saved_model.load(os.path.join(model, "preprocessor"))
  encoder = tf.saved_model.load(os.path.join(model, "encoder"))

  def embed(sentences):
    inputs = preprocessor(tf.constant(sentences))
    return encoder(inputs, training=False)["default"].numpy()
  return embed


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
    result = signature(**{strings[0]: tf.constant(sentences)})
    return result[names[0]].numpy()
  embed.loaded = loaded  # keeps the variables alive
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


def embed_in_batches(embed: Embedder, sentences: List[str], batch_size: int,
                     on_batch: Callable[[int], None] = lambda size: None
                     ) -> np.ndarray:
  """`[len(sentences), hidden]` float32 embeddings, rows in input order.

  Batches hold sentences of similar length, longest first (as
  sentence-transformers' `encode` does), so that a serving model that pads
  each batch only to its longest sentence pads little.
  """
  order = np.argsort([-len(s) for s in sentences], kind="stable")
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
                overwrite: bool = False, show_progress: bool = True
                ) -> np.ndarray:
  """Encodes `input_path` in batches; writes and returns the embeddings."""
  if batch_size < 1:
    raise ValueError(f"--batch_size must be 1 or more, got {batch_size}.")
  if not output_path:
    raise ValueError("--output is required: the .npy file to write.")
  if os.path.lexists(output_path) and not overwrite:
    raise FileExistsError(f"{output_path} already exists; pass --overwrite "
                          "to replace it.")
  sentences = read_sentences(input_path)
  embed = load_embedder(model)
  progress = progress_lib.Progress(len(sentences), enabled=show_progress)
  embeddings = embed_in_batches(embed, sentences, batch_size, progress.update)
  progress.close()
  if normalize:
    norms = np.linalg.norm(embeddings, axis=1, keepdims=True)
    embeddings = embeddings / np.maximum(norms, 1e-12)
  _save_npy(output_path, embeddings)
  return embeddings


def _save_npy(path: str, array: np.ndarray) -> None:
  """Writes a temporary file beside `path`, then renames it into place."""
  directory = os.path.dirname(os.path.abspath(path))
  os.makedirs(directory, exist_ok=True)
  temporary = os.path.join(directory, f".tmp-{os.getpid()}-"
                           f"{os.path.basename(path)}")
  try:
    with open(temporary, "wb") as f:
      np.save(f, array)
    os.replace(temporary, path)
  except BaseException:
    if os.path.exists(temporary):
      os.remove(temporary)
    raise
