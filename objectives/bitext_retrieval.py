"""Bitext retrieval with additive margin softmax as an objective (4.2).

Translation pairs (`data_pipelines/bitext_dataloader.py`) are embedded by the
shared encoder "the same way as in CMLM" and scored with
`modeling.bitext_loss.cross_replica_additive_margin_loss` (L_s + L_t, margin
on the positives, negatives from the whole global batch). No head of its own.
"""
import dataclasses

import tensorflow as tf
import tf_keras

from cmlm.data_pipelines import bitext
from cmlm.data_pipelines import bitext_dataloader
from cmlm.data_pipelines import unk_rate
from cmlm.modeling import bitext_loss
from cmlm.modeling.nli_head import sentence_pair_embeddings
from cmlm.objectives import base


@dataclasses.dataclass
class BitextRetrievalObjectiveConfig(
    base.with_data(bitext_dataloader.BitextDataConfig)):
  """Attributes: margin m (section 4.4: 0.3), logit scale c, and whether
  phi is the cosine (`normalize_embeddings`)."""
  type: str = "bitext_retrieval"
  weight: float = 0.2  # alpha of section 4.2
  margin: float = 0.3
  logit_scale: float = 10.0
  normalize_embeddings: bool = True


@base.register_objective("bitext_retrieval")
class BitextRetrievalObjective(base.Objective):
  """Rank each source's translation first among the batch's targets."""
  config_cls = BitextRetrievalObjectiveConfig

  def check_data(self, data_config):
    bitext_dataloader.validate_config(data_config, self.tokenization,
                                      self.vocab)

  def build_inputs(self, data_config, input_context=None):
    return bitext_dataloader.build_bitext_dataset(
        data_config, self.tokenization, input_context, self.vocab)

  def text_sample(self, data_config, max_sentences):
    return unk_rate.sides(bitext.iter_bitext(
        data_config.input_path, data_config.source_column,
        data_config.target_column, data_config.header), max_sentences)

  def call(self, encoder, head, state, features, training=None):
    del head, state
    source, target = sentence_pair_embeddings(encoder, features, "source",
                                              "target", training=training)
    return dict(source_embedding=source, target_embedding=target)

  def compute_loss(self, features, outputs):
    del features
    return bitext_loss.cross_replica_additive_margin_loss(
        outputs["source_embedding"], outputs["target_embedding"],
        margin=self.config.margin, scale=self.config.logit_scale,
        normalize=self.config.normalize_embeddings)

  def build_metrics(self):
    return [tf_keras.metrics.Mean(name="bitext_accuracy")]

  def update_metrics(self, metrics, features, outputs):
    # In-batch top-1 retrieval of each source's translation.
    scores = tf.matmul(outputs["source_embedding"],
                       outputs["target_embedding"], transpose_b=True)
    hits = tf.equal(tf.argmax(scores, axis=1, output_type=tf.int32),
                    tf.range(tf.shape(scores)[0]))
    metrics["bitext_accuracy"].update_state(tf.cast(hits, tf.float32))
