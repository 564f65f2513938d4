"""Quantization and post-processing of embeddings (inference/quantization.py,
inference/postprocess.py), against sentence-transformers' `quantize_embeddings`."""
import io

import numpy as np
import pytest

import cmlm.inference  # noqa: F401  (Keras 2 before TensorFlow loads)
from cmlm.inference import postprocess
from cmlm.inference import quantization


def embeddings(rows=200, dim=20, seed=0):
  return np.random.default_rng(seed).normal(size=[rows, dim]).astype(
      np.float32)


@pytest.mark.parametrize("precision", quantization.PRECISIONS)
def test_same_bits_as_sentence_transformers(precision):
  util = pytest.importorskip("sentence_transformers.util.quantization",
                             reason="sentence-transformers is a test "
                             "dependency (requirements-test.txt)")
  corpus, queries = embeddings(seed=0), embeddings(rows=7, seed=1)
  ours = quantization.quantize(corpus, precision, warn_stream=io.StringIO())
  theirs = util.quantize_embeddings(corpus, precision)
  assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
  np.testing.assert_array_equal(ours, theirs)
  # Calibrated on the corpus, queries share its buckets.
  ours = quantization.quantize(queries, precision,
                               calibration_embeddings=corpus)
  theirs = util.quantize_embeddings(queries, precision,
                                    calibration_embeddings=corpus)
  np.testing.assert_array_equal(ours, theirs)


def test_scalar_buckets_follow_the_calibration_ranges():
  calibration = np.array([[0.0, -1.0], [1.0, 1.0]], np.float32)
  values = np.array([[0.0, -1.0], [1.5, 1.5], [0.5, 0.0], [2.0, -3.0]],
                    np.float32)
  uint8 = quantization.quantize(values, "uint8",
                                calibration_embeddings=calibration,
                                warn_stream=io.StringIO())
  # min -> 0, the middle -> floor(127.5), outside the range -> clipped.
  np.testing.assert_array_equal(uint8, [[0, 0], [255, 255], [127, 127],
                                        [255, 0]])
  int8 = quantization.quantize(values, "int8", ranges=calibration)
  np.testing.assert_array_equal(int8, uint8.astype(np.int16) - 128)
  with pytest.raises(ValueError, match="from a single embedding"):
    quantization.quantize(values[:1], "int8")
  with pytest.raises(ValueError, match=r"ranges have shape \(2, 3\); "
                     r"expected \[2, 2\]"):
    quantization.quantize(values, "int8", ranges=np.zeros([2, 3]))


def test_binary_packs_the_signs_eight_to_a_byte():
  values = np.array([[1, -1, 0, 2, 0.1, -5, 3, 1, 7, -1]], np.float32)
  ubinary = quantization.quantize(values, "ubinary")
  assert ubinary.dtype == np.uint8
  np.testing.assert_array_equal(ubinary, [[0b10011011, 0b10000000]])
  binary = quantization.quantize(values, "binary")
  np.testing.assert_array_equal(binary.astype(np.int16),
                                ubinary.astype(np.int16) - 128)


def test_truncate_then_normalize_then_quantize():
  values = embeddings(rows=50, dim=16)
  result = postprocess.postprocess(values, truncate_dim=4, normalize=True)
  expected = values[:, :4] / np.linalg.norm(values[:, :4], axis=1,
                                            keepdims=True)
  np.testing.assert_allclose(result, expected, rtol=1e-6)
  # Calibration embeddings go through the same truncation and normalisation.
  quantized = postprocess.postprocess(
      values[:3], truncate_dim=4, normalize=True, precision="uint8",
      calibration_embeddings=values)
  np.testing.assert_array_equal(quantized, quantization.quantize(
      expected[:3], "uint8", calibration_embeddings=expected))
  with pytest.raises(ValueError, match="truncate_dim=17 must be between 1 "
                     "and the model's 16 dimensions"):
    postprocess.postprocess(values, truncate_dim=17)


def test_raw_embeddings_are_refused_only_where_the_graph_normalises():
  postprocess.check_normalize(False, False, "m")
  postprocess.check_normalize(None, True, "m")
  postprocess.check_normalize(True, True, "m")
  with pytest.raises(ValueError, match="m L2-normalises its embeddings in "
                     "its graph"):
    postprocess.check_normalize(False, True, "m")
