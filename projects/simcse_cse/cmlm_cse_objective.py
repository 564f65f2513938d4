"""CMLM-CSE as an objective: SimCSE + a conditional MLM auxiliary network.

Section 3 of Zhang and Chen 2023 ("CMLM-CSE: Based on Conditional MLM
Contrastive Learning for Sentence Embeddings", doi:10.5121/csit.2023.130805;
figure 1): L = L_contrast
+ lambda L_MLM (eq. 6, lambda = 0.005). L_contrast is SimCSE's (eq. 4,
`simcse_objective.py`). For L_MLM (eq. 5, over the masked tokens; the
paper's "not masked" is a slip) the sentence is masked (x', 15%), read by the
lexical feature extractor (a frozen copy of the encoder's lower K layers,
objective state `<name>_state`, copied from the encoder when the run starts:
after `task.init_checkpoint` is restored), its position 0 replaced by the
sentence embedding h of the first view, and the fusioner (3 transformer
blocks and an MLM output, the head `<name>_head`) predicts the masked
tokens. Only the encoder (through h), the fusioner and the head train;
export takes the encoder alone. With lambda = 0 this is SimCSE exactly.
"""
import dataclasses

import tensorflow as tf
import tf_keras

from cmlm.modeling import losses
from cmlm.projects.simcse_cse.cmlm_cse_layers import CmlmCseHead
from cmlm.projects.simcse_cse.cmlm_cse_layers import LexicalFeatureExtractor
from cmlm.projects.simcse_cse.cmlm_cse_layers import SemanticFeatureFusioner
from cmlm.projects.simcse_cse.cmlm_cse_layers import default_extractor_layers
from cmlm.objectives import base
from cmlm.projects.simcse_cse import simcse_objective as simcse


@dataclasses.dataclass
class CmlmCseObjectiveConfig(simcse.SimcseObjectiveConfig):
  """Attributes (besides SimCSE's):
    mlm_weight: lambda of eq. 6 (table 5: 0.005).
    extractor_layers: K, the encoder layers the extractor copies; 0 means
      the paper's 8-of-12 share (`default_extractor_layers`).
    fusioner_layers: the fusioner's transformer blocks (paper: 3).
  The masking rate is `train_data.masking_rate` (table 4: 15%)."""
  type: str = "cmlm_cse"
  mlm_weight: float = 0.005
  extractor_layers: int = 0
  fusioner_layers: int = 3


@base.register_objective("cmlm_cse")
class CmlmCseObjective(simcse.SimcseObjective):
  """SimCSE, plus the masked tokens restored from h through the fusioner."""
  config_cls = CmlmCseObjectiveConfig
  with_masking = True

  @property
  def extractor_layers(self) -> int:
    layers = self.model_config.encoder.num_layers
    return self.config.extractor_layers or default_extractor_layers(layers)

  def check_data(self, data_config):
    name, layers = self.name, self.model_config.encoder.num_layers
    if not 0 <= self.config.extractor_layers <= layers:
      raise ValueError(
          f"task.objectives.{name}.extractor_layers must be between 1 and "
          f"the encoder's {layers} layers (or 0 for the paper's share), got "
          f"{self.config.extractor_layers}.")
    if self.config.fusioner_layers < 1:
      raise ValueError(f"task.objectives.{name}.fusioner_layers must be 1 "
                       f"or more, got {self.config.fusioner_layers}.")
    if self.config.mlm_weight < 0:
      raise ValueError(f"task.objectives.{name}.mlm_weight must be >= 0, "
                       f"got {self.config.mlm_weight}.")
    super().check_data(data_config)

  def build_head(self, encoder):
    config = self.model_config.encoder
    fusioner = SemanticFeatureFusioner(
        vocab_size=config.vocab_size, num_layers=self.config.fusioner_layers,
        num_attention_heads=config.num_attention_heads,
        intermediate_size=config.intermediate_size,
        activation=config.hidden_activation, dropout_rate=config.dropout_rate,
        attention_dropout_rate=config.attention_dropout_rate,
        norm_first=config.norm_first, initializer=self._initializer(),
        name="fusioner")
    return CmlmCseHead(fusioner, mlp=self.config.train_only_mlp,
                       name=f"{self.name}_head")

  @staticmethod
  def mlp_of(head):
    return head.mlp

  def build_state(self, encoder, head):
    """The extractor, a copy of the encoder's lower K layers as they are
    now (and again after `task.init_checkpoint`: `after_initialize`)."""
    extractor = LexicalFeatureExtractor(
        encoder.transformer, self.extractor_layers,
        name=f"{self.name}_extractor")
    extractor.copy_from(encoder.transformer)
    return extractor

  def after_initialize(self, encoder, head, state):
    state.copy_from(encoder.transformer)

  def call(self, encoder, head, state, features, training=None):
    outputs = super().call(encoder, head, state, features, training=training)
    # h' of x': [batch, seq_length, hidden], no gradient.
    lexical = state(dict(input_word_ids=features["masked_input_word_ids"],
                         input_mask=features["input_mask"],
                         input_type_ids=features["input_type_ids"]))
    outputs["mlm_logits"] = head(
        outputs["sentence_embedding"], lexical, features["input_mask"],
        features["masked_lm_positions"], state.embedding_table,
        training=training)
    return outputs

  def mlm_loss(self, features, outputs):
    """Eq. 5 over the masked tokens, normalised by the global count."""
    return base.global_masked_lm_loss(features["masked_lm_ids"],
                                      outputs["mlm_logits"],
                                      features["masked_lm_weights"])

  def compute_loss(self, features, outputs):
    """L = L_contrast + lambda L_MLM (eq. 6)."""
    return (self.contrastive_loss(features, outputs) +
            self.config.mlm_weight * self.mlm_loss(features, outputs))

  def build_metrics(self):
    return super().build_metrics() + [
        tf_keras.metrics.SparseCategoricalAccuracy(name="masked_lm_accuracy"),
        tf_keras.metrics.Mean(name="mlm_loss")]

  def update_metrics(self, metrics, features, outputs):
    super().update_metrics(metrics, features, outputs)
    metrics["masked_lm_accuracy"].update_state(
        features["masked_lm_ids"], outputs["mlm_logits"],
        features["masked_lm_weights"])
    metrics["mlm_loss"].update_state(losses.conditional_mlm_loss(
        features["masked_lm_ids"], outputs["mlm_logits"],
        features["masked_lm_weights"]))

  def dummy_features(self, batch_size: int = 1):
    features = super().dummy_features(batch_size)
    predictions = 1
    features.update(
        masked_input_word_ids=features["input_word_ids"],
        masked_lm_positions=tf.ones([batch_size, predictions], tf.int32),
        masked_lm_ids=tf.ones([batch_size, predictions], tf.int32),
        masked_lm_weights=tf.ones([batch_size, predictions], tf.float32))
    return features
