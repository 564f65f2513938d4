"""CMLM + bitext retrieval multitask training (paper section 4.2).

L = cmlm_weight * L_cmlm + bitext_weight * L_br in Model Garden's one train
step (`base_task.Task.train_step`); the stages of section 4.2 are configs of
this task run one after the other, a later stage starting from the earlier
one's checkpoint through `task.init_checkpoint`:
  S1  CMLM + BR from the start             (cmlm_weight 1, bitext_weight 0.2)
  S2  CMLM, then BR alone                  (stage 2: cmlm_weight 0)
  S3  CMLM, then CMLM + BR (the paper's pick)
`init_checkpoint` may also point at any encoder checkpoint of ours (e.g. an
imported BERT: the paper's f-mBERT).
"""
import dataclasses

import tensorflow as tf
import tf_keras

from cmlm import cmlm_task
from data_pipelines import bitext_dataloader
from data_pipelines import cmlm_dataloader
from data_pipelines import vocabulary
from modeling import bitext_loss
from modeling.multitask_model import CmlmBitextModel
from official.core import task_factory


@dataclasses.dataclass
class CmlmBitextTaskConfig(cmlm_task.CmlmTaskConfig):
  """CMLM task config + translation pairs and the loss weights."""
  bitext_data: bitext_dataloader.BitextDataConfig = dataclasses.field(
      default_factory=bitext_dataloader.BitextDataConfig)
  cmlm_weight: float = 1.0
  bitext_weight: float = 0.2  # alpha of section 4.2
  margin: float = 0.3  # m, section 4.4
  logit_scale: float = 10.0
  normalize_embeddings: bool = True

  def validate_inputs(self, mode: str):
    if "train" in mode and self.cmlm_weight > 0:
      cmlm_dataloader.validate_config(self.train_data)
    if "train" in mode and self.bitext_weight > 0:
      bitext_dataloader.validate_config(self.bitext_data)
    if "train" in mode and self.cmlm_weight > 0 and self.bitext_weight > 0:
      _check_same_tokenization(self.train_data, self.bitext_data)
    if "eval" in mode:
      cmlm_dataloader.validate_config(self.validation_data)


def _check_same_tokenization(cmlm_data, bitext_data) -> None:
  """One encoder, one embedding table: both objectives tokenize alike."""
  for field in ("lower_case", "text_normalization"):
    ours, theirs = getattr(bitext_data, field), getattr(cmlm_data, field)
    if ours != theirs:
      raise ValueError(f"task.bitext_data.{field} is {ours!r} but "
                       f"task.train_data.{field} is {theirs!r}; both feed "
                       "one encoder and must tokenize alike.")
  if (cmlm_data.vocab_file != bitext_data.vocab_file and
      vocabulary.load_vocab(cmlm_data.vocab_file) !=
      vocabulary.load_vocab(bitext_data.vocab_file)):
    raise ValueError(f"task.bitext_data.vocab_file {bitext_data.vocab_file} "
                     "is not the vocabulary of task.train_data.vocab_file "
                     f"{cmlm_data.vocab_file}; both feed one embedding table.")


@task_factory.register_task_cls(CmlmBitextTaskConfig)
class CmlmBitextTask(cmlm_task.CmlmTask):
  """Conditional MLM and additive-margin bitext retrieval, weighted."""

  def validate(self):
    config = self.task_config
    if config.cmlm_weight < 0 or config.bitext_weight < 0:
      raise ValueError("task.cmlm_weight and task.bitext_weight must be >= 0.")
    if config.cmlm_weight == 0 and config.bitext_weight == 0:
      raise ValueError("task.cmlm_weight and task.bitext_weight are both 0: "
                       "nothing to train.")

  def build_model(self) -> tf_keras.Model:
    self.validate()
    return CmlmBitextModel(super().build_model())

  def build_inputs(self, params, input_context=None):
    """Training batches carry the features of every loss whose weight > 0."""
    config = self.task_config
    if not params.is_training:
      return super().build_inputs(params, input_context)
    datasets = []
    if config.cmlm_weight > 0:
      datasets.append(super().build_inputs(params, input_context))
    if config.bitext_weight > 0:
      datasets.append(bitext_dataloader.build_bitext_dataset(
          config.bitext_data, input_context))
    if len(datasets) == 1:
      return datasets[0]
    return tf.data.Dataset.zip(tuple(datasets)).map(
        lambda cmlm, bitext: {**cmlm, **bitext})

  def build_losses(self, labels, model_outputs, aux_losses=None) -> tf.Tensor:
    config = self.task_config
    loss = tf.constant(0.0)
    if config.cmlm_weight > 0 and "mlm_logits" in model_outputs:
      loss += config.cmlm_weight * super().build_losses(labels, model_outputs)
    if config.bitext_weight > 0 and "source_embedding" in model_outputs:
      loss += config.bitext_weight * (
          bitext_loss.cross_replica_additive_margin_loss(
              model_outputs["source_embedding"],
              model_outputs["target_embedding"], margin=config.margin,
              scale=config.logit_scale,
              normalize=config.normalize_embeddings))
    if aux_losses:
      loss += tf.add_n(aux_losses)
    return loss

  def build_metrics(self, training=None):
    metrics = super().build_metrics(training)
    if self.task_config.bitext_weight > 0:
      metrics.append(tf_keras.metrics.Mean(name="bitext_accuracy"))
    return metrics

  def process_metrics(self, metrics, labels, model_outputs):
    if "mlm_logits" in model_outputs:
      super().process_metrics(metrics, labels, model_outputs)
    if "source_embedding" not in model_outputs:
      return
    for metric in metrics:
      if metric.name == "bitext_accuracy":
        # In-batch top-1 retrieval of each source's translation.
        scores = tf.matmul(model_outputs["source_embedding"],
                           model_outputs["target_embedding"],
                           transpose_b=True)
        hits = tf.equal(tf.argmax(scores, axis=1, output_type=tf.int32),
                        tf.range(tf.shape(scores)[0]))
        metric.update_state(tf.cast(hits, tf.float32))
