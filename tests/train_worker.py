"""Tiny deterministic training for the scale-out and fault tests.

As a script (`python tests/train_worker.py`), one training process of the
multi-worker test: trains a tiny CMLM with `training.train.run` under the
strategy of `--strategy` (`multi_worker_mirrored` reads `TF_CONFIG`) and
writes the losses it saw to `--result` as JSON.

Test-only input path: `tf.distribute` gives each worker its own input
pipeline, whose batches cannot equal a single process's global batch. Here
every worker builds the full global batch of the real, seeded pipeline and
keeps its slice of it, so the 2-worker run and a 1-process run see the same
global batches and must reach the same loss.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402

from cmlm.data_pipelines import cmlm_dataloader  # noqa: E402
from cmlm.experiments import cmlm_experiments  # noqa: E402
from official.core import exp_factory  # noqa: E402
from official.core import task_factory  # noqa: E402
from official.core import train_utils  # noqa: E402
from cmlm.training import task as task_lib  # noqa: E402
from cmlm.training import train  # noqa: E402
from cmlm.training.trainer import SentenceEncoderTrainer  # noqa: E402


def build_all_variables(model):
  """Calls `model` once on a dummy batch of every objective, so that all its
  variables exist."""
  model({name: objective.dummy_features()
         for name, objective in model.objectives.items()})
  return model


def write_initial_checkpoint(params, *model_dirs: str):
  """Writes the same random initial weights as `ckpt-0` in each model_dir, so
  that runs in different processes start from the same weights (a training
  run resumes from them; `task.init_checkpoint` would miss the variables
  that the model makes at its first call)."""
  model = build_all_variables(
      task_lib.SentenceEncoderTask(params.task).build_model())
  checkpoint = tf.train.Checkpoint(model=model, **model.checkpoint_items)
  for model_dir in model_dirs:
    tf.train.CheckpointManager(checkpoint, model_dir, max_to_keep=1).save(
        checkpoint_number=0)


class GlobalBatchSliceConfig(task_lib.SentenceEncoderTaskConfig):
  """The task config whose input pipelines slice one global batch."""


@task_factory.register_task_cls(GlobalBatchSliceConfig)
class GlobalBatchSliceTask(task_lib.SentenceEncoderTask):
  """Each input pipeline keeps its slice of the whole, seeded global batch
  of the CMLM objective."""

  def build_model(self):
    """The model with every variable made now, before later random draws
    (which differ between strategies) could change the initial values."""
    return build_all_variables(super().build_model())

  def build_inputs(self, params, input_context=None):
    if not params.is_training:
      return super().build_inputs(params, input_context)
    data = self.task_config.objectives.cmlm.train_data
    dataset = cmlm_dataloader.CmlmDataLoader(
        data, self.task_config.tokenization).load(None)
    if input_context and input_context.num_input_pipelines > 1:
      size = data.global_batch_size // input_context.num_input_pipelines
      start = input_context.input_pipeline_id * size
      dataset = dataset.map(lambda features: {
          key: value[start:start + size] for key, value in features.items()})
    return dataset.map(lambda features: {"cmlm": features})


def experiment(train_steps: int, global_batch_size: int = 8):
  """A tiny, deterministic experiment (no dropout, seeded data)."""
  params = exp_factory.get_exp_config("cmlm/tiny")
  vocab_size = cmlm_experiments.vocab_size_of(cmlm_experiments.EMBEDDED_VOCAB)
  params.override({
      "task": {"model": {"encoder": {
          "vocab_size": vocab_size, "hidden_size": 16, "num_layers": 1,
          "num_attention_heads": 2, "intermediate_size": 32,
          "dropout_rate": 0.0, "attention_dropout_rate": 0.0}},
               "tokenization": {"seq_length": 16},
               "objectives": {"cmlm": {"train_data": {
                   "global_batch_size": global_batch_size,
                   "max_predictions_per_seq": 5, "seed": 3}}}},
      "trainer": {"train_steps": train_steps, "steps_per_loop": 2,
                  "summary_interval": 2, "checkpoint_interval": train_steps,
                  # Plain SGD: Adam's first steps (~lr * sign(gradient)) would
                  # turn rounding noise in tiny gradients into lr-sized steps.
                  "optimizer_config": {
                      "optimizer": {"type": "sgd"},
                      "learning_rate": {"type": "constant",
                                        "constant": {"learning_rate": 1.0}},
                      "warmup": {"type": None}}}})
  return params


def make_trainer(params, strategy=None) -> SentenceEncoderTrainer:
  """The run's `SentenceEncoderTrainer` (one CPU by default), without orbit's loop."""
  strategy = strategy or tf.distribute.OneDeviceStrategy("/cpu:0")
  with strategy.scope():
    task = task_factory.get_task(params.task)
    return train_utils.create_trainer(params, task, train=True,
                                      evaluate=False, trainer_cls=SentenceEncoderTrainer)


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--model_dir", required=True)
  parser.add_argument("--result", required=True)
  parser.add_argument("--strategy", default="one_device")
  parser.add_argument("--train_steps", type=int, default=4)
  args = parser.parse_args()
  tf_keras.utils.set_random_seed(1)  # the same initial weights everywhere
  params = experiment(args.train_steps)
  task = GlobalBatchSliceConfig()
  task.override(params.task.as_dict())
  params.task = task
  params.runtime.distribution_strategy = args.strategy
  result = train.run(params, args.model_dir)
  strategy = result.trainer.strategy
  with open(args.result, "w", encoding="utf-8") as f:
    json.dump(dict(first_loss=result.progress.first_loss,
                   last_loss=result.progress.last_loss,
                   step=int(result.trainer.global_step.numpy()),
                   replicas=strategy.num_replicas_in_sync), f)


if __name__ == "__main__":
  main()
