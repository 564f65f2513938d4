"""The encoder as onnxruntime's fused transformer graph, from its weights.

tf2onnx writes Model Garden's attention as einsums and its LayerNorm as
moments, and onnxruntime's transformer optimizer matches none of that:
on the garden's graph it fuses only the GELUs, where a PyTorch export of
the same BERT gets one kernel per embedding + LayerNorm, per attention and
per residual + LayerNorm. So the ONNX artifact of a BERT-shaped encoder is
written here directly in those kernels (onnxruntime's `com.microsoft`
operators), one node per step of the transformer:

    EmbedLayerNormalization   word + position (+ type 0) embeddings, LayerNorm,
                              and the mask's lengths for the attention
    per layer (post-LN, as BERT and `BertEncoderV2(norm_first=False)`):
      Attention               Q, K, V projections in one [H, 3H] kernel,
                              softmax(QK^T / sqrt(d)) V over the real tokens
      MatMul                  the attention's output projection
      SkipLayerNormalization  LayerNorm(x + attention + bias)
      MatMul, FastGelu|BiasGelu  the feed-forward layer and its activation
      MatMul                  its output projection
      SkipLayerNormalization  LayerNorm(x + feed-forward + bias)
    ReduceSum / Div | Gather  the sentence pooling (mean over the real
                              tokens, or the first token)

The graph reads and writes what `artifacts.embedding_function` does:
`input_word_ids`, `input_mask` int32 `[batch, time]` -> `default` float32
`[batch, dim]`; the mask is read as right padding (a row's tokens first),
as the garden's tokenizers pack. An encoder outside this shape (pre-LN,
max pooling, a pooling head, the "proj" representation, another activation)
raises `NotFusable` with the reason, and the export writes tf2onnx's
graph instead; so does a fused graph whose embeddings of random padded rows
disagree with the encoder's (`agreement`). Only onnxruntime runs these
operators.
"""
from typing import Optional

import numpy as np
import tensorflow as tf

from cmlm.modeling.siamese_encoder import SiameseEncoder
from cmlm.modeling.vectors import paired_cosine_similarity

OPSET = 17
MS_DOMAIN = "com.microsoft"
_POOLINGS = ("mean", "cls")


class NotFusable(Exception):
  """This encoder is not the BERT shape the fused graph writes (why)."""


def _activation_op(activation) -> str:
  """onnxruntime's fused op of the feed-forward activation: tanh-approximated
  GELU (Model Garden's "gelu") -> FastGelu, erf GELU -> BiasGelu. Told apart
  by value: at 1.0 they give 0.841192 and 0.841345."""
  try:
    value = float(activation(tf.constant(1.0)))
  except Exception:  # pylint: disable=broad-except
    value = None
  if value is not None and abs(value - 0.8411920) < 2e-6:
    return "FastGelu"
  if value is not None and abs(value - 0.8413447) < 2e-6:
    return "BiasGelu"
  raise NotFusable("its feed-forward activation is not GELU")


def why_not_fusable(encoder: SiameseEncoder) -> Optional[str]:
  """None when `fused_model` can write `encoder`, else why not (a phrase)."""
  try:
    _check(encoder)
  except NotFusable as error:
    return str(error)
  return None


def _check(encoder: SiameseEncoder) -> None:
  transformer = encoder.transformer
  config = transformer.get_config()
  if encoder.pooling_head is not None:
    raise NotFusable("its embedding is a pooling head's")
  if encoder.sentence_representation != "pooled":
    raise NotFusable(f"its embedding is {encoder.sentence_representation!r}")
  if encoder.pooling.mode not in _POOLINGS:
    raise NotFusable(f"its pooling is {encoder.pooling.mode!r}")
  if config.get("norm_first"):
    raise NotFusable("its transformer is pre-LN (norm_first)")
  if getattr(transformer, "_embedding_projection", None) is not None:
    raise NotFusable("its embeddings are projected (embedding_width)")
  if config.get("output_range") is not None:
    raise NotFusable("its last layer has an output_range")
  for block in transformer.transformer_layers:
    attention = block._attention_layer  # pylint: disable=protected-access
    if (type(attention).__name__ != "MultiHeadAttention" or
        getattr(block, "_use_rms_norm", False) or
        not getattr(block, "_use_query_residual", True) or
        not getattr(block, "_use_bias", True)):
      raise NotFusable("its layers are not BERT's (attention, LayerNorm, "
                       "residuals, biases)")
    _activation_op(block._inner_activation)  # pylint: disable=protected-access


