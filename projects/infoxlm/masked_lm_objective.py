"""MMLM and TLM as objectives (InfoXLM sections 3.1-3.2, eq. 2 and 3).

One module, two registered kinds over one class:
  * `mmlm`: multilingual MLM on monolingual lines, languages sampled with
    exponent 0.7 (`infoxlm_data.build_mmlm_dataset`);
  * `tlm`: translation LM on "[CLS] x [SEP] y [SEP]", both sides masked,
    segment ids by side, positions reset at y
    (`infoxlm_data.build_tlm_dataset`; the reset goes through the encoder's
    `input_word_embeddings`, see `masked_lm.py`).
Head: Model Garden's `MaskedLM` tied to the word embeddings, one per
objective (`<name>_head`). InfoXLM's code shares one LM head between MMLM
and TLM; the seam gives each objective its own head, so here the two
transform layers are separate (the output embeddings are shared, tied to
the encoder's table). Loss: `modeling.losses.conditional_mlm_loss` (cross
entropy over the masked tokens), normalised by the masked-token count of the
global batch, as CMLM's.
"""
import dataclasses

import tensorflow as tf

from cmlm.data_pipelines import bitext
from cmlm.projects.infoxlm import infoxlm_data
from cmlm.data_pipelines import unk_rate
from cmlm.projects.infoxlm import masked_lm
from cmlm.objectives import base

MODES = ("mmlm", "tlm")


@dataclasses.dataclass
class MaskedLmObjectiveConfig(base.with_data(infoxlm_data.InfoXlmDataConfig)):
  """MMLM or TLM (`type`): its data and MLM head."""
  type: str = "mmlm"
  mlm_activation: str = "gelu"
  mlm_initializer_range: float = 0.02


@dataclasses.dataclass
class TlmObjectiveConfig(MaskedLmObjectiveConfig):
  type: str = "tlm"


class MaskedLmObjective(base.MaskedTokenObjective):
  """Predict the masked tokens of a monolingual line or a translation pair."""
  config_cls = MaskedLmObjectiveConfig

  @property
  def mode(self) -> str:
    return self.config.type if self.config.type in MODES else "mmlm"

  def check_data(self, data_config):
    infoxlm_data.validate_config(
        data_config, self.tokenization,
        f"task.objectives.{self.name}.train_data",
        monolingual=self.mode == "mmlm", vocab=self.vocab)

  def build_inputs(self, data_config, input_context=None):
    build = (infoxlm_data.build_mmlm_dataset if self.mode == "mmlm"
             else infoxlm_data.build_tlm_dataset)
    return build(data_config, self.tokenization, input_context, self.vocab)

  def text_sample(self, data_config, max_sentences):
    if self.mode == "mmlm":
      return infoxlm_data.first_lines(data_config.input_path, max_sentences)
    return unk_rate.sides(bitext.iter_bitext(
        data_config.input_path, data_config.source_column,
        data_config.target_column, data_config.header), max_sentences)

  def build_head(self, encoder):
    return masked_lm.build_masked_lm_head(
        encoder.transformer, self.config.mlm_activation,
        self.config.mlm_initializer_range, name=f"{self.name}_mlm")

  def call(self, encoder, head, state, features, training=None):
    del state
    return masked_lm.masked_lm_outputs(encoder, head, features,
                                       training=training)

  def dummy_features(self, batch_size: int = 1):
    ids = tf.ones([batch_size, self.tokenization.seq_length], tf.int32)
    features = dict(input_word_ids=ids, input_mask=ids,
                    input_type_ids=tf.zeros_like(ids),
                    masked_lm_positions=tf.ones(
                        [batch_size,
                         self.config.train_data.max_predictions_per_seq],
                        tf.int32))
    if self.mode == "tlm":
      features["position_ids"] = tf.zeros_like(ids)
    return features


@base.register_objective("mmlm")
class MmlmObjective(MaskedLmObjective):
  config_cls = MaskedLmObjectiveConfig


@base.register_objective("tlm")
class TlmObjective(MaskedLmObjective):
  config_cls = TlmObjectiveConfig
