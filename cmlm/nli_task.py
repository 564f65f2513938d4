"""Cross-lingual NLI fine-tuning of a CMLM encoder (paper section 4.3).

A 3-way classifier on [u, v, |u - v|, u * v] with the encoder trainable,
started from a CMLM checkpoint through `task.init_checkpoint`; premise and
hypothesis come in independently drawn languages when the data lists
translations (see `data_pipelines/nli_data.py`).
"""
import dataclasses

import tensorflow as tf
import tf_keras

from data_pipelines import nli_data
from modeling import model_builder
from modeling.nli_head import NliModel
from official.core import base_task
from official.core import config_definitions as cfg
from official.core import task_factory


@dataclasses.dataclass
class NliTaskConfig(cfg.TaskConfig):
  model: model_builder.CmlmModelConfig = dataclasses.field(
      default_factory=model_builder.CmlmModelConfig)
  num_classes: int = 3
  train_data: nli_data.NliDataConfig = dataclasses.field(
      default_factory=nli_data.NliDataConfig)
  validation_data: nli_data.NliDataConfig = dataclasses.field(
      default_factory=nli_data.NliDataConfig)

  def validate_inputs(self, mode: str):
    for data, needed in ((self.train_data, "train" in mode),
                         (self.validation_data, "eval" in mode)):
      if needed:
        nli_data.NliDataLoader(data)  # checks paths and vocabulary


@task_factory.register_task_cls(NliTaskConfig)
class NliTask(base_task.Task):
  """Premise/hypothesis classification through the sentence encoder."""

  def build_model(self) -> tf_keras.Model:
    config = self.task_config
    cmlm = model_builder.build_cmlm_model(
        config.model, seq_length=config.train_data.seq_length)
    return NliModel(cmlm.encoder, config.num_classes,
                    initializer=tf_keras.initializers.TruncatedNormal(
                        stddev=config.model.encoder.initializer_range))

  def build_inputs(self, params, input_context=None):
    return nli_data.NliDataLoader(params).load(input_context)

  def build_losses(self, labels, model_outputs, aux_losses=None) -> tf.Tensor:
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels["label"],
        logits=tf.cast(model_outputs["logits"], tf.float32)))
    if aux_losses:
      loss += tf.add_n(aux_losses)
    return loss

  def build_metrics(self, training=None):
    return [tf_keras.metrics.SparseCategoricalAccuracy(name="nli_accuracy")]

  def process_metrics(self, metrics, labels, model_outputs):
    for metric in metrics:
      metric.update_state(labels["label"], model_outputs["logits"])
