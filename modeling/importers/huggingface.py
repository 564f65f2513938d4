"""A Hugging Face BERT checkpoint (sentence-transformers too) as our encoder.

A Hugging Face model directory holds `config.json`, `model.safetensors` (or
`pytorch_model.bin`), `vocab.txt` and `tokenizer_config.json`; a
sentence-transformers model adds `modules.json`, `sentence_bert_config.json`
(`max_seq_length`) and a pooling module (`1_Pooling/config.json`).

The names map one to one onto Model Garden's `BertEncoderV2` (the `bert.`
prefix is optional). PyTorch's `Linear` stores `[out, in]`, so kernels are
transposed; the attention projections are then split into heads, as Model
Garden's `EinsumDense` layers hold them:

    encoder.layer.{i}.attention.self.query.weight [hidden, hidden]
      -> layer_{i}/self_attention/query/kernel    [hidden, heads, head_size]
    encoder.layer.{i}.attention.output.dense.weight
      -> layer_{i}/self_attention/attention_output/kernel
                                                  [heads, head_size, hidden]

Activation: HF's "gelu" is the exact erf GELU; no `hidden_activation` string of
Model Garden gives it ("gelu" is the tanh approximation, off by at most 4.7e-4;
on all-MiniLM-L6-v2 the embeddings stay within cosine 0.999996), so "gelu"
is used and HF's "gelu_new" / "gelu_pytorch_tanh" map to it exactly.
LayerNorm epsilon: Model Garden's BERT uses 1e-12, HF BERT's default.
Tokenization: the model_dir asks for `text_normalization="huggingface"`, so
training and the exported preprocessor clean and lower-case text as HF's
`BertTokenizerFast` does (TF Text's NFKC case folding would turn a final 'ς'
into 'σ', 'ß' into 'ss', and give other ids), unless `tokenizer_config.json`
names a `text_normalization` of its own: a folder the garden wrote
(`export/sentence_transformers_folder.py`) records the run's, so that its
import tokenizes as the run did.
"""
import json
import os
import re
from typing import Dict, Optional

import numpy as np

from cmlm.data_pipelines.tokenization import TEXT_NORMALIZATIONS
from cmlm.modeling.importers import encoder_weights
from cmlm.modeling.importers import weight_files

CONFIG = "config.json"
_ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu", "gelu_pytorch_tanh": "gelu",
                "gelu_fast": "gelu", "relu": "relu"}
_POOLING_MODES = {"pooling_mode_cls_token": "cls",
                  "pooling_mode_mean_tokens": "mean",
                  "pooling_mode_max_tokens": "max"}
_SUPPORTED_MODULES = ("Transformer", "Pooling", "Normalize")
# HF name -> (Model Garden name, how the array is laid out anew).
_RULES = [
    (r"embeddings\.word_embeddings\.weight", "word_embeddings/embeddings",
     None),
    (r"embeddings\.position_embeddings\.weight",
     "position_embedding/embeddings", None),
    (r"embeddings\.token_type_embeddings\.weight",
     "type_embeddings/embeddings", None),
    (r"embeddings\.LayerNorm\.(weight|bias)", "embeddings/layer_norm/{0}",
     None),
    (r"encoder\.layer\.(\d+)\.attention\.self\.(query|key|value)\.weight",
     "layer_{0}/self_attention/{1}/kernel", "heads_in"),
    (r"encoder\.layer\.(\d+)\.attention\.self\.(query|key|value)\.bias",
     "layer_{0}/self_attention/{1}/bias", "heads_bias"),
    (r"encoder\.layer\.(\d+)\.attention\.output\.dense\.weight",
     "layer_{0}/self_attention/attention_output/kernel", "heads_out"),
    (r"encoder\.layer\.(\d+)\.attention\.output\.dense\.bias",
     "layer_{0}/self_attention/attention_output/bias", None),
    (r"encoder\.layer\.(\d+)\.attention\.output\.LayerNorm\.(weight|bias)",
     "layer_{0}/self_attention_layer_norm/{1}", None),
    (r"encoder\.layer\.(\d+)\.intermediate\.dense\.(weight|bias)",
     "layer_{0}/intermediate/{1}", "linear"),
    (r"encoder\.layer\.(\d+)\.output\.dense\.(weight|bias)",
     "layer_{0}/output/{1}", "linear"),
    (r"encoder\.layer\.(\d+)\.output\.LayerNorm\.(weight|bias)",
     "layer_{0}/output_layer_norm/{1}", None),
    (r"pooler\.dense\.(weight|bias)", "pooler_transform/{0}", "linear"),
    (r"cls\.predictions\.transform\.dense\.(weight|bias)",
     "cls/predictions/transform/dense/{0}", "linear"),
    (r"cls\.predictions\.transform\.LayerNorm\.(weight|bias)",
     "cls/predictions/transform/LayerNorm/{0}", None),
    (r"cls\.predictions\.bias", "cls/predictions/output_bias/bias", None),
]
# Tied to the word embeddings, a buffer, or BERT's next-sentence head.
_IGNORED = re.compile(r"cls\.predictions\.decoder\.(weight|bias)|"
                      r"embeddings\.position_ids|cls\.seq_relationship\..*")
