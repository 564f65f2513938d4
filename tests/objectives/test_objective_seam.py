"""The objective seam: named objectives in config, named checkpoint items,
and the hook after each optimizer update (objectives/base.py,
training/task.py, training/trainer.py)."""
import dataclasses
import os

import numpy as np
import pytest
import tensorflow as tf

from cmlm.data_pipelines import cmlm_dataloader
from cmlm.objectives import base
from cmlm.objectives import cmlm
from official.modeling import hyperparams
from tests import helpers
from cmlm.training import checkpoints
from cmlm.training import run_dir
from cmlm.training import task as task_lib
from cmlm.training import train

TRAIN_STEPS = 6


@dataclasses.dataclass
class CountingConfig(cmlm.CmlmObjectiveConfig):
  type: str = "test_counting_cmlm"
  nan_loss_token: int = -1


class UpdateCounter(tf.Module):
  def __init__(self):
    super().__init__(name="update_counter")
    self.updates = tf.Variable(
        0, dtype=tf.int64, trainable=False,
        aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)


@base.register_objective("test_counting_cmlm")
class CountingCmlm(cmlm.CmlmObjective):
  """CMLM whose state counts the updates it saw; a batch whose s1 holds
  `nan_loss_token` has a NaN loss."""
  config_cls = CountingConfig

  def build_state(self, encoder, head):
    return UpdateCounter()

  def compute_loss(self, features, outputs):
    loss = super().compute_loss(features, outputs)
    poisoned = tf.reduce_any(tf.equal(features["s1_input_word_ids"],
                                      self.config.nan_loss_token))
    # tf.cond, not tf.where: the gradient of where's unselected NaN branch
    # would be NaN on every batch.
    return tf.cond(poisoned, lambda: loss * float("nan"), lambda: loss)

  def after_update(self, encoder, head, state):
    state.updates.assign_add(1)


def _counting_params(nan_loss_token):
  params = helpers.tiny_run_params(TRAIN_STEPS)
  cmlm_config = params.task.objectives.cmlm.as_dict()
  cmlm_config.update(type="test_counting_cmlm", nan_loss_token=nan_loss_token)
  cmlm_config["train_data"]["seed"] = 7  # the batches the probe below saw
  params.task.objectives = base.ObjectivesConfig({"counting": cmlm_config})
  params.task.skip_non_finite_batches = True
  return params


def _token_in_some_batches(params, steps):
  """A token in at least one but not every one of the first `steps` batches."""
  data = params.task.objectives.counting.train_data
  dataset = cmlm_dataloader.CmlmDataLoader(data,
                                           params.task.tokenization).load()
  holding = {}
  for index, batch in enumerate(dataset.take(steps)):
    for token in np.unique(batch["s1_input_word_ids"].numpy()):
      holding.setdefault(int(token), set()).add(index)
  token, batches = min(((t, b) for t, b in holding.items() if t > 4),
                       key=lambda item: abs(len(item[1]) - 2))
  assert 0 < len(batches) < steps
  return token, batches


@pytest.mark.slow
def test_the_hook_runs_after_each_finite_update_only(tmp_path):
  token, poisoned = _token_in_some_batches(_counting_params(-1), TRAIN_STEPS)
  result = train.run(_counting_params(token), str(tmp_path))
  counter = result.model.states["counting"]
  updates = int(counter.updates.numpy())
  assert result.trainer.skipped_batches == len(poisoned)
  assert updates == TRAIN_STEPS - len(poisoned)
  assert updates == int(result.trainer.optimizer.iterations.numpy())
  # The state is its own checkpoint item, saved with the count.
  latest = tf.train.latest_checkpoint(str(tmp_path))
  assert {"encoder", "counting_head", "counting_state"} <= (
      checkpoints.item_names(latest))
  reader = tf.train.load_checkpoint(latest)
  assert reader.get_tensor(
      "counting_state/updates/.ATTRIBUTES/VARIABLE_VALUE") == updates


def test_objectives_are_named_typed_and_round_trip_through_params_yaml(
    tmp_path):
  params = helpers.tiny_run_params(2)
  params.override({"task": {"objectives": {
      "aux": {"type": "cmlm", "weight": 0.5, "skip": True},
      "bitext_retrieval": {"weight": 0.2, "margin": 0.1}}}})
  objectives = params.task.objectives
  assert isinstance(objectives.aux, cmlm.CmlmObjectiveConfig)
  assert objectives.aux.skip and objectives.aux.weight == 0.5
  assert objectives.bitext_retrieval.type == "bitext_retrieval"
  assert objectives.bitext_retrieval.margin == 0.1
  hyperparams.save_params_dict_to_yaml(
      params, os.path.join(tmp_path, run_dir.PARAMS_FILE))
  loaded = run_dir.load_params(str(tmp_path))
  assert loaded.as_dict() == params.as_dict()
  assert isinstance(loaded.task.objectives.aux, cmlm.CmlmObjectiveConfig)


def test_unknown_objective_type_or_field_is_one_clear_error():
  params = helpers.tiny_run_params(2)
  with pytest.raises(ValueError, match="Unknown objective type 'no_such_kind'"):
    params.override({"task": {"objectives": {"x": {"type": "no_such_kind"}}}})
  with pytest.raises(KeyError, match="no_such_field"):
    params.override({"task": {"objectives": {"cmlm": {"no_such_field": 1}}}})


def test_weights_select_the_objectives_of_a_run():
  config = helpers.tiny_task_config()
  config.objectives.cmlm.weight = 0.0
  with pytest.raises(ValueError, match="nothing to train"):
    task_lib.build_objectives(config)
  config.objectives.cmlm.weight = -1.0
  with pytest.raises(ValueError, match="must be >= 0"):
    task_lib.build_objectives(config)


def test_total_loss_is_the_weighted_sum_of_the_objectives_losses():
  features = helpers.fake_batch()
  config = helpers.tiny_task_config(objectives={
      "a": cmlm.CmlmObjectiveConfig(weight=0.25),
      "b": cmlm.CmlmObjectiveConfig(weight=2.0)})
  task = task_lib.SentenceEncoderTask(config)
  model = task.build_model()
  outputs = model({"a": features, "b": features})
  total = task.build_losses({"a": features, "b": features}, outputs)
  own = {name: float(task.objectives[name].compute_loss(features,
                                                         outputs[name]))
         for name in ("a", "b")}
  assert float(total) == pytest.approx(0.25 * own["a"] + 2.0 * own["b"],
                                       rel=1e-6)
  # Each objective has its own head: the two losses differ.
  assert own["a"] != pytest.approx(own["b"])
  assert set(model.checkpoint_items) == {"encoder", "a_head", "b_head"}


def test_a_batch_runs_only_the_objectives_whose_features_it_carries():
  config = helpers.tiny_task_config(objectives={
      "a": cmlm.CmlmObjectiveConfig(), "b": cmlm.CmlmObjectiveConfig()})
  task = task_lib.SentenceEncoderTask(config)
  model = task.build_model()
  outputs = model({"b": helpers.fake_batch()})
  assert set(outputs) == {"b"}
