"""Non-finite losses and gradients in real training runs.

A test-only task poisons the batches whose s1 holds a chosen token: one
token makes the loss NaN (and with it every gradient), another leaves the
loss finite but makes the gradients NaN. By default training stops at the
first such step, naming it, with the checkpoint before it as the latest;
with `task.skip_non_finite_batches` exactly those batches are skipped.
"""
import copy
import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from cmlm import cmlm_task
from cmlm import fault_tolerance
from cmlm import train
from data_pipelines import cmlm_dataloader
from official.core import task_factory
from tests import train_worker

TRAIN_STEPS = 8


@dataclasses.dataclass
class PoisonedConfig(cmlm_task.CmlmTaskConfig):
  nan_loss_token: int = -1
  nan_gradient_token: int = -1


@task_factory.register_task_cls(PoisonedConfig)
class PoisonedTask(cmlm_task.CmlmTask):
  """The CMLM task, with NaN in batches whose s1 holds a poisoned token."""

  def build_losses(self, labels, model_outputs, aux_losses=None):
    loss = super().build_losses(labels, model_outputs, aux_losses)
    s1 = labels["s1_input_word_ids"]
    holds = lambda token: tf.reduce_any(tf.equal(s1, token))
    loss = tf.cond(holds(self.task_config.nan_loss_token),
                   lambda: loss * float("nan"), lambda: loss)
    # sqrt(0 * x) is 0, its gradient 0 * inf = NaN: a finite loss whose
    # gradients are not.
    zero = tf.sqrt(0.0 * tf.reduce_sum(model_outputs["mlm_logits"]))
    return tf.cond(holds(self.task_config.nan_gradient_token),
                   lambda: loss + tf.cast(zero, loss.dtype), lambda: loss)


def batches_holding(data_config, steps):
  """{token: [indices of the first `steps` batches whose s1 holds it]}."""
  found = {}
  dataset = cmlm_dataloader.CmlmDataLoader(data_config).load()
  for index, batch in enumerate(dataset.take(steps)):
    for token in np.unique(batch["s1_input_word_ids"].numpy()):
      found.setdefault(int(token), []).append(index)
  return found


@pytest.fixture(scope="module")
def poisoned():
  """A config poisoning batch 4 (step 5) by loss and a later one by gradient."""
  params = train_worker.experiment(TRAIN_STEPS)
  params.override({"trainer": {"checkpoint_interval": 2}})
  found = batches_holding(params.task.train_data, TRAIN_STEPS)
  first_at = lambda index: [t for t, batches in sorted(found.items())
                            if t > 4 and batches[0] == index]
  task = PoisonedConfig(nan_loss_token=first_at(4)[0],
                        nan_gradient_token=first_at(6)[0])
  task.override(params.task.as_dict())
  params.task = task
  poisoned_batches = set(found[task.nan_loss_token] +
                         found[task.nan_gradient_token])
  return params, poisoned_batches


@pytest.mark.slow
def test_a_non_finite_step_stops_training_and_keeps_the_last_good_checkpoint(
    tmp_path, poisoned):
  params, _ = poisoned
  with pytest.raises(fault_tolerance.NonFiniteTrainingError,
                     match="not finite at step 5 .*latest checkpoint is the "
                           "last good one") as stopped:
    train.run(params, str(tmp_path))
  assert stopped.value.step == 5
  latest = tf.train.latest_checkpoint(str(tmp_path))
  assert latest.endswith("ckpt-4")
  reader = tf.train.load_checkpoint(latest)
  for name, dtype in reader.get_variable_to_dtype_map().items():
    if dtype.is_floating:
      assert np.isfinite(reader.get_tensor(name)).all(), name


@pytest.mark.slow
def test_skipping_leaves_out_exactly_the_poisoned_batches(tmp_path, poisoned):
  params, poisoned_batches = poisoned
  params = copy.deepcopy(params)
  params.task.skip_non_finite_batches = True
  result = train.run(params, str(tmp_path))
  assert result.trainer.skipped_batches == len(poisoned_batches) >= 2
  trainer = result.trainer
  assert int(trainer.global_step.numpy()) == TRAIN_STEPS
  assert int(trainer.optimizer.iterations.numpy()) == (
      TRAIN_STEPS - len(poisoned_batches))
  assert np.isfinite(result.progress.last_loss)
  for weight in result.model.weights:
    assert np.isfinite(weight.numpy()).all(), weight.name
  assert tf.train.latest_checkpoint(str(tmp_path)).endswith(
      f"ckpt-{TRAIN_STEPS}")
