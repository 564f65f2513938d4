"""Unsupervised SimCSE as an objective (CMLM-CSE paper section 3.1, eq. 4).

Each sentence of the batch goes through the shared encoder twice, as one
pass over the duplicated batch, so the two views differ only by their
independent dropout masks. The views' sentence embeddings (the encoder's
`default` output: `task.model.pooling` mean, cls or max), optionally through
SimCSE's train-only MLP (`train_only_mlp`, the head `<name>_head`; the export
leaves it out), are scored by `contrastive_loss.py`: cosine over
temperature, the other view the positive, the rest of the *global* batch the
negatives, duplicates of a sentence masked out. SimCSE's "cls" recipe is
`task.model.pooling=cls` with `train_only_mlp=true`.
"""
import dataclasses

import tensorflow as tf
import tf_keras

from cmlm.projects.simcse_cse import sentence_dataloader
from cmlm.projects.simcse_cse.sentence_dataloader import ENCODER_KEYS
from cmlm.projects.simcse_cse import contrastive_loss
from cmlm.projects.simcse_cse.cmlm_cse_layers import SimcseMlp
from cmlm.objectives import base


@dataclasses.dataclass
class SimcseObjectiveConfig(
    base.with_data(sentence_dataloader.SentenceDataConfig)):
  """Attributes: temperature tau (0.05) and SimCSE's train-only MLP."""
  type: str = "simcse"
  temperature: float = 0.05
  train_only_mlp: bool = False


def duplicated(features):
  """The encoder inputs of the batch, twice: `[2 * batch, seq_length]`."""
  return {key: tf.concat([features[key], features[key]], axis=0)
          for key in ENCODER_KEYS}


@base.register_objective("simcse")
class SimcseObjective(base.Objective):
  """Each sentence's second dropout view ranked first among the batch's."""
  config_cls = SimcseObjectiveConfig
  with_masking = False  # CMLM-CSE's inputs also hold the masked x'

  def check_data(self, data_config):
    if self.config.temperature <= 0:
      raise ValueError(f"task.objectives.{self.name}.temperature must be "
                       f"above 0, got {self.config.temperature}.")
    sentence_dataloader.validate_config(data_config, self.tokenization,
                                        self.with_masking, self.vocab)

  def build_inputs(self, data_config, input_context=None):
    loader = sentence_dataloader.SentenceDataLoader(
        data_config, self.tokenization, self.with_masking, self.vocab)
    dataset = loader.load(input_context)
    role = "training" if data_config.is_training else "validation"
    print(f"{self.config.type} {role} data ({data_config.input_path}): "
          f"{loader.num_sentences} distinct sentences.", flush=True)
    return dataset

  def build_head(self, encoder):
    if not self.config.train_only_mlp:
      return None
    return SimcseMlp(initializer=self._initializer(), name=f"{self.name}_mlp")

  def _initializer(self):
    return tf_keras.initializers.TruncatedNormal(
        stddev=self.model_config.encoder.initializer_range)

  @staticmethod
  def mlp_of(head):
    """The train-only MLP of `head`, or None."""
    return head

  def call(self, encoder, head, state, features, training=None):
    """Both views, `[batch, hidden]` each, and the first view's embedding."""
    del state
    batch = tf.shape(features["input_word_ids"])[0]
    # One pass over the duplicated batch: independent dropout per row.
    embeddings = encoder(duplicated(features),
                         training=training)["default"]  # [2 * batch, hidden]
    mlp = self.mlp_of(head)
    views = embeddings if mlp is None else mlp(embeddings)
    return dict(view_a=views[:batch], view_b=views[batch:],
                sentence_embedding=embeddings[:batch])

  def contrastive_loss(self, features, outputs):
    return contrastive_loss.cross_replica_simcse_loss(
        outputs["view_a"], outputs["view_b"], self.config.temperature,
        sentence_ids=features["input_word_ids"])

  def compute_loss(self, features, outputs):
    return self.contrastive_loss(features, outputs)

  def build_metrics(self):
    return [tf_keras.metrics.Mean(name="retrieval_accuracy")]

  def update_metrics(self, metrics, features, outputs):
    # In-batch top-1: each sentence's nearest second view is its own.
    hits = contrastive_loss.retrieval_hits(outputs["view_a"],
                                           outputs["view_b"])
    metrics["retrieval_accuracy"].update_state(tf.cast(hits, tf.float32))

  def dummy_features(self, batch_size: int = 1):
    ids = tf.ones([batch_size, self.tokenization.seq_length], tf.int32)
    return dict(input_word_ids=ids, input_mask=ids,
                input_type_ids=tf.zeros_like(ids))
