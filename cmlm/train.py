"""`python -m cmlm train`: Model Garden's train_lib + orbit, one strategy scope.

Takes Model Garden's flags (`--experiment`, `--config_file`,
`--params_override`, `--mode`, `--model_dir`, `--tpu`) and `--strategy`
(one_device | mirrored | multi_worker_mirrored | tpu). Checkpoints and
TensorBoard summaries (loss, masked_lm_accuracy, learning_rate,
examples_per_second) go to `--model_dir`; a run started again in the same
`--model_dir` resumes from its latest checkpoint.
"""
import dataclasses
import time
from typing import Optional

from absl import logging
import tensorflow as tf
import tf_keras

from cmlm.trainer import CmlmTrainer
from experiments import cmlm_experiments  # noqa: F401  (registers the experiments)
from official.common import distribute_utils
from official.core import task_factory
from official.core import train_lib
from official.core import train_utils
from official.modeling import performance

STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")


class ProgressReporter:
  """An orbit train action printing step, loss, accuracy, speed and ETA."""

  def __init__(self, total_steps: int, global_step: tf.Variable):
    self._total = total_steps
    self._global_step = global_step
    self._last = None  # (time, step) of the previous report
    self.first_loss = None  # mean training loss of the first loop
    self.last_loss = None   # ... and of the latest one

  def __call__(self, output):
    now, step = time.perf_counter(), int(self._global_step.numpy())
    fields = [f"step {step}/{self._total} ({100 * step / self._total:.0f}%)"]
    if "training_loss" in output:
      self.last_loss = float(output["training_loss"])
      if self.first_loss is None:
        self.first_loss = self.last_loss
    for key, label in (("training_loss", "loss"),
                       ("masked_lm_accuracy", "mlm acc"),
                       ("bitext_accuracy", "bitext acc"),
                       ("nli_accuracy", "nli acc"),
                       ("examples_per_second", "ex/s"),
                       ("learning_rate", "lr")):
      if key in output:
        fields.append(f"{label} {float(output[key]):.4g}")
    if self._last is not None and step > self._last[1]:
      seconds_per_step = (now - self._last[0]) / (step - self._last[1])
      eta = seconds_per_step * max(self._total - step, 0)
      fields.append(f"ETA {eta // 60:.0f}m{eta % 60:02.0f}s")
    self._last = (now, step)
    print(" | ".join(fields), flush=True)


def parse_params(flags_obj):
  """The experiment config from flags, with `--strategy` applied."""
  strategy = getattr(flags_obj, "strategy", None)
  if strategy:
    if strategy not in STRATEGIES:
      raise ValueError(f"--strategy must be one of {', '.join(STRATEGIES)}, "
                       f"got {strategy!r}.")
    override = f"runtime.distribution_strategy={strategy}"
    flags_obj.params_override = ",".join(
        p for p in (flags_obj.params_override, override) if p)
  return train_utils.parse_configuration(flags_obj, print_return=False)


def make_strategy(params):
  runtime = params.runtime
  return distribute_utils.get_distribution_strategy(
      distribution_strategy=runtime.distribution_strategy,
      all_reduce_alg=runtime.all_reduce_alg,
      num_gpus=runtime.num_gpus,
      tpu_address=runtime.tpu)


@dataclasses.dataclass
class TrainResult:
  model: tf_keras.Model
  trainer: CmlmTrainer
  progress: Optional[ProgressReporter]


def run(params, model_dir: str, mode: str = "train",
        strategy=None) -> TrainResult:
  """Trains (and/or evaluates) `params` in `model_dir`."""
  if not model_dir:
    raise ValueError("--model_dir is required: checkpoints and summaries go "
                     "there, and a run resumes from it.")
  task_config = params.task
  task_config.validate_inputs(mode)
  if params.runtime.mixed_precision_dtype:
    performance.set_mixed_precision_policy(
        params.runtime.mixed_precision_dtype)
  strategy = strategy or make_strategy(params)
  with strategy.scope():
    task = task_factory.get_task(task_config, logging_dir=model_dir)
    trainer = train_utils.create_trainer(
        params, task, train="train" in mode, evaluate="eval" in mode,
        trainer_cls=CmlmTrainer)
  train_utils.serialize_config(params, model_dir)
  progress = None
  if "train" in mode:
    progress = ProgressReporter(params.trainer.train_steps,
                                trainer.global_step)
  model, _ = train_lib.run_experiment(
      distribution_strategy=strategy, task=task, mode=mode, params=params,
      model_dir=model_dir, trainer=trainer,
      train_actions=[progress] if progress else None)
  return TrainResult(model, trainer, progress)


def main(flags_obj):
  params = parse_params(flags_obj)
  logging.info("Experiment %s, strategy %s, model_dir %s",
               flags_obj.experiment, params.runtime.distribution_strategy,
               flags_obj.model_dir)
  run(params, flags_obj.model_dir, flags_obj.mode or "train")
  print(f"Checkpoints and TensorBoard summaries are in {flags_obj.model_dir}")