_PARAMETER = {"weight": "kernel", "bias": "bias"}
_NORM_PARAMETER = {"weight": "gamma", "bias": "beta"}


def is_huggingface_dir(path: str) -> bool:
  return os.path.isfile(os.path.join(path, CONFIG))


def to_model_garden_names(tensors: Dict[str, np.ndarray], num_heads: int
                          ) -> Dict[str, np.ndarray]:
  """Renames and lays out HF BERT tensors as Model Garden's (module doc)."""
  weights = {}
  unknown = []
  for hf_name, value in tensors.items():
    name = hf_name[len("bert."):] if hf_name.startswith("bert.") else hf_name
    name = re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight", name)
    name = re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", name)
    if _IGNORED.fullmatch(name):
      continue
    for pattern, target, layout in _RULES:
      match = re.fullmatch(pattern, name)
      if match:
        break
    else:
      unknown.append(hf_name)
      continue
    groups = list(match.groups())
    if groups and groups[-1] in ("weight", "bias"):
      table = _NORM_PARAMETER if "LayerNorm" in pattern else _PARAMETER
      groups[-1] = table[groups[-1]]
    value = np.asarray(value, np.float32)
    if layout == "linear" and value.ndim == 2:  # [out, in] -> [in, out]
      value = value.T
    elif layout == "heads_in":  # [hidden_out, hidden_in] -> [in, heads, size]
      value = value.T.reshape(value.shape[1], num_heads, -1)
    elif layout == "heads_bias":
      value = value.reshape(num_heads, -1)
    elif layout == "heads_out":  # [hidden_out, hidden_in] -> [heads, size, out]
      value = value.T.reshape(num_heads, -1, value.shape[0])
    weights[target.format(*groups)] = value
  if unknown:
    raise ValueError(
        f"{len(unknown)} tensors are not those of a BERT encoder, e.g. "
        f"{', '.join(sorted(unknown)[:3])}; only BERT-architecture checkpoints "
        "can be imported.")
  return weights


def _inverse_rule(pattern: str, target: str):
  """(the Model Garden name as a regex, the HF name as a template) of one
  of `_RULES`: `to_model_garden_names` read backwards."""
  groups = iter(re.findall(r"\((.*?)\)", pattern))
  garden = re.escape(target)
  for index in range(target.count("{")):
    group = next(groups)
    if group in ("weight|bias",):  # renamed as _PARAMETER / _NORM_PARAMETER
      group = ("gamma|beta" if "LayerNorm" in pattern else "kernel|bias")
    garden = garden.replace(re.escape(f"{{{index}}}"), f"({group})")
  template, index = pattern, 0
  while "(" in template:
    template = re.sub(r"\(.*?\)", f"{{{index}}}", template, count=1)
    index += 1
  return garden, template.replace("\\.", ".")


def to_huggingface_names(weights: Dict[str, np.ndarray]
                         ) -> Dict[str, np.ndarray]:
  """`to_model_garden_names` inverted: Model Garden keys and layouts to HF
  BERT names (no `bert.` prefix, as `BertModel` saves them) and PyTorch's
  `[out, in]` kernels, from the same `_RULES`.

  Examples:
    >>> to_huggingface_names({"layer_0/intermediate/kernel": np.ones([4, 8])})
    {'encoder.layer.0.intermediate.dense.weight': array(...)}  # [8, 4]
  """
  inverse = {_PARAMETER[k]: k for k in _PARAMETER}
  inverse.update({_NORM_PARAMETER[k]: k for k in _NORM_PARAMETER})
  rules = [_inverse_rule(pattern, target) + (layout,)
           for pattern, target, layout in _RULES]
  tensors = {}
  for name, value in weights.items():
    for garden, template, layout in rules:
      match = re.fullmatch(garden, name)
      if match:
        break
    else:
      raise ValueError(f"{name} is not a weight of a BERT encoder that "
                       "Hugging Face's BertModel holds.")
    groups = [inverse.get(group, group) for group in match.groups()]
    value = np.asarray(value, np.float32)
    if layout == "linear" and value.ndim == 2:  # [in, out] -> [out, in]
      value = value.T
    elif layout == "heads_in":  # [in, heads, size] -> [hidden_out, hidden_in]
      value = value.reshape(value.shape[0], -1).T
    elif layout == "heads_bias":  # [heads, size] -> [hidden]
      value = value.reshape(-1)
    elif layout == "heads_out":  # [heads, size, out] -> [out, hidden_in]
      value = value.reshape(-1, value.shape[-1]).T
    tensors[template.format(*groups)] = np.ascontiguousarray(value)
  return tensors


def _read_json(path: str, default=None):
  if not os.path.isfile(path):
    return default
  with open(path, encoding="utf-8") as f:
    try:
      return json.load(f)
    except json.JSONDecodeError as error:
      raise ValueError(f"{path} is not valid JSON ({error}).") from None


