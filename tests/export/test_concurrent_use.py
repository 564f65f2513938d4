"""Concurrent use: one `SentenceEncoder`, and one model of each backend
(the SavedModels, TFLite and ONNX, float32 and int8), called from 8 threads
at once give the embeddings of sequential calls, without a crash or a
deadlock (docs/encoding_and_evaluation.md#threads-and-processes)."""
import concurrent.futures

import numpy as np
import pytest

from cmlm import SentenceEncoder
from cmlm.inference import embedders
from tests.export import export_helpers

THREADS = 8
CALLS = 4  # per thread, each with its own slice of sentences
TIMEOUT_S = 240  # a deadlock fails the test rather than hanging it


def _from_threads(encode, batches):
  """`encode(batch)` of every batch, CALLS per thread across THREADS."""
  with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
    futures = [pool.submit(encode, batch) for batch in batches]
    return [future.result(timeout=TIMEOUT_S) for future in futures]


def _batches():
  sentences = export_helpers.ALL_SENTENCES
  return [sentences[i % len(sentences):] + sentences[:i % len(sentences)]
          for i in range(THREADS * CALLS)]


@pytest.mark.slow
@pytest.mark.parametrize("backend, quantized", [
    ("saved_model", False), ("tflite", False), ("tflite", True),
    ("onnx", False), ("onnx", True)])
def test_eight_threads_get_the_sequential_embeddings(
    tiny_artifacts_export, backend, quantized):
  export_dir = tiny_artifacts_export.export_dir
  embedder = embedders.load_embedder(export_dir, backend=backend,
                                     quantized=quantized)
  encoder = SentenceEncoder(export_dir, backend=backend, quantized=quantized)
  batches = _batches()
  for model, encode in (
      (embedder, lambda batch: embedder.embed(batch, 3)),
      (encoder, lambda batch: encoder.encode(batch, batch_size=3))):
    sequential = [encode(batch) for batch in batches]
    concurrent_ = _from_threads(encode, batches)
    for alone, together in zip(sequential, concurrent_):
      np.testing.assert_allclose(together, alone, rtol=0, atol=1e-6,
                                 err_msg=f"{backend} {model!r}")
