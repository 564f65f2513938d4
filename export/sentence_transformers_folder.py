"""The export as a sentence-transformers / Hugging Face model folder.

`python -m cmlm export --formats=saved_model,sentence_transformers` writes,
beside the SavedModels of the same published version,
`sentence_transformers/`, which `SentenceTransformer(folder)` (and
Hugging Face's `AutoModel` / `AutoTokenizer`) load with no garden installed:

    config.json, model.safetensors   the transformer as Hugging Face's BertModel
    vocab.txt, tokenizer.json        the run's tokenization
    tokenizer_config.json, special_tokens_map.json
    modules.json                     Transformer -> Pooling (-> Normalize)
    sentence_bert_config.json        max_seq_length: the run's seq_length
    config_sentence_transformers.json  similarity: cosine
    1_Pooling/config.json            the run's pooling: mean, cls or max
    2_Normalize/                     when the export normalizes (the default)
    onnx/model.onnx                  the transformer, float32: input_ids,
                                     attention_mask, token_type_ids (int64)
                                     -> last_hidden_state
    onnx/model_qint8_avx512_vnni.onnx  the same, int8 weights (dynamic)
    README.md                        model card, Hugging Face front matter

The weights are the names `cmlm import` reads, written backwards
(`modeling.importers.huggingface.to_huggingface_names`), and `hidden_act`
is "gelu_new": Model Garden's "gelu" is GELU's tanh form, which is
Hugging Face's "gelu_new" exactly. `tokenizer.json`
(`data_pipelines.tokenizer_json`) gives the in-graph tokenizer's ids; its
`tokenizer_class` is the generic `PreTrainedTokenizerFast`, so that
transformers reads the pipeline as written instead of rebuilding BERT's,
and `split_special_tokens` leaves the text "[CLS]" as text, as the garden
does. `tokenizer_config.json` also records the run's `text_normalization`,
which `cmlm import` reads back. The ONNX files are named as
sentence-transformers' `backend="onnx"` looks for them (the int8 one by
its `model_kwargs={"file_name": ...}`); the int8 quantization is the one
`export.artifacts` makes (QInt8 weights per output channel, activations
quantized per call), which runs on any CPU onnxruntime supports.

A run whose embedding sentence-transformers cannot express (a pooling head
such as a lens, or CMLM's projections as the embedding) or whose
transformer Hugging Face's BERT is not (pre-layer-norm, an activation it
lacks) is refused in one line before anything is written
(`check_exportable`).
"""
import json
import os
import shutil
from typing import Callable, Dict, Optional

import numpy as np
import tensorflow as tf

from cmlm.data_pipelines import tokenization as tokenization_lib
from cmlm.data_pipelines import tokenizer_json
from cmlm.data_pipelines import vocabulary
from cmlm.export import artifacts
from cmlm.modeling import pooling_heads
from cmlm.modeling.importers import encoder_weights
from cmlm.modeling.importers import huggingface
from cmlm.modeling.importers import weight_files

DIRECTORY = "sentence_transformers"
ONNX_FILES = {"float32": "onnx/model.onnx",
              "int8": "onnx/model_qint8_avx512_vnni.onnx"}
ONNX_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# Model Garden's activation -> Hugging Face's of the same function.
HF_ACTIVATIONS = {"gelu": "gelu_new", "relu": "relu"}
_POOLING_KEYS = {"cls": "pooling_mode_cls_token",
                 "mean": "pooling_mode_mean_tokens",
                 "max": "pooling_mode_max_tokens"}


