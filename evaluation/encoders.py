"""Sentence encoders for evaluation: ours (checkpoint or export) or any pair.

An `Encoder` is a callable `encode(sentences, batch_size) -> [n, dim]` float
array. `load_encoder(model)` makes one from `--model`, which is any of

  * a training `--model_dir` (`params.yaml` + `ckpt-N`), restored by
    `training.run_dir` and fed the training tokenization (latest
    checkpoint, or `checkpoint=`);
  * anything `export/encode.py` loads: our export directory (`encoder/` +
    `preprocessor/`), any TF-Hub style encoder + preprocessor pair in one
    directory, a text-to-embedding SavedModel, a TF Serving base path;
  * `ENCODER_DIR,PREPROCESSOR_DIR`: a TF-Hub pair kept in two directories
    (e.g. two downloads from tfhub.dev); the embedding is `"default"`
(`export/model_sources.py`, which `encode` and `cmlm.SentenceEncoder` share).

`CachedEncoder` wraps the result: each distinct sentence is encoded once per
run, in batches, with a progress line on stderr.
"""
import os
import sys
import time
from typing import Callable, Dict, List, Optional, Protocol

import numpy as np
import tensorflow as tf

from export import encode as encode_lib
from export import model_sources
from export import progress as progress_lib

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

  def _checked_embed(self, batch: List[str]) -> np.ndarray:
    embeddings = np.asarray(self._embed(batch), np.float32)
    if embeddings.ndim != 2 or len(embeddings) != len(batch):
      raise ValueError(f"The encoder returned shape {embeddings.shape} "
                       f"for {len(batch)} sentences; expected "
                       "[sentences, dim].")
    return embeddings

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
      embeddings = encode_lib.embed_in_batches(
          self._checked_embed, new, batch_size, progress.update,
          lengths=encode_lib.lengths_of(self._embed, new))
      self._cache.update(zip(new, embeddings))
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
  """One batch of sentences to embeddings, for any `--model`
  (`export.model_sources.load`)."""
  return model_sources.load(model, checkpoint)
