"""Trained pooling heads: the registered alternatives to `model.pooling`.

`model.pooling` (mean | cls | max, `modeling/pooling.py`) has no weights. A
pooling head is a Keras layer with weights that reduces the transformer's
token states to the sentence vector in its place:

    head(sequence_output [batch, time, hidden], input_mask [batch, time],
         training) -> [batch, output_size]

A project registers one with `register_pooling_head(kind, config_cls)` on
its build function; `task.model.pooling_head` selects it by `type` (default
"none": the encoder's `pooling`) and holds its parameters:

    task:
      model:
        pooling_head: {type: gated_conv, output_size: 1024}

The encoder tracks the head as `pooling_head` (checkpoint item
`encoder/pooling_head`), exports it with the encoder, and a head may add
signatures to the serving SavedModel (`serving_signatures`; see
`export/serving.py`).
"""
import copy
import dataclasses
from typing import Callable, Dict, Optional, Tuple, Type

import tensorflow as tf
import tf_keras

from official.modeling.hyperparams import base_config

NONE = "none"


@dataclasses.dataclass
class PoolingHeadConfig(base_config.Config):
  """`task.model.pooling_head`: `type` names a registered head ("none": no
  head); a registered kind's config subclass adds its parameters."""
  type: str = NONE

  def validate(self):
    super().validate()
    if self.type != NONE and self.type not in _REGISTRY:
      raise ValueError(
          f"model.pooling_head.type must be {NONE!r} or a registered pooling "
          f"head ({', '.join(sorted(_REGISTRY)) or 'none is registered'}), "
          f"got {self.type!r}.")


class PoolingHead(tf_keras.layers.Layer):
  """The base of pooling heads: `call(sequence_output, input_mask, training)`
  -> `[batch, output_size]`.

  Attributes:
    output_size: the sentence vector's size; None: the input's hidden size.
  """

  output_size: Optional[int] = None

  def compute_output_shape(self, input_shape):
    return tf.TensorShape([input_shape[0],
                           self.output_size or input_shape[-1]])

  def serving_signatures(self, serving_model) -> Dict[str, Callable]:
    """Extra signatures of the text-to-embedding SavedModel, by name
    (`export.serving.TextEmbedding` passes itself); none by default."""
    del serving_model
    return {}


Builder = Callable[[PoolingHeadConfig], PoolingHead]
_REGISTRY: Dict[str, Tuple[Type[PoolingHeadConfig], Builder]] = {}


def register_pooling_head(kind: str, config_cls: Type[PoolingHeadConfig]
                          ) -> Callable[[Builder], Builder]:
  """Decorator of a function `config -> PoolingHead`: makes it the head of
  `task.model.pooling_head.type=kind`, configured by `config_cls`.

  Examples:
    >>> @dataclasses.dataclass
    ... class AttentionPoolConfig(PoolingHeadConfig):
    ...   type: str = "attention_pool"
    ...   output_size: int = 256
    >>> @register_pooling_head("attention_pool", AttentionPoolConfig)
    ... def build_attention_pool(config):
    ...   return AttentionPool(config.output_size)  # a PoolingHead layer

    A run then trains it over the encoder:
    `--params_override=task.model.pooling_head.type=attention_pool`.
  """
  def register(build: Builder) -> Builder:
    if kind == NONE or (kind in _REGISTRY and _REGISTRY[kind][1] is not build):
      raise ValueError(f"A pooling head is already registered as {kind!r}.")
    _REGISTRY[kind] = (config_cls, build)
    return build
  return register


def registered_kinds():
  return sorted(_REGISTRY)


def typed_config(value, current: Optional[PoolingHeadConfig] = None
                 ) -> PoolingHeadConfig:
  """The config class of `value`'s `type` (or `current`'s), overridden by
  `value` (a dict or a config); unknown keys are refused."""
  if isinstance(value, PoolingHeadConfig):
    return copy.deepcopy(value)
  if not isinstance(value, dict):
    raise ValueError("task.model.pooling_head must be a mapping of the "
                     f"head's fields, got {value!r}.")
  kind = value.get("type") or (current.type if current else NONE)
  if current is not None and current.type == kind:
    config = copy.deepcopy(current)
  elif kind == NONE:
    config = PoolingHeadConfig()
  elif kind in _REGISTRY:
    config = _REGISTRY[kind][0]()
  else:
    raise ValueError(
        f"model.pooling_head.type={kind!r} is not a registered pooling head "
        f"({', '.join(registered_kinds()) or 'none is registered'}); a "
        "project registers its heads in its registry_imports.py.")
  config.override(dict(value, type=kind), is_strict=True)
  return config


def build_pooling_head(config: PoolingHeadConfig) -> Optional[PoolingHead]:
  """The head `config` describes, named "pooling_head"; None for "none"."""
  config.validate()
  if config.type == NONE:
    return None
  return _REGISTRY[config.type][1](config)
