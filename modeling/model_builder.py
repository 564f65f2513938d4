"""Config and builders for the CMLM models (paper section 2, table 7, table 9).

`CmlmModelConfig` is the `model` block of a CMLM experiment; its `encoder`
is Model Garden's own `BertEncoderConfig`, so YAML written for Model Garden's
BERT reads the same here.
"""
import dataclasses

import tf_keras

from modeling.conditional_mlm import ConditionalMaskedLM
from modeling.pooling import POOLING_MODES
from modeling.projection_head import ProjectionHead
from modeling.sentence_encoder import SENTENCE_REPRESENTATIONS
from modeling.sentence_encoder import SentenceEncoder
from modeling.sentence_encoder import build_transformer
from official.modeling.hyperparams import base_config
from official.nlp.configs import encoders


@dataclasses.dataclass
class CmlmModelConfig(base_config.Config):
  """The CMLM model.

  Attributes:
    encoder: the transformer (Model Garden's BERT config).
    num_projections: N of section 2 (table 7: 15 is best).
    pooling: "mean" | "cls" | "max" (table 9).
    sentence_representation: "pooled" (v) or "proj" (mean of v_p; table 7).
    skip: the "skip" architecture of table 7.
    mlm_activation: activation of the MLM head's transform layer.
    mlm_initializer_range: stddev of the MLM head's initializer.
  """
  encoder: encoders.BertEncoderConfig = dataclasses.field(
      default_factory=encoders.BertEncoderConfig)
  num_projections: int = 15
  pooling: str = "mean"
  sentence_representation: str = "pooled"
  skip: bool = False
  mlm_activation: str = "gelu"
  mlm_initializer_range: float = 0.02

  def validate(self):
    super().validate()
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


def build_cmlm_model(config: CmlmModelConfig, seq_length=None
                     ) -> ConditionalMaskedLM:
  """The trainable CMLM model; `model.encoder` is the exportable encoder."""
  config.validate()
  transformer = build_transformer(config.encoder, config.num_projections,
                                  seq_length)
  initializer = tf_keras.initializers.TruncatedNormal(
      stddev=config.encoder.initializer_range)
  projection_head = ProjectionHead(config.num_projections,
                                   initializer=initializer,
                                   name="projection_head")
  encoder = SentenceEncoder(
      transformer, pooling=config.pooling,
      sentence_representation=config.sentence_representation,
      projection_head=projection_head, name="sentence_encoder")
  return ConditionalMaskedLM(
      encoder, projection_head, skip=config.skip,
      mlm_activation=config.mlm_activation,
      mlm_initializer=tf_keras.initializers.TruncatedNormal(
          stddev=config.mlm_initializer_range),
      name="conditional_mlm")
