"""SavedModels and pairs as embedders, and embedding in length-ordered batches.

    embed = load_embedder(model)          # list[str] -> float [n, dim]
    embeddings = embed_in_batches(embed, sentences, batch_size=32)

`load_embedder` loads the SavedModel kinds:
  * a directory with `encoder/` and `preprocessor/` SavedModels: ours
    (`python -m cmlm export`) or any TF-Hub style pair, e.g. a BERT encoder
    and `bert_en_uncased_preprocess` (the embedding is `"default"`);
  * a text-to-embedding SavedModel (`saved_model.pb` with a
    `serving_default` signature from strings to one embedding output);
  * the base of TF Serving's layout, `<base>/<version>/`: the highest version.
Training runs and two-directory pairs are added by `export.model_sources`;
`python -m cmlm encode` is `export.encode_files`.
"""
import os
from typing import Callable, List, Optional

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the ops the SavedModels use)

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