def _array(variable) -> np.ndarray:
  return np.asarray(variable.numpy(), np.float32)


def fused_model(encoder: SiameseEncoder):
  """`encoder` (a `SiameseEncoder` over `BertEncoderV2`) as an ONNX model of
  onnxruntime's fused transformer operators; raises `NotFusable`.

  Examples:
    >>> import onnx
    >>> onnx.save(fused_model(trained_encoder), "model.onnx")
  """
  import onnx  # pylint: disable=g-import-not-at-top
  from onnx import TensorProto  # pylint: disable=g-import-not-at-top
  from onnx import helper  # pylint: disable=g-import-not-at-top
  from onnx import numpy_helper  # pylint: disable=g-import-not-at-top
  _check(encoder)
  transformer = encoder.transformer
  # pylint: disable=protected-access
  heads = transformer.get_config()["num_attention_heads"]
  initializers, nodes = [], []

  def constant(name, value):
    # (not ascontiguousarray: it makes a 0-d array 1-d)
    initializers.append(numpy_helper.from_array(
        np.array(value, order="C"), name))
    return name

  def node(op, inputs, name, domain=None, **attributes):
    nodes.append(helper.make_node(op, inputs, [name], name=name,
                                  domain=domain, **attributes))
    return name

  # One segment: type 0's embedding is added to every position's, so the
  # graph needs no type ids (exact).
  type_embeddings = _array(transformer._type_embedding_layer.embeddings)
  positions = (_array(transformer._position_embedding_layer.weights[0]) +
               type_embeddings[0])
  norm = transformer._embedding_norm_layer
  nodes.append(helper.make_node(
      "EmbedLayerNormalization",
      ["input_word_ids", "", constant("word_embeddings", _array(
          transformer._embedding_layer.embeddings)),
       constant("position_embeddings", positions), "",
       constant("embeddings/gamma", _array(norm.gamma)),
       constant("embeddings/beta", _array(norm.beta)), "input_mask"],
      ["embeddings", "mask_index"], name="embeddings", domain=MS_DOMAIN,
      epsilon=float(norm.epsilon)))
  x = "embeddings"
  for i, block in enumerate(transformer.transformer_layers):
    prefix = f"layer_{i}"
    attention = block._attention_layer
    qkv = [attention._query_dense, attention._key_dense,
           attention._value_dense]
    hidden = _array(qkv[0].kernel).shape[0]
    kernel = np.concatenate(
        [_array(dense.kernel).reshape(hidden, -1) for dense in qkv], axis=1)
    bias = np.concatenate([_array(dense.bias).reshape(-1) for dense in qkv])
    attended = node("Attention",
                    [x, constant(f"{prefix}/qkv/kernel", kernel),
                     constant(f"{prefix}/qkv/bias", bias), "mask_index"],
                    f"{prefix}/attention", MS_DOMAIN, num_heads=heads)
    output = attention._output_dense
    projected = node("MatMul", [attended, constant(
        f"{prefix}/attention_output/kernel",
        _array(output.kernel).reshape(-1, hidden))],
                     f"{prefix}/attention_output")
    norm = block._attention_layer_norm
    x_attended = node(
        "SkipLayerNormalization",
        [projected, x, constant(f"{prefix}/attention_norm/gamma",
                                _array(norm.gamma)),
         constant(f"{prefix}/attention_norm/beta", _array(norm.beta)),
         constant(f"{prefix}/attention_output/bias", _array(output.bias))],
        f"{prefix}/attention_norm", MS_DOMAIN, epsilon=float(norm.epsilon))
    inner = block._intermediate_dense
    expanded = node("MatMul", [x_attended, constant(
        f"{prefix}/intermediate/kernel", _array(inner.kernel))],
                    f"{prefix}/intermediate")
    activated = node(_activation_op(block._inner_activation),
                     [expanded, constant(f"{prefix}/intermediate/bias",
                                         _array(inner.bias))],
                     f"{prefix}/activation", MS_DOMAIN)
    outer = block._output_dense
    contracted = node("MatMul", [activated, constant(
        f"{prefix}/output/kernel", _array(outer.kernel))], f"{prefix}/output")
    norm = block._output_layer_norm
    x = node("SkipLayerNormalization",
             [contracted, x_attended,
              constant(f"{prefix}/output_norm/gamma", _array(norm.gamma)),
              constant(f"{prefix}/output_norm/beta", _array(norm.beta)),
              constant(f"{prefix}/output/bias", _array(outer.bias))],
             f"{prefix}/output_norm", MS_DOMAIN, epsilon=float(norm.epsilon))
  # pylint: enable=protected-access
  if encoder.pooling.mode == "cls":
    node("Gather", [x, constant("first", np.array(0, np.int64))], "default",
         axis=1)
  else:  # mean over the real tokens, as pooling.masked_mean_pool
    mask = node("Cast", ["input_mask"], "pooling/mask", to=TensorProto.FLOAT)
    mask = node("Unsqueeze", [mask, constant("pooling/last",
                                             np.array([2], np.int64))],
                "pooling/mask3")
    time_axis = constant("pooling/time", np.array([1], np.int64))
    total = node("ReduceSum", [node("Mul", [x, mask], "pooling/masked"),
                               time_axis], "pooling/total", keepdims=0)
    count = node("ReduceSum", [mask, time_axis], "pooling/count", keepdims=0)
    count = node("Max", [count, constant("pooling/one",
                                         np.array(1.0, np.float32))],
                 "pooling/count1")
    node("Div", [total, count], "default")
  dim = transformer.get_config()["hidden_size"]
  graph = helper.make_graph(
      nodes, "cmlm_encoder_fused",
      [helper.make_tensor_value_info(name, TensorProto.INT32,
                                     ["batch", "time"])
       for name in ("input_word_ids", "input_mask")],
      [helper.make_tensor_value_info("default", TensorProto.FLOAT,
                                     ["batch", dim])],
      initializers,
      # Every inner tensor's type (onnxruntime's quantizer cannot infer the
      # outputs of com.microsoft operators).
      value_info=[helper.make_tensor_value_info(
          name, TensorProto.INT32 if name == "mask_index" else
          TensorProto.FLOAT, None)
                  for n in nodes for name in n.output if name != "default"])
  model = helper.make_model(
      graph, opset_imports=[helper.make_opsetid("", OPSET),
                            helper.make_opsetid(MS_DOMAIN, 1)],
      producer_name="cmlm")
  onnx.checker.check_model(model)
  return model


def agreement(encoder: SiameseEncoder, model, seed: int = 0) -> float:
  """The smallest cosine between `model`'s (an ONNX model of `fused_model`)
  and `encoder`'s embeddings of random token ids in right-padded rows of
  several lengths.

  Examples:
    >>> agreement(trained_encoder, fused_model(trained_encoder)) > 0.9999
    True
  """
  import onnxruntime  # pylint: disable=g-import-not-at-top
  config = encoder.transformer.get_config()
  rng = np.random.default_rng(seed)
  length = min(24, config["max_sequence_length"])
  lengths = np.array([length, max(2, length // 3), 2])
  mask = (np.arange(length)[None, :] < lengths[:, None]).astype(np.int32)
  ids = rng.integers(1, config["vocab_size"], size=mask.shape,
                     dtype=np.int32) * mask
  expected = encoder(dict(input_word_ids=ids, input_mask=mask,
                          input_type_ids=np.zeros_like(ids)),
                     training=False)["default"].numpy()
  session = onnxruntime.InferenceSession(model.SerializeToString(),
                                         providers=["CPUExecutionProvider"])
  got = session.run(["default"], dict(input_word_ids=ids, input_mask=mask))[0]
  return float(np.min(paired_cosine_similarity(got, expected)))