def check_exportable(model) -> None:
  """Raises ValueError, one line, when the run's encoder (`task.model`, a
  `SiameseEncoderConfig`) has no sentence-transformers equivalent.

  Examples:
    >>> check_exportable(params.task.model)  # mean pooling: nothing raised
  """
  prefix = "--formats=sentence_transformers: "
  if model.pooling_head.type != pooling_heads.NONE:
    raise ValueError(
        f"{prefix}the run's embedding is its {model.pooling_head.type!r} "
        "pooling head, which sentence-transformers' Pooling (mean, cls or "
        "max of the token embeddings) cannot express; export without "
        "sentence_transformers.")
  if model.sentence_representation == "proj":
    raise ValueError(
        f"{prefix}the run's embedding is the mean of CMLM's projections "
        "(sentence_representation=\"proj\"), which sentence-transformers' "
        "Pooling cannot express; export without sentence_transformers.")
  encoder = model.encoder
  if encoder.norm_first:
    raise ValueError(f"{prefix}the transformer normalises before each block "
                     "(norm_first), which Hugging Face's BERT does not.")
  if encoder.hidden_activation not in HF_ACTIVATIONS:
    raise ValueError(
        f"{prefix}the activation {encoder.hidden_activation!r} has no "
        "Hugging Face BERT equivalent here (only "
        f"{', '.join(HF_ACTIVATIONS)}).")


def huggingface_config(encoder) -> dict:
  """`config.json` of Hugging Face's `BertModel` for a `BertEncoderConfig`.

  Examples:
    >>> huggingface_config(params.task.model.encoder)["hidden_act"]
    'gelu_new'
  """
  return {
      "architectures": ["BertModel"], "model_type": "bert",
      "vocab_size": encoder.vocab_size, "hidden_size": encoder.hidden_size,
      "num_hidden_layers": encoder.num_layers,
      "num_attention_heads": encoder.num_attention_heads,
      "intermediate_size": encoder.intermediate_size,
      "hidden_act": HF_ACTIVATIONS[encoder.hidden_activation],
      "hidden_dropout_prob": encoder.dropout_rate,
      "attention_probs_dropout_prob": encoder.attention_dropout_rate,
      "max_position_embeddings": encoder.max_position_embeddings,
      "type_vocab_size": encoder.type_vocab_size,
      "initializer_range": encoder.initializer_range,
      "layer_norm_eps": 1e-12,  # Model Garden's BERT
      "pad_token_id": 0, "position_embedding_type": "absolute",
      "dtype": "float32",
  }


def transformer_weights(transformer) -> Dict[str, np.ndarray]:
  """The transformer's variables by Hugging Face name (BERT's [CLS] pooler
  included: `BertModel` has one).

  Examples:
    >>> transformer_weights(encoder.transformer)["pooler.dense.weight"].shape
    (384, 384)
  """
  weights = {}
  for variable in transformer.variables:
    name = encoder_weights.canonical_name(variable.name)
    if name is None:
      raise ValueError(f"{variable.name} is not a variable of a BERT "
                       "encoder.")
    weights[name] = variable.numpy()
  return huggingface.to_huggingface_names(weights)


def transformer_function(transformer):
  """The traced transformer as sentence-transformers' ONNX backend reads
  it: `input_ids`, `attention_mask`, `token_type_ids` int64 `[batch, time]`
  -> `last_hidden_state` float32 `[batch, time, hidden]`.

  Examples:
    >>> forward = transformer_function(encoder.transformer)
    >>> artifacts.write_onnx_pair(forward, "onnx/model.onnx",
    ...                           "onnx/model_qint8_avx512_vnni.onnx")
  """
  spec = [tf.TensorSpec([None, None], tf.int64, name=name)
          for name in ONNX_INPUTS]

  @tf.function(input_signature=spec, autograph=False)
  def forward(input_ids, attention_mask, token_type_ids):
    outputs = transformer(
        dict(input_word_ids=tf.cast(input_ids, tf.int32),
             input_mask=tf.cast(attention_mask, tf.int32),
             input_type_ids=tf.cast(token_type_ids, tf.int32)),
        training=False)
    return {"last_hidden_state": outputs["sequence_output"]}
  return forward


