"""Every kind of model `encode`, `eval` and `cmlm.SentenceEncoder` take.

    embed = load(model, checkpoint=None)   # list[str] -> float [n, dim]

`model` is any of

  * a training `--model_dir` (`params.yaml` + `ckpt-N`): the encoder is
    restored by `training.run_dir` (latest checkpoint, or `checkpoint`) and
    fed the run's own tokenization;
  * `ENCODER_DIR,PREPROCESSOR_DIR`: a TF-Hub encoder + preprocessor pair kept
    in two directories (e.g. two downloads from tfhub.dev); the embedding is
    the encoder's `"default"`;
  * anything `export.encode.load_embedder` loads: our export directory, a
    TF-Hub style pair as `encoder/` + `preprocessor/` of one directory, a
    text-to-embedding SavedModel, a TF Serving base path.

`normalizes_in_graph(embed)` says whether the loaded model L2-normalises
its embeddings itself (our serving model's `l2_normalized` variable), so
that a caller can refuse to give un-normalised embeddings it cannot give.
"""
import os
from typing import Callable, List, Optional

import numpy as np
import tensorflow as tf

from data_pipelines import unk_rate
from export import encode as encode_lib
from training import run_dir

Embedder = Callable[[List[str]], np.ndarray]
# The variable our serving model (export/serving.py) records its
# normalisation in.
NORMALIZED_VARIABLE = "l2_normalized"


def load(model: str, checkpoint: Optional[str] = None) -> Embedder:
  """A function from a list of sentences to their embeddings `[n, dim]`."""
  if not model:
    raise ValueError("--model is required: a training model_dir, an export "
                     "directory, a SavedModel, or "
                     "ENCODER_DIR,PREPROCESSOR_DIR.")
  model = os.fspath(model)
  if "," in model:
    if checkpoint:
      raise ValueError("--checkpoint applies to a training run, not to "
                       f"--model={model}.")
    return hub_pair_embedder(*model.split(",", 1))
  if run_dir.is_run_dir(model):
    return checkpoint_embedder(model, checkpoint)
  if checkpoint:
    raise ValueError(f"--checkpoint applies to a training run; {model} holds "
                     f"no {run_dir.PARAMS_FILE}.")
  return encode_lib.load_embedder(model)


def checkpoint_embedder(model_dir: str,
                        checkpoint: Optional[str] = None) -> Embedder:
  """The trained encoder of a run, fed its training tokenization."""
  run = run_dir.load_run(model_dir, checkpoint)
  encoder, tokenizer = run.encoder, run.tokenizer
  checked = []

  embed_batch = run_dir.embedding_function(encoder, tokenizer)

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
  def token_lengths(sentences):
    return tf.reduce_sum(tokenizer.tokenize_and_pack(sentences)["input_mask"],
                         axis=1)

  def embed(sentences):
    if not checked:  # the run's casing against the first batch: a warning
      checked.append(True)
      unk_rate.check(run.params.task.tokenization,
                     sentences[:unk_rate.SAMPLE_SENTENCES],
                     "the evaluation data", refuse=False,
                     owner=f"{model_dir}'s task.tokenization", verbose=False)
    return embed_batch(tf.constant(sentences, tf.string)).numpy()
  embed.checkpoint_path = run.checkpoint_path
  embed.token_lengths = token_lengths  # batches by length
  embed.normalizes_in_graph = False
  return embed


def hub_pair_embedder(encoder_dir: str, preprocessor_dir: str) -> Embedder:
  """`export/encode.py`'s pair loader for an encoder and a preprocessor kept
  in two directories (it expects them as `encoder/` and `preprocessor/`)."""
  for path, what in ((encoder_dir, "encoder"),
                     (preprocessor_dir, "preprocessor")):
    if not tf.io.gfile.exists(os.path.join(path, "saved_model.pb")):
      raise FileNotFoundError(
          f"--model: {path} is not a SavedModel (no saved_model.pb); "
          f"ENCODER_DIR,PREPROCESSOR_DIR expects the {what} there.")
  embed = encode_lib.pair_embedder(tf.saved_model.load(preprocessor_dir),
                                   tf.saved_model.load(encoder_dir))
  embed.normalizes_in_graph = False  # the encoder's "default": not normalised
  return embed


def normalizes_in_graph(embed: Embedder) -> bool:
  """Whether `embed`'s model L2-normalises its embeddings in its graph.

  An attribute `normalizes_in_graph` of the embedder answers when present;
  else the `l2_normalized` variable of the SavedModel it holds (`.loaded`,
  our serving model); a model that records neither (a TF-Hub pair's
  `"default"`, a foreign SavedModel) counts as not normalising.
  """
  known = getattr(embed, "normalizes_in_graph", None)
  if known is not None:
    return bool(known)
  loaded = getattr(embed, "loaded", None)
  variable = getattr(loaded, NORMALIZED_VARIABLE, None)
  if variable is None:
    return False
  return bool(variable.numpy())
