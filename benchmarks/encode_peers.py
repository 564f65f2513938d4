"""The CPU peers of `encode_vs_sentence_transformers.py`: how each is built
from all-MiniLM-L6-v2's weights, as its users build it, and how it embeds.

  ort_fp32        `torch.onnx.export` of the sentence-transformers model
                  (mean pooling in the graph), onnxruntime
  ort_int8        that file after onnxruntime's `quantize_dynamic` (QInt8
                  weights per tensor), as sentence-transformers'
                  backend="onnx" int8 files are made
  ort_fused_fp32  the same export with eager attention (its matmuls and
                  softmax, which the optimizer's patterns match) through
                  onnxruntime's transformer optimizer (`optimize_model`,
                  model_type="bert", 12 heads, hidden 384, opt_level 2:
                  Optimum's O2): EmbedLayerNormalization, Attention,
                  BiasGelu, SkipLayerNormalization
  ort_fused_int8  the fused file after `quantize_dynamic` per output channel
                  (QInt8): Optimum's O2 + dynamic int8
  openvino_fp32   the ONNX file converted by `openvino.convert_model`,
                  compiled for the CPU with float32 inference precision
  openvino_int8   that model after NNCF's post-training quantization
                  (`nncf.quantize`, model_type TRANSFORMER) calibrated on
                  STS-B train sentences, compiled with OpenVINO's defaults

Every peer reads Hugging Face's fast tokenizer of the model and orders
sentences by characters, as sentence-transformers does. Nothing here imports
TensorFlow: `encode_load_memory.py` loads one path in a fresh process.
"""
import os

import numpy as np

# peer -> its file in --work_dir.
PEER_FILES = {
    "ort_fp32": "peer.onnx",
    "ort_int8": "peer_int8.onnx",
    "ort_fused_fp32": "peer_fused.onnx",
    "ort_fused_int8": "peer_fused_int8.onnx",
    "openvino_fp32": "peer_openvino.xml",
    "openvino_int8": "peer_openvino_int8.xml",
}
# ort_fused's source: the export with eager attention.
EAGER_FILE = "peer_eager.onnx"
# The garden's encoder through tf2onnx, as the ONNX artifact was before it
# was written in the fused kernels (kept for comparison, not a peer): files in
# --work_dir.
GARDEN_TF2ONNX = {"garden_onnx_tf2onnx": "garden_tf2onnx.onnx",
                  "garden_onnx_tf2onnx_int8": "garden_tf2onnx_int8.onnx"}
MINILM = dict(num_heads=12, hidden_size=384)
CALIBRATION_SENTENCES = 300  # NNCF's default subset size
DIMENSION = 384


class TokenizedPeer:
  """Hugging Face's tokenizer, sentences sorted by characters, one `run`
  of the features per batch (sentence-transformers' `encode`)."""

  def __init__(self, tokenizer, max_length):
    self._tokenizer, self._max_length = tokenizer, max_length

  def features(self, batch):
    return dict(self._tokenizer(batch, padding=True, truncation=True,
                                max_length=self._max_length,
                                return_tensors="np"))

  def run(self, features):
    raise NotImplementedError

  def embed(self, sentences, batch_size):
    order = np.argsort([-len(s) for s in sentences], kind="stable")
    out = np.empty([len(sentences), DIMENSION], np.float32)
    for start in range(0, len(sentences), batch_size):
      rows = order[start:start + batch_size]
      out[rows] = self.run(self.features([sentences[i] for i in rows]))
    return out


class OrtPeer(TokenizedPeer):
  """An onnxruntime CPU session over a peer's ONNX file."""

  def __init__(self, path, tokenizer, max_length, threads):
    import onnxruntime  # pylint: disable=g-import-not-at-top
    super().__init__(tokenizer, max_length)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 3
    self._session = onnxruntime.InferenceSession(
        path, options, providers=["CPUExecutionProvider"])
    self._inputs = [i.name for i in self._session.get_inputs()]

  def run(self, features):
    return self._session.run(None, {name: features[name]
                                    for name in self._inputs})[0]


class OpenVinoPeer(TokenizedPeer):
  """An OpenVINO CPU compiled model; `precision` "f32" forces float32
  inference (on CPUs with AMX or AVX512-BF16 OpenVINO's default is bf16),
  None keeps OpenVINO's default."""

  def __init__(self, path, tokenizer, max_length, threads, precision=None):
    import openvino  # pylint: disable=g-import-not-at-top
    super().__init__(tokenizer, max_length)
    config = {"INFERENCE_NUM_THREADS": threads,
              "PERFORMANCE_HINT": "LATENCY"}
    if precision:
      config["INFERENCE_PRECISION_HINT"] = precision
    self._compiled = openvino.Core().compile_model(path, "CPU", config)
    self._request = self._compiled.create_infer_request()
    self._inputs = [i.get_any_name() for i in self._compiled.inputs]
    precision = self._compiled.get_property("INFERENCE_PRECISION_HINT")
    self.precision = getattr(precision, "to_string", precision.__str__)()

  def run(self, features):
    outputs = self._request.infer({name: features[name]
                                   for name in self._inputs})
    return next(iter(outputs.values()))


