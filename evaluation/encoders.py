"""Sentence encoders for evaluation: ours (checkpoint or export) or any pair.

An `Encoder` is a callable `encode(sentences, batch_size) -> [n, dim]` float
array. `load_encoder(model)` makes one from `--model`, which is any of

  * a training `--model_dir` (`params.yaml` + `ckpt-N`): the CMLM model is
    rebuilt and restored by `export/checkpoint.py` and fed the training
    tokenization (latest checkpoint, or `checkpoint=`);
  * anything `export/encode.py` loads: our export directory (`encoder/` +
    `preprocessor/`), any TF-Hub style encoder + preprocessor pair in one
    directory, a text-to-embedding SavedModel, a TF Serving base path;
  * `ENCODER_DIR,PREPROCESSOR_DIR`: a TF-Hub pair kept in two directories
    (e.g. two downloads from tfhub.dev); the embedding is `"default"`.

`CachedEncoder` wraps the result: each distinct sentence is encoded once per
run, in batches, with a progress line on stderr.
"""
import os
import sys
import time
from typing import Callable, Dict, List, Optional, Protocol

import numpy as np
import tensorflow as tf

from data_pipelines import unk_rate
from export import encode as encode_lib
from export import progress as progress_lib
from training import run_dir

Embedder = Callable[[List[str]], np.ndarray]  # one batch, no caching


class Encoder(Protocol):
  """What every task of `evaluation/` takes: sentences to embeddings."""

  def __call__(self, sentences: List[str],
               batch_size: int = 256) -> np.ndarray:
    ...


class CachedEncoder:
  """An `Encoder` over an `Embedder` that encodes each sentence once.

  Attributes:
    num_encoded: distinct sentences encoded so far.
    seconds: time spent encoding them.
  """

  def __init__(self, embed: Embedder, show_progress: bool = True,
               stream=None):
    self._embed = embed
    self._cache: Dict[str, np.ndarray] = {}
    self._show_progress = show_progress
    self._stream = stream or sys.stderr
    self.num_encoded = 0
    self.seconds = 0.0

  def __call__(self, sentences: List[str],
               batch_size: int = 256) -> np.ndarray:
    if batch_size < 1:
      raise ValueError(f"--batch_size must be 1 or more, got {batch_size}.")
    new = list(dict.fromkeys(s for s in sentences if s not in self._cache))
    if new:
      start = time.perf_counter()
      if self._show_progress:
        self._stream.write(f"  encoding {len(new)} new sentences of "
                           f"{len(sentences)}\n")
      progress = progress_lib.Progress(len(new), enabled=self._show_progress,
                                       stream=self._stream)
      for begin in range(0, len(new), batch_size):
        batch = new[begin:begin + batch_size]
        embeddings = np.asarray(self._embed(batch), np.float32)
        if embeddings.ndim != 2 or len(embeddings) != len(batch):
          raise ValueError(f"The encoder returned shape {embeddings.shape} "
                           f"for {len(batch)} sentences; expected "
                           "[sentences, dim].")
        self._cache.update(zip(batch, embeddings))
        progress.update(len(batch))
      progress.close()
      self.num_encoded += len(new)
      self.seconds += time.perf_counter() - start
    if not sentences:
      return np.zeros([0, 0], np.float32)
    return np.stack([self._cache[s] for s in sentences])


def load_encoder(model: str, checkpoint: Optional[str] = None,
                 show_progress: bool = True) -> CachedEncoder:
  """The `Encoder` for `--model` (see the module docstring)."""
  return CachedEncoder(load_embedder(model, checkpoint), show_progress)


def load_embedder(model: str, checkpoint: Optional[str] = None) -> Embedder:
  if not model:
    raise ValueError("--model is required: a training model_dir, an export "
                     "directory, a SavedModel, or "
                     "ENCODER_DIR,PREPROCESSOR_DIR.")
  if "," in model:
    return _hub_pair_embedder(*model.split(",", 1))
  if os.path.isfile(os.path.join(model, run_dir.PARAMS_FILE)):
    return _checkpoint_embedder(model, checkpoint)
  return encode_lib.load_embedder(model)


def _checkpoint_embedder(model_dir: str, checkpoint: Optional[str]) -> Embedder:
  """The trained encoder of a run, fed its training tokenization."""
  run = run_dir.load_run(model_dir, checkpoint)
  encoder, tokenizer, checkpoint_path = (run.encoder, run.tokenizer,
                                         run.checkpoint_path)
  checked = []

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
  def embed_batch(sentences):
    # [batch, hidden]
    return encoder(tokenizer.tokenize_and_pack(sentences),
                   training=False)["default"]

  def embed(sentences):
    if not checked:  # the run's casing against the first batch: a warning
      checked.append(True)
      unk_rate.check(run.params.task.tokenization,
                     sentences[:unk_rate.SAMPLE_SENTENCES],
                     "the evaluation data", refuse=False,
                     owner=f"{model_dir}'s task.tokenization", verbose=False)
    return embed_batch(tf.constant(sentences, tf.string)).numpy()
  embed.checkpoint_path = checkpoint_path
  return embed


def _hub_pair_embedder(encoder_dir: str, preprocessor_dir: str) -> Embedder:
  """`export/encode.py`'s pair loader for an encoder and a preprocessor kept
  in two directories (it expects them as `encoder/` and `preprocessor/`)."""
  for path, what in ((encoder_dir, "encoder"),
                     (preprocessor_dir, "preprocessor")):
    if not tf.io.gfile.exists(os.path.join(path, "saved_model.pb")):
      raise FileNotFoundError(
          f"--model: {path} is not a SavedModel (no saved_model.pb); "
          f"ENCODER_DIR,PREPROCESSOR_DIR expects the {what} there.")
  preprocessor = tf.saved_model.load(preprocessor_dir)
  encoder = tf.saved_model.load(encoder_dir)

  def embed(sentences):
    inputs = preprocessor(tf.constant(sentences))
    return encoder(inputs, training=False)["default"].numpy()
  return embed
