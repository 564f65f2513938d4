"""The CMLM Model Garden task: data, loss and metrics (paper sections 2-3).

The train step is Model Garden's own (`base_task.Task.train_step`); this task
only says what the model, inputs, loss and metrics are. The loss is
normalised by the masked-token count of the *global* batch, so replicas add up
to exactly the loss (and gradient) one device would compute on the whole batch.
"""
import dataclasses

from absl import logging
import tensorflow as tf
import tf_keras

from data_pipelines import cmlm_dataloader
from modeling import losses
from modeling import model_builder
from official.core import base_task
from official.core import config_definitions as cfg
from official.core import task_factory


@dataclasses.dataclass
class CmlmTaskConfig(cfg.TaskConfig):
  """A CMLM pretraining task: a model, training and validation data.

  `skip_non_finite_batches`: a step whose loss or gradient is not finite is
  skipped and counted, instead of stopping training (see cmlm/trainer.py).
  """
  model: model_builder.CmlmModelConfig = dataclasses.field(
      default_factory=model_builder.CmlmModelConfig)
  train_data: cmlm_dataloader.CmlmDataConfig = dataclasses.field(
      default_factory=cmlm_dataloader.CmlmDataConfig)
  validation_data: cmlm_dataloader.CmlmDataConfig = dataclasses.field(
      default_factory=cmlm_dataloader.CmlmDataConfig)
  skip_non_finite_batches: bool = False

  def validate_inputs(self, mode: str):
    """Checks the data a `mode` ("train", "eval", ...) reads, before a run."""
    if "train" in mode:
      cmlm_dataloader.validate_config(self.train_data)
    if "eval" in mode:
      cmlm_dataloader.validate_config(self.validation_data)


def global_batch_sum(value):
  """Sums `value` over all replicas; returns (sum, number of replicas)."""
  context = tf.distribute.get_replica_context()
  if context is None:  # cross-replica context: this batch is the whole batch
    return value, 1
  return (context.all_reduce(tf.distribute.ReduceOp.SUM, value),
          context.num_replicas_in_sync)


@task_factory.register_task_cls(CmlmTaskConfig)
class CmlmTask(base_task.Task):
  """Conditional masked language modeling of s2 given s1's sentence vector."""

  def build_model(self) -> tf_keras.Model:
    config = self.task_config
    check_vocab_matches_encoder(config.train_data.vocab_file,
                                config.model.encoder.vocab_size)
    return model_builder.build_cmlm_model(
        config.model, seq_length=config.train_data.seq_length)

  def build_inputs(self, params, input_context=None):
    loader = cmlm_dataloader.CmlmDataLoader(params)
    dataset = loader.load(input_context)
    if loader.corpus_stats is not None:
      # Shown on the console: how much of the corpus became sentence pairs
      # (single-sentence documents are skipped and counted, not an error).
      role = "training" if params.is_training else "validation"
      print(f"CMLM {role} data ({params.input_path or params.tfds_name}, "
            f"split {params.split!r}): {loader.corpus_stats}", flush=True)
    return dataset

  def build_losses(self, labels, model_outputs, aux_losses=None) -> tf.Tensor:
    weights = tf.cast(labels["masked_lm_weights"], tf.float32)
    global_weight, num_replicas = global_batch_sum(tf.reduce_sum(weights))
    # Model Garden's step divides each replica's loss by the replica count
    # and sums gradients, so each replica reports num_replicas times its share.
    loss = losses.conditional_mlm_loss(
        labels["masked_lm_ids"], model_outputs["mlm_logits"], weights,
        normalizer=global_weight / num_replicas)
    if aux_losses:
      loss += tf.add_n(aux_losses)
    return loss

  def build_metrics(self, training=None):
    del training
    return [tf_keras.metrics.SparseCategoricalAccuracy(
        name="masked_lm_accuracy")]

  def process_metrics(self, metrics, labels, model_outputs):
    for metric in metrics:
      if metric.name == "masked_lm_accuracy":
        metric.update_state(labels["masked_lm_ids"],
                            model_outputs["mlm_logits"],
                            labels["masked_lm_weights"])


def check_vocab_matches_encoder(vocab_file: str, vocab_size: int):
  """Fails early when the vocabulary file and the embedding table disagree."""
  if not vocab_file:
    return
  if not tf.io.gfile.exists(vocab_file):
    raise FileNotFoundError(f"Vocabulary file {vocab_file} does not exist.")
  with tf.io.gfile.GFile(vocab_file) as f:
    lines = sum(1 for _ in f)
  if lines != vocab_size:
    raise ValueError(
        f"The vocabulary {vocab_file} has {lines} tokens but "
        f"task.model.encoder.vocab_size is {vocab_size}; make them equal.")
  logging.info("Vocabulary %s: %d tokens.", vocab_file, lines)