def export_peer_onnx(peer, torch, path, attention=None):
  """The SentenceTransformer `peer` with mean pooling as ONNX at `path`
  (`torch.onnx.export`, opset 17); `attention` "eager" exports the
  attention as its matmuls and softmax rather than as torch's
  scaled_dot_product_attention, whose exported graph the optimizer's
  Attention fusion does not match."""
  transformer = peer[0].auto_model.eval()
  if attention:
    transformer.set_attn_implementation(attention)

  class MeanPooled(torch.nn.Module):
    def __init__(self):
      super().__init__()
      self.transformer = transformer

    def forward(self, input_ids, attention_mask, token_type_ids):
      states = self.transformer(input_ids=input_ids,
                                attention_mask=attention_mask,
                                token_type_ids=token_type_ids
                                ).last_hidden_state
      weights = attention_mask.unsqueeze(-1).to(states.dtype)
      return (states * weights).sum(1) / weights.sum(1).clamp(min=1e-9)

  example = peer.tokenizer(["a sentence", "another one"], padding=True,
                           return_tensors="pt")
  names = ["input_ids", "attention_mask", "token_type_ids"]
  try:
    torch.onnx.export(
        MeanPooled(), tuple(example[n] for n in names), path,
        input_names=names, output_names=["sentence_embedding"],
        opset_version=17, dynamo=False,
        dynamic_axes=dict({n: {0: "batch", 1: "time"} for n in names},
                          sentence_embedding={0: "batch"}))
  finally:
    if attention:
      transformer.set_attn_implementation("sdpa")


def quantize_per_tensor(source, target):
  """ort_int8: `quantize_dynamic` with its defaults (QInt8, per tensor)."""
  from onnxruntime import quantization  # pylint: disable=g-import-not-at-top
  quantization.quantize_dynamic(source, target,
                                weight_type=quantization.QuantType.QInt8)


def fuse_onnx(source, fused, fused_int8, model_type="bert"):
  """onnxruntime's transformer optimizer (Optimum's O2: opt_level 2, the
  BERT fusions) on `source`, saved as `fused`, then `quantize_dynamic`
  per output channel (QInt8) as `fused_int8`. Returns the fused operators'
  counts (`get_fused_operator_statistics`)."""
  import onnx  # pylint: disable=g-import-not-at-top
  from onnxruntime import quantization  # pylint: disable=g-import-not-at-top
  from onnxruntime.transformers import optimizer  # pylint: disable=g-import-not-at-top
  model = optimizer.optimize_model(source, model_type=model_type,
                                   opt_level=2, use_gpu=False, **MINILM)
  statistics = {name: count for name, count in
                model.get_fused_operator_statistics().items() if count}
  model.save_model_to_file(fused)
  # The fused operators (com.microsoft domain) defeat ONNX's shape
  # inference, which the quantizer asks for the outputs' type: float.
  quantization.quantize_dynamic(
      fused, fused_int8, per_channel=True,
      weight_type=quantization.QuantType.QInt8,
      extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
  return statistics


def openvino_files(source, tokenizer, max_length, calibration, work_dir):
  """openvino_fp32 (`convert_model` of the ONNX file `source`, weights kept
  float32) and openvino_int8 (`nncf.quantize` calibrated on
  `CALIBRATION_SENTENCES` of `calibration`, evenly spaced through it, one
  sentence an item)."""
  import nncf  # pylint: disable=g-import-not-at-top
  import openvino  # pylint: disable=g-import-not-at-top
  model = openvino.convert_model(source)
  openvino.save_model(model, os.path.join(work_dir,
                                          PEER_FILES["openvino_fp32"]),
                      compress_to_fp16=False)
  names = [i.get_any_name() for i in model.inputs]

  def features(sentence):
    tokens = tokenizer([sentence], truncation=True, max_length=max_length,
                       return_tensors="np")
    return {name: tokens[name] for name in names}

  chosen = calibration[::max(1, len(calibration) // CALIBRATION_SENTENCES)]
  quantized = nncf.quantize(
      model, nncf.Dataset(chosen[:CALIBRATION_SENTENCES], features),
      model_type=nncf.ModelType.TRANSFORMER,
      subset_size=CALIBRATION_SENTENCES)
  openvino.save_model(quantized, os.path.join(
      work_dir, PEER_FILES["openvino_int8"]), compress_to_fp16=False)


def open_peer(name, work_dir, tokenizer, max_length, threads):
  """The peer `name` (a key of `PEER_FILES`), its file in `work_dir`."""
  path = os.path.join(work_dir, PEER_FILES[name])
  if name.startswith("openvino"):
    return OpenVinoPeer(path, tokenizer, max_length, threads,
                        precision="f32" if name.endswith("fp32") else None)
  return OrtPeer(path, tokenizer, max_length, threads)


def peak_rss_mb():
  """VmHWM of /proc/self/status in MiB (None where there is no /proc)."""
  try:
    with open("/proc/self/status", encoding="utf-8") as f:
      for line in f:
        if line.startswith("VmHWM:"):
          return round(int(line.split()[1]) / 1024, 1)
  except OSError:
    pass
  return None