def pool(states: np.ndarray, mask: np.ndarray, mode: str) -> np.ndarray:
  """sentence-transformers' Pooling in NumPy: `[batch, time, hidden]` and
  the mask `[batch, time]` -> `[batch, hidden]` (`mode`: mean, cls, max).

  Examples:
    >>> pool(np.ones([2, 5, 8]), np.ones([2, 5]), "mean").shape
    (2, 8)
  """
  if mode == "cls":
    return states[:, 0]
  mask = mask[:, :, None].astype(states.dtype)
  if mode == "max":
    return np.where(mask > 0, states, -1e9).max(axis=1)
  return (states * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)


def _write_json(path: str, value) -> None:
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w", encoding="utf-8") as f:
    json.dump(value, f, indent=2, ensure_ascii=False)
    f.write("\n")


def _write_tokenizer(directory: str,
                     tokenization: tokenization_lib.TokenizationConfig,
                     vocab: vocabulary.VocabularyFile) -> None:
  vocab.write_copy(os.path.join(directory, "vocab.txt"))
  tokenizer_json.write_tokenizer_json(
      tokenization, os.path.join(directory, tokenizer_json.FILE_NAME), vocab)
  special = {"pad_token": vocabulary.PAD, "unk_token": vocabulary.UNK,
             "cls_token": vocabulary.CLS, "sep_token": vocabulary.SEP,
             "mask_token": vocabulary.MASK}
  _write_json(os.path.join(directory, "special_tokens_map.json"), special)
  _write_json(os.path.join(directory, "tokenizer_config.json"), dict(
      tokenizer_class="PreTrainedTokenizerFast",
      do_lower_case=bool(tokenization.lower_case), strip_accents=None,
      tokenize_chinese_chars=True, split_special_tokens=True,
      model_max_length=int(tokenization.seq_length),
      text_normalization=tokenization.text_normalization, **special))


def _write_modules(directory: str, pooling: str, dimension: int,
                   seq_length: int, normalize: bool) -> None:
  modules = [dict(idx=0, name="0", path="",
                  type="sentence_transformers.models.Transformer"),
             dict(idx=1, name="1", path="1_Pooling",
                  type="sentence_transformers.models.Pooling")]
  if normalize:
    modules.append(dict(idx=2, name="2", path="2_Normalize",
                        type="sentence_transformers.models.Normalize"))
    os.makedirs(os.path.join(directory, "2_Normalize"))
  _write_json(os.path.join(directory, "modules.json"), modules)
  _write_json(os.path.join(directory, "1_Pooling", "config.json"), {
      "word_embedding_dimension": dimension,
      **{key: mode == pooling for mode, key in _POOLING_KEYS.items()},
      "pooling_mode_mean_sqrt_len_tokens": False, "include_prompt": True})
  _write_json(os.path.join(directory, "sentence_bert_config.json"),
              {"max_seq_length": seq_length, "do_lower_case": False})
  _write_json(os.path.join(directory, "config_sentence_transformers.json"),
              {"model_type": "SentenceTransformer", "prompts": {},
               "default_prompt_name": None, "similarity_fn_name": "cosine"})


def check_onnx(directory: str, serving_encoder, tokenization, pooling: str,
               vocab: Optional[vocabulary.VocabularyFile] = None) -> dict:
  """The smallest cosine, float32 and int8, between the ONNX files read
  with `tokenizer.json` and pooled as the folder's Pooling, and the
  export's encoder on the in-graph tokenization, over
  `artifacts.PROBE_SENTENCES`.

  Examples:
    >>> check_onnx("sentence_transformers", serving_encoder,
    ...            params.task.tokenization, "mean")["int8_min_cosine"]
    0.9806
  """
  import onnxruntime  # pylint: disable=g-import-not-at-top
  from tokenizers import Tokenizer  # pylint: disable=g-import-not-at-top
  sentences = list(artifacts.PROBE_SENTENCES)
  tokenizer = tokenization_lib.build_wordpiece_tokenizer(tokenization,
                                                         vocab=vocab)
  reference = serving_encoder(
      tokenizer.tokenize_and_pack(tf.constant(sentences)),
      training=False)["default"].numpy()
  encodings = Tokenizer.from_file(os.path.join(
      directory, tokenizer_json.FILE_NAME)).encode_batch(sentences)
  ids = np.array([e.ids for e in encodings], np.int64)
  mask = np.array([e.attention_mask for e in encodings], np.int64)
  check = {"sentences": len(sentences)}
  for precision, file in ONNX_FILES.items():
    session = onnxruntime.InferenceSession(
        os.path.join(directory, file), providers=["CPUExecutionProvider"])
    states = session.run(["last_hidden_state"], dict(
        input_ids=ids, attention_mask=mask,
        token_type_ids=np.zeros_like(ids)))[0]
    check[f"{precision}_min_cosine"] = round(artifacts.min_cosine(
        pool(states, mask, pooling), reference), 6)
  return check


