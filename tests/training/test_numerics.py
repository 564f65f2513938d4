"""Non-finite losses and gradients in real training runs.

A test-only CMLM objective poisons the batches whose s1 holds a chosen token: one
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

from cmlm.data_pipelines import cmlm_dataloader
from cmlm.objectives import base
from cmlm.objectives import cmlm
from tests import train_worker
from cmlm.training import fault_tolerance
from cmlm.training import train

TRAIN_STEPS = 8


@dataclasses.dataclass
class PoisonedConfig(cmlm.CmlmObjectiveConfig):
  type: str = "test_poisoned_cmlm"
  nan_loss_token: int = -1
  nan_gradient_token: int = -1


@base.register_objective("test_poisoned_cmlm")
class PoisonedCmlm(cmlm.CmlmObjective):
  """CMLM, with NaN in batches whose s1 holds a poisoned token."""
  config_cls = PoisonedConfig

  def compute_loss(self, features, outputs):
    loss = super().compute_loss(features, outputs)
    s1 = features["s1_input_word_ids"]
    holds = lambda token: tf.reduce_any(tf.equal(s1, token))
    loss = tf.cond(holds(self.config.nan_loss_token),
                   lambda: loss * float("nan"), lambda: loss)
    # sqrt(0 * x) is 0, its gradient 0 * inf = NaN: a finite loss whose
    # gradients are not.
    zero = tf.sqrt(0.0 * tf.reduce_sum(outputs["mlm_logits"]))
    return tf.cond(holds(self.config.nan_gradient_token),
                   lambda: loss + tf.cast(zero, loss.dtype), lambda: loss)


def batches_holding(data_config, tokenization, steps):
  """{token: [indices of the first `steps` batches whose s1 holds it]}."""
  found = {}
  dataset = cmlm_dataloader.CmlmDataLoader(data_config, tokenization).load()
  for index, batch in enumerate(dataset.take(steps)):
    for token in np.unique(batch["s1_input_word_ids"].numpy()):
      found.setdefault(int(token), []).append(index)
  return found


@pytest.fixture(scope="module")
def poisoned():
  """A config poisoning batch 4 (step 5) by loss and a later one by gradient."""
  params = train_worker.experiment(TRAIN_STEPS)
  params.override({"trainer": {"checkpoint_interval": 2}})
  found = batches_holding(params.task.objectives.cmlm.train_data,
                          params.task.tokenization, TRAIN_STEPS)
  first_at = lambda index: [t for t, batches in sorted(found.items())
                            if t > 4 and batches[0] == index]
  cmlm_config = params.task.objectives.cmlm.as_dict()
  cmlm_config.update(type="test_poisoned_cmlm",
                     nan_loss_token=first_at(4)[0],
                     nan_gradient_token=first_at(6)[0])
  params.task.objectives = base.ObjectivesConfig({"cmlm": cmlm_config})
  objective = params.task.objectives.cmlm
  poisoned_batches = set(found[objective.nan_loss_token] +
                         found[objective.nan_gradient_token])
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
