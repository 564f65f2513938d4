"""Pretrained BERT weights, by Model Garden name, and how they enter our model.

Every importer turns its source into an `ImportedEncoder`: NumPy arrays keyed
by the tail of the Model Garden variable name they become (shapes as Model
Garden's `BertEncoderV2` holds them), plus the tokenizer settings and pooling
the source was trained with. The keys are the same for every source:

    word_embeddings/embeddings                [vocab_size, hidden]
    position_embedding/embeddings             [max_positions, hidden]
    type_embeddings/embeddings                [type_vocab_size, hidden]
    embeddings/layer_norm/{gamma,beta}        [hidden]
    layer_{i}/self_attention/{query,key,value}/kernel  [hidden, heads, size]
    layer_{i}/self_attention/{query,key,value}/bias    [heads, size]
    layer_{i}/self_attention/attention_output/kernel   [heads, size, hidden]
    layer_{i}/self_attention/attention_output/bias     [hidden]
    layer_{i}/self_attention_layer_norm/{gamma,beta}   [hidden]
    layer_{i}/intermediate/{kernel,bias}      [hidden, inner_dim], [inner_dim]
    layer_{i}/output/{kernel,bias}            [inner_dim, hidden], [hidden]
    layer_{i}/output_layer_norm/{gamma,beta}  [hidden]
    pooler_transform/{kernel,bias}            optional (frozen, unused)
    cls/predictions/transform/dense/{kernel,bias}      optional MLM head
    cls/predictions/transform/LayerNorm/{gamma,beta}
    cls/predictions/output_bias/bias          [vocab_size]
"""
import dataclasses
import re
from typing import Dict, List, Optional

import numpy as np
import tensorflow as tf
import tf_keras

from official.nlp.configs import encoders

_NAME = re.compile(
    r"(?:^|/)((?:word_embeddings|position_embedding|type_embeddings)/embeddings"
    r"|embeddings/layer_norm/(?:gamma|beta)|layer_\d+/.+"
    r"|pooler_transform/(?:kernel|bias)|cls/predictions/.+)$")
_LAYER = re.compile(r"^layer_(\d+)/")
OPTIONAL_PREFIXES = ("pooler_transform/", "cls/predictions/")


@dataclasses.dataclass
class ReferenceOutputs:
  """The source's own outputs on probe inputs, to check an import against.

  Attributes:
    inputs: int32 `[batch, length]` `input_word_ids`, `input_mask`,
      `input_type_ids`.
    sequence_output: the source's `[batch, length, hidden]`.
    embedding: the source's sentence vector `[batch, hidden]`, when the
      imported pooling reproduces it (else None).
  """
  inputs: Dict[str, np.ndarray]
  sequence_output: np.ndarray
  embedding: Optional[np.ndarray] = None


@dataclasses.dataclass
class ImportedEncoder:
  """What an importer read: weights, architecture, tokenizer and pooling.

  Attributes:
    weights: arrays by Model Garden name (see the module docstring).
    encoder: the transformer's architecture.
    vocab_file: the WordPiece vocabulary the source was trained with.
    lower_case: whether its tokenizer lower-cases (an uncased model).
    text_normalization: how its tokenizer cleans text: "tf_text" or
      "huggingface" (`data_pipelines.tokenization`).
    pooling: "mean", "cls" or "max".
    seq_length: the longest token sequence the source reads ([CLS] and
      [SEP] included), or None for the default.
    source: a one-line description, for messages.
    reference: the source's outputs, when it can run (a SavedModel).
    notes: what the import could not carry over, a sentence each.
  """
  weights: Dict[str, np.ndarray]
  encoder: encoders.BertEncoderConfig
  vocab_file: str
  lower_case: bool
  text_normalization: str = "tf_text"
  pooling: str = "mean"
  seq_length: Optional[int] = None
  source: str = ""
  reference: Optional[ReferenceOutputs] = None
  notes: List[str] = dataclasses.field(default_factory=list)


def canonical_name(variable_name: str) -> Optional[str]:
  """The importer key of a Model Garden variable name, or None if foreign.

  `transformer/transformer/layer_0/self_attention/query/kernel:0` and a
  TF-Hub export's `transformer/layer_0/self_attention/query/kernel:0` both
  give `layer_0/self_attention/query/kernel`.
  """
  match = _NAME.search(variable_name.split(":")[0])
  return match.group(1) if match else None