def _pooling(model_dir: str) -> str:
  """The sentence-transformers pooling, or "mean" (CMLM's) without one."""
  modules = _read_json(os.path.join(model_dir, "modules.json"), [])
  pooling_dir = os.path.join(model_dir, "1_Pooling")
  for module in modules:
    kind = module.get("type", "").rsplit(".", 1)[-1]
    if kind not in _SUPPORTED_MODULES:
      raise ValueError(
          f"{model_dir}/modules.json has a {kind} module; only Transformer, "
          "Pooling and Normalize modules can be imported.")
    if kind == "Pooling":
      pooling_dir = os.path.join(model_dir, module.get("path", ""))
  config = _read_json(os.path.join(pooling_dir, CONFIG))
  if config is None:
    return "mean"
  if isinstance(config.get("pooling_mode"), str):
    modes = [config["pooling_mode"]]
  else:
    modes = [k for k, v in config.items()
             if k.startswith("pooling_mode") and v is True]
    modes = [_POOLING_MODES.get(k, k) for k in modes]
  if len(modes) != 1 or modes[0] not in _POOLING_MODES.values():
    raise ValueError(
        f"{pooling_dir}/config.json asks for pooling {modes}; only one of "
        "cls, mean or max can be imported.")
  return modes[0]


def read_huggingface(model_dir: str, vocab_file: Optional[str] = None,
                     lower_case: Optional[bool] = None) -> (
                         encoder_weights.ImportedEncoder):
  """Reads a Hugging Face BERT model directory (module docstring)."""
  config = _read_json(os.path.join(model_dir, CONFIG))
  if config.get("model_type", "bert") != "bert":
    raise ValueError(f"{model_dir}/{CONFIG} has model_type "
                     f"{config['model_type']!r}; only 'bert' can be imported.")
  activation = config.get("hidden_act", "gelu")
  if activation not in _ACTIVATIONS:
    raise ValueError(f"{model_dir}/{CONFIG}: hidden_act {activation!r} is not "
                     f"supported (use one of {', '.join(_ACTIVATIONS)}).")
  if config.get("position_embedding_type", "absolute") != "absolute":
    raise ValueError(f"{model_dir}/{CONFIG}: only absolute position "
                     "embeddings can be imported.")
  if config.get("layer_norm_eps", 1e-12) > 1e-6:
    raise ValueError(f"{model_dir}/{CONFIG}: layer_norm_eps "
                     f"{config['layer_norm_eps']} differs from Model Garden's "
                     "1e-12 enough to change the outputs.")
  num_heads = config["num_attention_heads"]
  weights = to_model_garden_names(weight_files.read_weights(model_dir),
                                  num_heads)
  encoder = encoder_weights.infer_encoder_config(
      weights, hidden_activation=_ACTIVATIONS[activation],
      dropout_rate=config.get("hidden_dropout_prob", 0.1),
      attention_dropout_rate=config.get("attention_probs_dropout_prob", 0.1),
      initializer_range=config.get("initializer_range", 0.02))
  for key in ("vocab_size", "hidden_size", "num_attention_heads",
              "intermediate_size", "max_position_embeddings"):
    if key in config and config[key] != getattr(encoder, key):
      raise ValueError(f"{model_dir}/{CONFIG} says {key}={config[key]} but "
                       f"the weights have {getattr(encoder, key)}.")
  tokenizer = _read_json(os.path.join(model_dir, "tokenizer_config.json"), {})
  sentence_bert = _read_json(
      os.path.join(model_dir, "sentence_bert_config.json"), {})
  if lower_case is None:
    lower_case = bool(tokenizer.get("do_lower_case", True) or
                      sentence_bert.get("do_lower_case", False))
  if tokenizer.get("tokenize_chinese_chars") is False or (
      lower_case and tokenizer.get("strip_accents") is False):
    raise ValueError(f"{model_dir}/tokenizer_config.json turns off Chinese "
                     "character splitting or accent stripping, which our "
                     "WordPiece tokenizer always does.")
  text_normalization = tokenizer.get("text_normalization", "huggingface")
  if text_normalization not in TEXT_NORMALIZATIONS:
    raise ValueError(f"{model_dir}/tokenizer_config.json has "
                     f"text_normalization {text_normalization!r}; expected "
                     f"one of {', '.join(TEXT_NORMALIZATIONS)}.")
  vocab_file = vocab_file or os.path.join(model_dir, "vocab.txt")
  if not os.path.isfile(vocab_file):
    raise FileNotFoundError(f"{vocab_file} does not exist; a BERT model "
                            "directory needs its WordPiece vocab.txt.")
  return encoder_weights.ImportedEncoder(
      weights=weights, encoder=encoder, vocab_file=vocab_file,
      lower_case=lower_case, text_normalization=text_normalization,
      pooling=_pooling(model_dir),
      seq_length=sentence_bert.get("max_seq_length"),
      source=f"Hugging Face model {model_dir}")