def write_folder(directory: str, encoder, serving_encoder,
                 tokenization: tokenization_lib.TokenizationConfig,
                 model_config, normalize: bool,
                 card: Callable[[dict], str],
                 log: Callable[[str], None] = print,
                 vocab: Optional[vocabulary.VocabularyFile] = None) -> dict:
  """Writes the folder (module docstring) into the new `directory`.

  Args:
    directory: `<version>/sentence_transformers`, not yet there.
    encoder: the run's `SiameseEncoder` (its transformer is written).
    serving_encoder: the export's encoder model (`export.encoder`), which
      the ONNX files are checked against.
    tokenization: the run's `task.tokenization`.
    model_config: the run's `task.model` (`check_exportable` passed).
    normalize: add the Normalize module (the export's `--normalize`).
    card: renders README.md from the returned manifest.
    log: where a line goes when the ONNX files cannot be made.
    vocab: the run's vocabulary file as read (read here when not given).

  Returns:
    The manifest: files, pooling, normalize, and the ONNX check (or None).

  Examples:
    >>> manifest = write_folder("v/sentence_transformers", encoder,
    ...                         serving_encoder, params.task.tokenization,
    ...                         params.task.model, normalize=True,
    ...                         card=lambda manifest: "# card\n")
    >>> manifest["onnx"]["int8"]
    'onnx/model_qint8_avx512_vnni.onnx'
  """
  vocab = vocabulary.read_vocabulary(tokenization.vocab_file, vocab)
  os.makedirs(directory)
  _write_json(os.path.join(directory, huggingface.CONFIG),
              huggingface_config(model_config.encoder))
  weight_files.write_safetensors(
      transformer_weights(encoder.transformer),
      os.path.join(directory, weight_files.SAFETENSORS))
  _write_tokenizer(directory, tokenization, vocab)
  hidden_size = model_config.encoder.hidden_size
  _write_modules(directory, model_config.pooling, hidden_size,
                 int(tokenization.seq_length), normalize)
  manifest = dict(pooling=model_config.pooling, normalize=bool(normalize),
                  dimension=hidden_size, onnx=dict(ONNX_FILES), check=None)
  try:
    os.makedirs(os.path.join(directory, "onnx"))
    with artifacts.quiet_converters():
      artifacts.write_onnx_pair(
          transformer_function(encoder.transformer),
          *(os.path.join(directory, ONNX_FILES[p]) for p in ONNX_FILES))
  except Exception as error:  # pylint: disable=broad-except
    # As for the artifacts: a converter's failure leaves the rest usable.
    shutil.rmtree(os.path.join(directory, "onnx"), ignore_errors=True)
    manifest["onnx"] = {}
    first_line = (str(error).strip().splitlines() or [type(error).__name__])
    log(f"export: {DIRECTORY}/onnx not written: the transformer does not "
        f"convert ({first_line[-1][:300]}); the folder loads with "
        "sentence-transformers' torch backend.")
  else:
    manifest["check"] = check_onnx(directory, serving_encoder, tokenization,
                                   model_config.pooling, vocab)
  with open(os.path.join(directory, "README.md"), "w",
            encoding="utf-8") as f:
    f.write(card(manifest))
  return manifest
