"""Sentence encoders for evaluation: ours (checkpoint or export) or any pair.

An `Encoder` is a callable `encode(sentences, batch_size) -> [n, dim]` float
array. `load_encoder(model)` makes one from `--model`: any model kind
`cmlm.inference.embedders.load_embedder` loads (a run, an export, a TF-Hub
pair, a SavedModel), wrapped in a `CachedEncoder`: each distinct sentence is
encoded once per run, in batches, with a progress line on stderr.
"""
import sys
import time
from typing import Dict, List, Optional, Protocol

import numpy as np

from cmlm.inference import embedders
from cmlm.inference import progress as progress_lib


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

  def __init__(self, embed, show_progress: bool = True, stream=None):
    """`embed`: an `Embedder`, or a function of one batch."""
    self._embedder = embedders.as_embedder(embed)
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
      embeddings = self._embedder.embed(new, batch_size, progress.update)
      self._cache.update(zip(new, embeddings))
      progress.close()
      self.num_encoded += len(new)
      self.seconds += time.perf_counter() - start
    if not sentences:
      return np.zeros([0, 0], np.float32)
    return np.stack([self._cache[s] for s in sentences])


def load_encoder(model: str, checkpoint: Optional[str] = None,
                 show_progress: bool = True, backend: Optional[str] = None,
                 quantized: bool = False, pooling: Optional[str] = None
                 ) -> CachedEncoder:
  """The `Encoder` for `--model` (see the module docstring); `backend`,
  `quantized` and `pooling` (a run read through another pooling than the
  one its config names) as `inference.embedders.load_embedder` takes them."""
  return CachedEncoder(embedders.load_embedder(model, checkpoint, backend,
                                               quantized, pooling=pooling),
                       show_progress)
