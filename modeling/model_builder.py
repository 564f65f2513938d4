"""Config and builders of the shared sentence encoder (section 2, tables 7, 9).

`SiameseEncoderConfig` is the `model` block of every experiment: the
encoder all objectives share. Its `encoder` is Model Garden's own
`BertEncoderConfig`, so YAML written for Model Garden's BERT reads the same
here. Objective heads (CMLM's MLM head, NLI's classifier, ...) are built by
their objectives (`objectives/`), not here.
"""
import dataclasses
from typing import Optional

import tf_keras

from cmlm.modeling.conditional_mlm import ConditionalMaskedLM
from cmlm.modeling.conditional_mlm import ConditionalMlmHead
from cmlm.modeling import pooling_heads
from cmlm.modeling.pooling import POOLING_MODES
from cmlm.modeling.projection_head import ProjectionHead
from cmlm.modeling.siamese_encoder import SENTENCE_REPRESENTATIONS
from cmlm.modeling.siamese_encoder import SiameseEncoder
from cmlm.modeling.siamese_encoder import build_transformer
from official.modeling.hyperparams import base_config
from official.nlp.configs import encoders


@dataclasses.dataclass
class SiameseEncoderConfig(base_config.Config):
  """The siamese encoder every objective of a run shares.

  Attributes:
    encoder: the transformer (Model Garden's BERT config).
    num_projections: N of section 2 (table 7: 15 is best): the projection
      head P(v) CMLM conditions on, whose positions the transformer
      reserves; 0: no projection head (a run that trains no CMLM).
    pooling: "mean" | "cls" | "max" (table 9).
    sentence_representation: "pooled" (v) or "proj" (mean of v_p; table 7).
    pooling_head: a registered trained pooling head that gives the sentence
      embedding instead of `pooling` (`modeling/pooling_heads.py`; type
      "none": no head). Its fields are those of the registered kind.
    trainable_core: False freezes the transformer and projection head: not
      trainable, always run with training=False; only the pooling head and
      the objectives' heads train.
  """
  encoder: encoders.BertEncoderConfig = dataclasses.field(
      default_factory=encoders.BertEncoderConfig)
  num_projections: int = 15
  pooling: str = "mean"
  sentence_representation: str = "pooled"
  pooling_head: pooling_heads.PoolingHeadConfig = dataclasses.field(
      default_factory=pooling_heads.PoolingHeadConfig)
  trainable_core: bool = True

  def _set(self, k, v):
    if k == "pooling_head":  # typed by its registered kind
      v = pooling_heads.typed_config(v, self.__dict__.get(k))
    super()._set(k, v)

  def _override(self, override_dict, is_strict=True):
    override_dict = dict(override_dict)
    head = override_dict.pop("pooling_head", None)
    super()._override(override_dict, is_strict)
    if head is not None:
      if isinstance(head, base_config.Config):
        head = head.as_dict()
      self._set("pooling_head", head)

  def validate(self):
    super().validate()
    check_encoder(self.encoder)
    self.pooling_head.validate()
    if (self.pooling_head.type != pooling_heads.NONE
        and self.sentence_representation == "proj"):
      raise ValueError('model.pooling_head replaces the pooled sentence '
                       'vector; set model.sentence_representation="pooled" or '
                       'model.pooling_head.type="none".')
    if self.pooling not in POOLING_MODES:
      raise ValueError(f"model.pooling must be one of {POOLING_MODES}, "
                       f"got {self.pooling!r}.")
    if self.sentence_representation not in SENTENCE_REPRESENTATIONS:
      raise ValueError("model.sentence_representation must be one of "
                       f"{SENTENCE_REPRESENTATIONS}, got "
                       f"{self.sentence_representation!r}.")
    if self.num_projections < 0:
      raise ValueError("model.num_projections must be 0 (no projection head) "
                       f"or more, got {self.num_projections}.")
    if self.sentence_representation == "proj" and not self.num_projections:
      raise ValueError('model.sentence_representation="proj" reads the '
                       "projection head: model.num_projections must be 1 or "
                       "more.")


def check_encoder(encoder) -> None:
  """One ValueError, naming the field, for a transformer Model Garden's BERT
  would fail to build (an IndexError, a ZeroDivisionError, a Keras
  error naming none of the config's fields)."""
  for name in ("hidden_size", "num_layers", "num_attention_heads",
               "intermediate_size", "max_position_embeddings"):
    if getattr(encoder, name) < 1:
      raise ValueError(f"model.encoder.{name} must be 1 or more, got "
                       f"{getattr(encoder, name)}.")
  if encoder.hidden_size % encoder.num_attention_heads:
    raise ValueError(
        f"model.encoder.hidden_size ({encoder.hidden_size}) must be a "
        "multiple of model.encoder.num_attention_heads "
        f"({encoder.num_attention_heads}): each head takes an equal share.")
  for name in ("dropout_rate", "attention_dropout_rate"):
    if not 0 <= getattr(encoder, name) < 1:
      raise ValueError(f"model.encoder.{name} must be in [0, 1), got "
                       f"{getattr(encoder, name)}.")


def build_siamese_encoder(config: SiameseEncoderConfig,
                          seq_length: Optional[int] = None) -> SiameseEncoder:
  """The shared, exportable encoder: transformer + pooling + P (appendix C)."""
  transformer = build_transformer(config.encoder, config.num_projections,
                                  seq_length)
  projection_head = None
  if config.num_projections:
    initializer = tf_keras.initializers.TruncatedNormal(
        stddev=config.encoder.initializer_range)
    projection_head = ProjectionHead(config.num_projections,
                                     initializer=initializer,
                                     name="projection_head")
  return SiameseEncoder(
      transformer, pooling=config.pooling,
      sentence_representation=config.sentence_representation,
      projection_head=projection_head,
      pooling_head=pooling_heads.build_pooling_head(config.pooling_head),
      trainable_core=config.trainable_core, name="sentence_encoder")


def build_cmlm_head(encoder: SiameseEncoder, skip: bool = False,
                    mlm_activation: str = "gelu",
                    mlm_initializer_range: float = 0.02
                    ) -> ConditionalMlmHead:
  """CMLM's MLM head, tied to `encoder`'s word embeddings."""
  return ConditionalMlmHead(
      encoder.transformer, skip=skip, mlm_activation=mlm_activation,
      mlm_initializer=tf_keras.initializers.TruncatedNormal(
          stddev=mlm_initializer_range),
      name="cmlm_head")


def build_cmlm_model(config: SiameseEncoderConfig, seq_length=None,
                     **head_kwargs) -> ConditionalMaskedLM:
  """Encoder + CMLM head as one model; `head_kwargs` go to `build_cmlm_head`."""
  encoder = build_siamese_encoder(config, seq_length)
  return ConditionalMaskedLM(encoder, build_cmlm_head(encoder, **head_kwargs),
                             name="conditional_mlm")
