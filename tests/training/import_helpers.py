"""A tiny random Hugging Face BERT written by the tests, and BERT in NumPy.

`write_tiny_bert` writes what a Hugging Face (sentence-transformers) model
directory holds, with the safetensors file written by NumPy alone, so the
import tests need neither torch nor transformers. `numpy_bert` is Hugging
Face's `BertModel` forward pass written out in NumPy: the reference the
imported encoder must reproduce.
"""
import json
import os

import numpy as np
from scipy import special

WORDS = ("the a cat dog sat on mat ran fast slow big small red blue and "
         "##s ##ed ##ing").split()
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS
TINY_CONFIG = dict(
    model_type="bert", architectures=["BertModel"], vocab_size=len(VOCAB),
    hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
    intermediate_size=32, hidden_act="gelu_new", max_position_embeddings=40,
    type_vocab_size=2, layer_norm_eps=1e-12, initializer_range=0.02,
    hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)


def write_safetensors(path, tensors):
  """The safetensors format: header length, JSON header, raw buffers."""
  names = {np.dtype("<f4"): "F32", np.dtype("<f2"): "F16",
           np.dtype("<i8"): "I64"}
  header, buffers, offset = {}, [], 0
  for name, array in tensors.items():
    data = np.ascontiguousarray(array).tobytes()
    header[name] = dict(dtype=names[np.dtype(array.dtype)],
                        shape=list(array.shape),
                        data_offsets=[offset, offset + len(data)])
    buffers.append(data)
    offset += len(data)
  header["__metadata__"] = {"format": "pt"}
  encoded = json.dumps(header).encode("utf-8")
  with open(path, "wb") as f:
    f.write(len(encoded).to_bytes(8, "little") + encoded + b"".join(buffers))


def random_bert_tensors(config=None, seed=0, with_mlm=True, prefix=""):
  """HF BertModel (or BertForPreTraining) tensors, random, [out, in] Linear."""
  config = dict(TINY_CONFIG, **(config or {}))
  rng = np.random.default_rng(seed)
  h, inner = config["hidden_size"], config["intermediate_size"]
  normal = lambda *shape: rng.normal(0, 0.3, shape).astype(np.float32)
  norm = lambda name: {f"{name}.weight": 1 + normal(h),
                       f"{name}.bias": normal(h)}
  t = {"embeddings.word_embeddings.weight": normal(config["vocab_size"], h),
       "embeddings.position_embeddings.weight": normal(
           config["max_position_embeddings"], h),
       "embeddings.token_type_embeddings.weight": normal(
           config["type_vocab_size"], h),
       "embeddings.position_ids": np.arange(
           config["max_position_embeddings"])[np.newaxis],
       **norm("embeddings.LayerNorm"),
       "pooler.dense.weight": normal(h, h), "pooler.dense.bias": normal(h)}
  for i in range(config["num_hidden_layers"]):
    layer = f"encoder.layer.{i}."
    for name in ("query", "key", "value"):
      t[f"{layer}attention.self.{name}.weight"] = normal(h, h)
      t[f"{layer}attention.self.{name}.bias"] = normal(h)
    t.update({f"{layer}attention.output.dense.weight": normal(h, h),
              f"{layer}attention.output.dense.bias": normal(h),
              **norm(f"{layer}attention.output.LayerNorm"),
              f"{layer}intermediate.dense.weight": normal(inner, h),
              f"{layer}intermediate.dense.bias": normal(inner),
              f"{layer}output.dense.weight": normal(h, inner),
              f"{layer}output.dense.bias": normal(h),
              **norm(f"{layer}output.LayerNorm")})
  t = {prefix + name: value for name, value in t.items()}
  if with_mlm:
    t.update({"cls.predictions.transform.dense.weight": normal(h, h),
              "cls.predictions.transform.dense.bias": normal(h),
              **norm("cls.predictions.transform.LayerNorm"),
              "cls.predictions.bias": normal(config["vocab_size"]),
              "cls.predictions.decoder.weight": t[
                  prefix + "embeddings.word_embeddings.weight"]})
  return t


