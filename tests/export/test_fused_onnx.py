"""The encoder written in onnxruntime's fused transformer kernels
(export/fused_onnx.py): the encoder's embeddings, padding ignored, every
step in its fused kernel; other encoders get tf2onnx's graph and the
reason."""
import collections
import os

import numpy as np
import pytest
import tensorflow as tf

from cmlm.export import artifacts
from cmlm.export import fused_onnx
from cmlm.modeling import model_builder
from official.nlp.configs import encoders
from tests import helpers

LAYERS = 2


def _encoder(pooling="mean", **encoder_fields):
  config = model_builder.SiameseEncoderConfig(
      encoder=encoders.BertEncoderConfig(
          vocab_size=helpers.VOCAB_SIZE, hidden_size=16, num_layers=LAYERS,
          num_attention_heads=2, intermediate_size=32,
          max_position_embeddings=32, **encoder_fields),
      num_projections=1, pooling=pooling)
  encoder = model_builder.build_siamese_encoder(config, 12)
  encoder(_inputs(*_batch()))
  # Initial weights (stddev 0.02, LayerNorm at 1 and 0) make every token's
  # output alike; random weights of unit scale make a misplaced step, a
  # wrong head split or a read padding token show.
  rng = np.random.default_rng(0)
  for variable in encoder.transformer.weights:
    scale = 1.0 if "gamma" in variable.name else 0.5
    variable.assign(rng.normal(0.0, scale, variable.shape).astype("float32")
                    + (1.0 if "gamma" in variable.name else 0.0))
  return encoder


def _batch():
  """Rows of 12, 5, 2 and 9 tokens, right-padded as the tokenizers pack."""
  rng = np.random.default_rng(1)
  lengths = [12, 5, 2, 9]
  ids = rng.integers(1, helpers.VOCAB_SIZE, size=(len(lengths), 12))
  mask = (np.arange(12)[None, :] < np.array(lengths)[:, None])
  return (np.where(mask, ids, 0).astype(np.int32), mask.astype(np.int32))


def _inputs(ids, mask):
  return dict(input_word_ids=ids, input_mask=mask,
              input_type_ids=np.zeros_like(ids))


def _session(model):
  import onnxruntime  # pylint: disable=g-import-not-at-top
  return onnxruntime.InferenceSession(model.SerializeToString(),
                                      providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_the_fused_graph_embeds_as_the_encoder(pooling):
  encoder = _encoder(pooling)
  ids, mask = _batch()
  expected = encoder(_inputs(ids, mask), training=False)["default"].numpy()
  session = _session(fused_onnx.fused_model(encoder))
  got = session.run(["default"], dict(input_word_ids=ids, input_mask=mask))[0]
  np.testing.assert_allclose(got, expected, atol=2e-4, rtol=1e-4)
  # A row alone, cut to its length, embeds as in the padded batch.
  alone = session.run(["default"], dict(input_word_ids=ids[2:3, :2],
                                        input_mask=mask[2:3, :2]))[0]
  np.testing.assert_allclose(alone, got[2:3], atol=2e-4, rtol=1e-4)


def test_agreement_tells_the_encoder_s_own_graph_from_another_s():
  encoder = _encoder()
  assert fused_onnx.agreement(encoder, fused_onnx.fused_model(encoder)) > (
      artifacts.FUSED_MIN_COSINE)
  other = _encoder()
  for variable in other.transformer.transformer_layers[0].weights:
    variable.assign(variable * 0.5)
  assert fused_onnx.agreement(encoder, fused_onnx.fused_model(other)) < 0.99


def test_a_fused_graph_that_disagrees_is_not_written(tmp_path, monkeypatch):
  encoder = _encoder()
  monkeypatch.setattr(fused_onnx, "agreement", lambda *args: 0.5)
  with artifacts.quiet_converters():
    written = artifacts._write_onnx(  # pylint: disable=protected-access
        str(tmp_path), artifacts.embedding_function(encoder), encoder)
  assert written == dict(
      graph=artifacts.TF2ONNX_GRAPH,
      not_fused="its fused graph disagreed with it (smallest cosine 0.5000)")


def test_every_step_runs_in_its_fused_kernel():
  model = fused_onnx.fused_model(_encoder())
  counts = collections.Counter(node.op_type for node in model.graph.node)
  assert counts["EmbedLayerNormalization"] == 1
  assert counts["Attention"] == LAYERS
  assert counts["SkipLayerNormalization"] == 2 * LAYERS
  # Model Garden's "gelu" is the tanh approximation: onnxruntime's FastGelu.
  assert counts["FastGelu"] == LAYERS
  assert counts["MatMul"] == 3 * LAYERS
  assert not {"LayerNormalization", "Softmax", "Einsum", "Erf",
              "Tanh"}.intersection(counts)


def test_the_activation_is_told_by_its_value():
  assert fused_onnx._activation_op(  # pylint: disable=protected-access
      lambda x: tf.nn.gelu(x, approximate=True)) == "FastGelu"
  assert fused_onnx._activation_op(  # pylint: disable=protected-access
      lambda x: tf.nn.gelu(x, approximate=False)) == "BiasGelu"
  with pytest.raises(fused_onnx.NotFusable, match="not GELU"):
    fused_onnx._activation_op(tf.nn.relu)  # pylint: disable=protected-access


@pytest.mark.parametrize("pooling,fields,reason", [
    ("max", {}, "its pooling is 'max'"),
    ("mean", dict(norm_first=True), "pre-LN"),
    ("mean", dict(hidden_activation="relu"), "not GELU"),
])
def test_another_shape_is_named_and_gets_tf2onnx_s_graph(
    tmp_path, pooling, fields, reason):
  encoder = _encoder(pooling, **fields)
  assert reason in fused_onnx.why_not_fusable(encoder)
  with pytest.raises(fused_onnx.NotFusable, match=reason):
    fused_onnx.fused_model(encoder)
  if pooling != "max":
    return
  # The ONNX artifact's writer falls back to tf2onnx and says why.
  function = artifacts.embedding_function(encoder)
  with artifacts.quiet_converters():
    written = artifacts._write_onnx(  # pylint: disable=protected-access
        str(tmp_path), function, encoder)
  assert written == dict(graph=artifacts.TF2ONNX_GRAPH, not_fused=reason)
  ids, mask = _batch()
  import onnxruntime  # pylint: disable=g-import-not-at-top
  session = onnxruntime.InferenceSession(
      os.path.join(tmp_path, "model.onnx"), providers=["CPUExecutionProvider"])
  np.testing.assert_allclose(
      session.run(["default"], dict(input_word_ids=ids, input_mask=mask))[0],
      encoder(_inputs(ids, mask), training=False)["default"].numpy(),
      atol=2e-4, rtol=1e-4)
  # Every projection of its int8 file is int8 (tf2onnx's Gemms were
  # written as MatMuls before quantizing).
  import onnx  # pylint: disable=g-import-not-at-top
  int8 = onnx.load(os.path.join(tmp_path, "model_int8.onnx")).graph
  float_kernels = {t.name for t in int8.initializer
                   if t.data_type == onnx.TensorProto.FLOAT and len(t.dims) >= 2}
  assert not [n.name for n in int8.node if n.op_type in ("MatMul", "Gemm")
              and float_kernels.intersection(n.input)]
