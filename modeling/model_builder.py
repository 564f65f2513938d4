"""Config and builders of the shared sentence encoder (section 2, tables 7, 9).

`SentenceEncoderConfig` is the `model` block of every experiment: the
encoder all objectives share. Its `encoder` is Model Garden's own
`BertEncoderConfig`, so YAML written for Model Garden's BERT reads the same
here. Objective heads (CMLM's MLM head, NLI's classifier, ...) are built by
their objectives (`objectives/`), not here.
"""
import dataclasses
from typing import Optional

import tf_keras

from modeling.conditional_mlm import ConditionalMaskedLM
from modeling.conditional_mlm import ConditionalMlmHead
from modeling.lenses import LensConfig
from modeling.lenses import build_lens
from modeling.pooling import POOLING_MODES
from modeling.projection_head import ProjectionHead
from modeling.sentence_encoder import SENTENCE_REPRESENTATIONS
from modeling.sentence_encoder import SentenceEncoder
from modeling.sentence_encoder import build_transformer
from official.modeling.hyperparams import base_config
from official.nlp.configs import encoders


@dataclasses.dataclass
class SentenceEncoderConfig(base_config.Config):
  """The sentence encoder every objective of a run shares.

  Attributes:
    encoder: the transformer (Model Garden's BERT config).
    num_projections: N of section 2 (table 7: 15 is best): the projection
      head P(v) CMLM conditions on, whose positions the transformer reserves.
    pooling: "mean" | "cls" | "max" (table 9).
    sentence_representation: "pooled" (v) or "proj" (mean of v_p; table 7).
    lens: contextual lensing (Kiros et al. 2020, section 3): a lens over the
      transformer's token states gives the sentence embedding instead of
      `pooling` ("none": no lens).
    trainable_core: False freezes the transformer and projection head (the
      lensing "core"): not trainable, always run with training=False; only
      the lens and the objectives' heads train.
  """
  encoder: encoders.BertEncoderConfig = dataclasses.field(
      default_factory=encoders.BertEncoderConfig)
  num_projections: int = 15
  pooling: str = "mean"
  sentence_representation: str = "pooled"
  lens: LensConfig = dataclasses.field(default_factory=LensConfig)
  trainable_core: bool = True

  def validate(self):
    super().validate()
    self.lens.validate()
    if self.lens.type != "none" and self.sentence_representation == "proj":
      raise ValueError('model.lens replaces the pooled sentence vector; set '
                       'model.sentence_representation="pooled" or '
                       'model.lens.type="none".')
    if self.pooling not in POOLING_MODES:
      raise ValueError(f"model.pooling must be one of {POOLING_MODES}, "
                       f"got {self.pooling!r}.")
    if self.sentence_representation not in SENTENCE_REPRESENTATIONS:
      raise ValueError("model.sentence_representation must be one of "
                       f"{SENTENCE_REPRESENTATIONS}, got "
                       f"{self.sentence_representation!r}.")
    if self.num_projections < 1:
      raise ValueError("model.num_projections must be at least 1, got "
                       f"{self.num_projections}.")


def build_sentence_encoder(config: SentenceEncoderConfig,
                           seq_length: Optional[int] = None
                           ) -> SentenceEncoder:
  """The shared, exportable encoder: transformer + pooling + P (appendix C)."""
  config.validate()
  transformer = build_transformer(config.encoder, config.num_projections,
                                  seq_length)
  initializer = tf_keras.initializers.TruncatedNormal(
      stddev=config.encoder.initializer_range)
  projection_head = ProjectionHead(config.num_projections,
                                   initializer=initializer,
                                   name="projection_head")
  return SentenceEncoder(
      transformer, pooling=config.pooling,
      sentence_representation=config.sentence_representation,
      projection_head=projection_head, lens=build_lens(config.lens),
      trainable_core=config.trainable_core, name="sentence_encoder")


def build_cmlm_head(encoder: SentenceEncoder, skip: bool = False,
                    mlm_activation: str = "gelu",
                    mlm_initializer_range: float = 0.02
                    ) -> ConditionalMlmHead:
  """CMLM's MLM head, tied to `encoder`'s word embeddings."""
  return ConditionalMlmHead(
      encoder.transformer, skip=skip, mlm_activation=mlm_activation,
      mlm_initializer=tf_keras.initializers.TruncatedNormal(
          stddev=mlm_initializer_range),
      name="cmlm_head")


def build_cmlm_model(config: SentenceEncoderConfig, seq_length=None,
                     **head_kwargs) -> ConditionalMaskedLM:
  """Encoder + CMLM head as one model; `head_kwargs` go to `build_cmlm_head`."""
  encoder = build_sentence_encoder(config, seq_length)
  return ConditionalMaskedLM(encoder, build_cmlm_head(encoder, **head_kwargs),
                             name="conditional_mlm")