def infer_encoder_config(weights: Dict[str, np.ndarray], **overrides
                         ) -> encoders.BertEncoderConfig:
  """The `BertEncoderConfig` whose variables have the shapes of `weights`."""
  try:
    vocab_size, hidden_size = weights["word_embeddings/embeddings"].shape
    query = weights["layer_0/self_attention/query/kernel"]
    num_layers = 1 + max(int(_LAYER.match(k).group(1))
                         for k in weights if _LAYER.match(k))
    config = dict(
        vocab_size=vocab_size, hidden_size=hidden_size,
        num_layers=num_layers, num_attention_heads=query.shape[1],
        intermediate_size=weights["layer_0/intermediate/kernel"].shape[1],
        max_position_embeddings=(
            weights["position_embedding/embeddings"].shape[0]),
        type_vocab_size=weights["type_embeddings/embeddings"].shape[0])
  except KeyError as error:
    raise ValueError(f"The source has no {error.args[0]} weights: it is not a "
                     "BERT encoder.") from None
  config.update(overrides)
  return encoders.BertEncoderConfig(**config)


def assign_weights(encoder, weights: Dict[str, np.ndarray],
                   masked_lm: Optional[tf_keras.layers.Layer] = None
                   ) -> List[str]:
  """Copies `weights` into a built `SiameseEncoder` (and CMLM's MLM head).

  Every transformer variable but BERT's pooler must be in `weights` with its
  exact shape; the pooler and the MLM head (`masked_lm`, when given) are
  copied when present and keep their fresh initialisation otherwise. The
  projection head is never touched.

  Returns:
    The keys of `weights` that are not variables of the model (to report).
  """
  targets = {}
  for variable in (encoder.transformer.variables +
                   (masked_lm.variables if masked_lm is not None else [])):
    targets[canonical_name(variable.name)] = variable
  if None in targets:
    raise AssertionError(f"Unnamed variable {targets[None].name}.")
  missing = [k for k in targets
             if k not in weights and not k.startswith(OPTIONAL_PREFIXES)]
  if missing:
    raise ValueError(f"The source lacks {len(missing)} weights of the "
                     f"encoder, e.g. {', '.join(sorted(missing)[:3])}.")
  mlm = [k for k in targets if k.startswith("cls/predictions/")]
  if any(k in weights for k in mlm) and not all(k in weights for k in mlm):
    raise ValueError("The source has only part of the MLM head: "
                     f"{', '.join(sorted(k for k in mlm if k not in weights))}"
                     " missing.")
  for key, variable in targets.items():
    if key not in weights:
      continue
    value = np.asarray(weights[key], np.float32)
    if tuple(value.shape) != tuple(variable.shape):
      raise ValueError(f"The source's {key} has shape {list(value.shape)}, "
                       f"the encoder expects {variable.shape.as_list()}.")
    variable.assign(value)
  return sorted(set(weights) - set(targets))


def check_against_reference(encoder, reference: ReferenceOutputs,
                            source: str) -> None:
  """Raises ValueError unless the imported `SiameseEncoder` gives the
  source's sequence output (at the real tokens) and, when recorded, its
  sentence vector on the reference's inputs."""
  inputs = {name: tf.constant(value)
            for name, value in reference.inputs.items()}
  outputs = encoder(inputs, training=False)
  real = reference.inputs["input_mask"] > 0
  checks = [("sequence_output", outputs["sequence_output"].numpy()[real],
             reference.sequence_output[real])]
  if reference.embedding is not None:
    checks.append(("sentence vector", outputs["default"].numpy(),
                   reference.embedding))
  for what, ours, theirs in checks:
    tolerance = 1e-4 * max(1.0, float(np.abs(theirs).max()))
    difference = float(np.abs(ours - theirs).max())
    if difference > tolerance:
      raise ValueError(
          f"The imported encoder's {what} differs from {source}'s by "
          f"{difference:.2g}: the source is not a BERT encoder as Model "
          "Garden builds it (post-LayerNorm, GELU), so it cannot be "
          "imported.")