def write_tiny_bert(directory, config=None, tensors=None, pooling="mean",
                    max_seq_length=24, lower_case=True):
  """A sentence-transformers model directory; returns (tensors, config)."""
  os.makedirs(os.path.join(directory, "1_Pooling"), exist_ok=True)
  config = dict(TINY_CONFIG, **(config or {}))
  tensors = random_bert_tensors(config) if tensors is None else tensors
  write_safetensors(os.path.join(directory, "model.safetensors"), tensors)
  files = {
      "config.json": config,
      "tokenizer_config.json": {"do_lower_case": lower_case,
                                "tokenizer_class": "BertTokenizer"},
      "sentence_bert_config.json": {"max_seq_length": max_seq_length,
                                    "do_lower_case": False},
      "modules.json": [
          {"idx": 0, "name": "0", "path": "",
           "type": "sentence_transformers.models.Transformer"},
          {"idx": 1, "name": "1", "path": "1_Pooling",
           "type": "sentence_transformers.models.Pooling"},
          {"idx": 2, "name": "2", "path": "2_Normalize",
           "type": "sentence_transformers.models.Normalize"}],
      "1_Pooling/config.json": {
          "word_embedding_dimension": config["hidden_size"],
          "pooling_mode_mean_sqrt_len_tokens": False,
          "pooling_mode_cls_token": pooling == "cls",
          "pooling_mode_mean_tokens": pooling == "mean",
          "pooling_mode_max_tokens": pooling == "max"},
  }
  for name, content in files.items():
    with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
      json.dump(content, f)
  with open(os.path.join(directory, "vocab.txt"), "w", encoding="utf-8") as f:
    f.write("\n".join(VOCAB) + "\n")
  return tensors, config


def _layer_norm(x, gamma, beta, eps=1e-12):
  mean = x.mean(-1, keepdims=True)
  variance = ((x - mean) ** 2).mean(-1, keepdims=True)
  return (x - mean) / np.sqrt(variance + eps) * gamma + beta


def _gelu(x, approximate):
  if approximate:
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
  return 0.5 * x * (1 + special.erf(x / np.sqrt(2)))


def numpy_bert(t, config, ids, mask):
  """HF BertModel's last_hidden_state `[batch, seq, hidden]`, in float64."""
  t = {k.removeprefix("bert."): np.asarray(v, np.float64) for k, v in t.items()}
  heads = config["num_attention_heads"]
  linear = lambda x, name: x @ t[f"{name}.weight"].T + t[f"{name}.bias"]
  norm = lambda x, name: _layer_norm(x, t[f"{name}.weight"], t[f"{name}.bias"])
  batch, length = ids.shape
  x = (t["embeddings.word_embeddings.weight"][ids]
       + t["embeddings.position_embeddings.weight"][:length]
       + t["embeddings.token_type_embeddings.weight"][0])
  x = norm(x, "embeddings.LayerNorm")
  split = lambda y: y.reshape(batch, length, heads, -1).transpose(0, 2, 1, 3)
  for i in range(config["num_hidden_layers"]):
    layer = f"encoder.layer.{i}."
    q, k, v = (split(linear(x, f"{layer}attention.self.{n}"))
               for n in ("query", "key", "value"))
    # [batch, heads, seq, seq]
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    scores = scores + (1.0 - mask[:, None, None, :]) * -1e9
    probs = special.softmax(scores, axis=-1)
    context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, length, -1)
    x = norm(x + linear(context, f"{layer}attention.output.dense"),
             f"{layer}attention.output.LayerNorm")
    hidden = _gelu(linear(x, f"{layer}intermediate.dense"),
                   approximate=config["hidden_act"] != "gelu")
    x = norm(x + linear(hidden, f"{layer}output.dense"),
             f"{layer}output.LayerNorm")
  return x


def mean_pool(sequence, mask):
  mask = mask[..., None].astype(sequence.dtype)
  return (sequence * mask).sum(1) / mask.sum(1)
