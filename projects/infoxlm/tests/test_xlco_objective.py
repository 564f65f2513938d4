"""XLCo (xlco_objective.py, InfoXLM section 3.3): the momentum key side,
the queue, the contrasted layer, replicas, resume and skipped batches."""
import shutil

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from cmlm.projects.infoxlm import infoxlm_data
from cmlm.projects.infoxlm import xlco_objective as xlco
from tests import helpers
from cmlm.projects.infoxlm.tests import infoxlm_helpers
from cmlm.training import task as task_lib
from cmlm.training import train


def _task(momentum=0.9, queue_size=24, layer=1, queue_fill="partial",
          **config):
  task_config = helpers.tiny_task_config(objectives={
      "xlco": xlco.XlcoObjectiveConfig(
          momentum=momentum, queue_size=queue_size, layer=layer,
          queue_fill=queue_fill,
          train_data=infoxlm_data.InfoXlmDataConfig(global_batch_size=4),
          **config)})
  task_config.model.encoder.num_layers = 2
  return task_lib.SentenceEncoderTask(task_config)


def _pairs(seed=0):
  """A batch of 4 "translation pairs": s1 as source, s2 as target."""
  features = helpers.fake_batch(seed=seed)
  return {"xlco": {f"{side}_{key}": features[f"{prefix}_{key}"]
                   for side, prefix in (("source", "s1"), ("target", "s2"))
                   for key in xlco.INPUT_KEYS}}


def _step(task, model, optimizer, batch):
  """The trainer's order: forward and backward, update, then the hook."""
  state = model.states["xlco"]
  with tf.GradientTape() as tape:
    outputs = model(batch, training=True)
    loss = task.build_losses(batch, outputs)
  gradients = tape.gradient(loss, model.trainable_variables +
                            state.key_variables)
  count = len(model.trainable_variables)
  optimizer.apply_gradients(zip(gradients[:count],
                                model.trainable_variables))
  model.after_update()
  return outputs["xlco"], gradients[count:]


def _run(params, model_dir, **kwargs):
  """`train.run` from the same initial weights (a fresh process's unseeded
  initialisation differs from run to run)."""
  tf_keras.utils.set_random_seed(1)
  return train.run(params, str(model_dir), **kwargs)


def _values(variables):
  return [v.numpy().copy() for v in variables]


def test_key_side_starts_equal_then_follows_by_momentum_without_gradient():
  task = _task(momentum=0.9)
  model = task.build_model()
  state = model.states["xlco"]
  objective = task.objectives["xlco"]
  pairs = state.paired_with(objective.query_variables(model.encoder,
                                                      model.heads["xlco"]))
  keys = [key for key, _ in pairs]
  query_variables = [query for _, query in pairs]
  assert len(pairs) == len(state.key_variables)
  before = _values(query_variables)
  for key, query in zip(_values(keys), before):
    np.testing.assert_array_equal(key, query)
  trainable = {v.ref() for v in model.trainable_variables}
  assert not any(v.ref() in trainable for v in state.key_variables)
  assert not any(v.trainable for v in state.key_variables + [state.queue])
  optimizer = tf_keras.optimizers.SGD(0.5)
  # The first step fills the queue (an empty queue has no negatives and no
  # loss); the second is the one checked.
  _step(task, model, optimizer, _pairs(0))
  before = _values(query_variables)
  old_keys = _values(keys)
  _, key_gradients = _step(task, model, optimizer, _pairs(1))
  assert all(g is None for g in key_gradients)
  after = _values(query_variables)
  changed = 0
  for key, old_key, old, new in zip(_values(keys), old_keys, before, after):
    np.testing.assert_allclose(key, 0.9 * old_key + 0.1 * new, atol=1e-6)
    changed += not np.allclose(old, new)
  assert changed > 10  # the query side did move


def test_a_run_started_from_another_encoder_keys_with_that_encoder(
    tmp_path):
  source = _task().build_model()
  path = tf.train.Checkpoint(encoder=source.encoder).write(
      str(tmp_path / "start" / "ckpt-1"))
  task = _task()
  task.task_config.init_checkpoint = path
  model = task.build_model()
  task.initialize(model)  # restores the encoder, then `after_initialize`
  objective = task.objectives["xlco"]
  np.testing.assert_array_equal(
      model.encoder.transformer.weights[0].numpy(),
      source.encoder.transformer.weights[0].numpy())
  for key, query in model.states["xlco"].paired_with(
      objective.query_variables(model.encoder, model.heads["xlco"])):
    np.testing.assert_array_equal(key.numpy(), query.numpy())
  # A checkpoint that holds the state (a later XLCo stage) keeps its keys.
  model.states["xlco"].updates.assign(3)
  first_key = model.states["xlco"].key_variables[0]
  first_key.assign(first_key + 2.0)  # keys that are not the query's
  kept = _values(model.states["xlco"].key_variables)
  path = tf.train.Checkpoint(**model.checkpoint_items).write(
      str(tmp_path / "stage" / "ckpt-1"))
  next_task = _task()
  next_task.task_config.init_checkpoint = path
  next_model = next_task.build_model()
  for variable in next_model.encoder.transformer.weights[:1]:
    variable.assign(variable + 1.0)  # differs until restored
  next_task.initialize(next_model)
  for key, value in zip(_values(next_model.states["xlco"].key_variables),
                        kept):
    np.testing.assert_array_equal(key, value)
  assert not np.allclose(kept[0], _values(
      next_model.encoder.transformer.weights[:1])[0])


def test_momentum_zero_makes_the_key_encoder_the_query_encoder():
  task = _task(momentum=0.0)
  model = task.build_model()
  optimizer = tf_keras.optimizers.SGD(0.5)
  for seed in range(2):
    _step(task, model, optimizer, _pairs(seed))
  query = task.objectives["xlco"].query_variables(model.encoder,
                                                  model.heads["xlco"])
  for key, value in model.states["xlco"].paired_with(query):
    np.testing.assert_allclose(key.numpy(), value.numpy(), atol=1e-7)


def test_queue_is_fifo_with_wrap_around_and_never_holds_its_own_keys():
  task = _task(queue_size=12)  # 8 keys a step: the second step wraps
  model = task.build_model()
  optimizer = tf_keras.optimizers.SGD(0.1)
  state = model.states["xlco"]
  enqueued = []
  for seed in range(3):
    outputs, _ = _step(task, model, optimizer, _pairs(seed))
    keys = np.concatenate([outputs["source_key"], outputs["target_key"]])
    # The loss saw the queue as it was before this batch's keys.
    assert not any(np.allclose(key, row, atol=1e-6) for key in keys
                   for row in outputs["queue"].numpy())
    enqueued.append(keys)
  step1, step2, step3 = enqueued
  # Slots: step 1 wrote 0-7, step 2 8-11 then wrapped to 0-3, step 3 4-11.
  expected = np.concatenate([step2[4:], step3])
  np.testing.assert_allclose(state.queue.numpy(), expected, atol=1e-6)
  assert int(state.queue_pointer.numpy()) == 0
  assert int(state.queue_count.numpy()) == 12
  del step1


def test_the_contrasted_tensor_is_the_named_layers_cls_state():
  batch = _pairs()
  for layer in (1, 2):
    task = _task(layer=layer)
    model = task.build_model()
    outputs = model(batch, training=False)["xlco"]
    features = batch["xlco"]
    inputs = {key: tf.concat([features[f"source_{key}"],
                              features[f"target_{key}"]], 0)
              for key in xlco.INPUT_KEYS}
    states = model.encoder(inputs)["encoder_outputs"]
    np.testing.assert_allclose(outputs["layer_state"].numpy(),
                               states[layer - 1][:, 0].numpy(), atol=1e-6)
    other = states[2 - layer][:, 0].numpy()
    assert not np.allclose(outputs["layer_state"].numpy(), other, atol=1e-3)
    np.testing.assert_allclose(
        outputs["source_query"].numpy(),
        model.heads["xlco"](states[layer - 1][:4, 0]).numpy(), atol=1e-6)


def test_hold_off_gives_no_loss_until_the_queue_is_full():
  task = _task(queue_size=16, queue_fill="hold_off")
  model = task.build_model()
  optimizer = tf_keras.optimizers.SGD(0.1)
  losses = []
  for seed in range(3):
    batch = _pairs(seed)
    outputs = model(batch, training=True)
    losses.append(float(task.build_losses(batch, outputs)))
    _step(task, model, optimizer, batch)
  assert losses[0] == 0 and losses[1] == 0 and losses[2] > 0


def test_bad_settings_are_one_clear_error():
  for field, value, message in (
      ("layer", 3, "must name one of the encoder's 2 layers"),
      ("momentum", 1.0, r"momentum must be in \[0, 1\)"),
      ("queue_size", 4, "must hold at least one step's keys"),
      ("pooling", "max", "pooling must be one of cls, mean"),
      ("queue_fill", "noise", "queue_fill must be one of")):
    task = _task(**{field: value})
    data = task.objectives["xlco"].config.train_data
    data.input_path = "x.tsv"
    with pytest.raises(ValueError, match=message):
      task.objectives["xlco"].check_data(data)


@pytest.mark.slow
def test_two_replicas_hold_the_same_queue_of_all_replicas_keys(
    tmp_path, two_cpu_strategies):
  _, mirrored = two_cpu_strategies
  params = infoxlm_helpers.xlco_run_params(tmp_path, train_steps=3,
                                           queue_size=20)
  result = _run(params, tmp_path / "run", strategy=mirrored)
  state = result.model.states["xlco"]
  replicas = [v.numpy() for v in state.queue.values]
  assert len(replicas) == 2
  np.testing.assert_array_equal(replicas[0], replicas[1])
  # 3 steps x 2 sides x global batch 4 = 24 keys through 20 slots (each
  # replica computes 2 x 2 a step; the all-gather enqueues both's).
  assert int(state.queue_pointer.numpy()) == 24 % 20
  assert int(state.queue_count.numpy()) == 20
  assert np.all(np.abs(replicas[0]).sum(axis=1) > 0)
  for key in state.key_variables[:3]:
    values = [v.numpy() for v in key.values]
    np.testing.assert_array_equal(values[0], values[1])


@pytest.fixture(scope="module")
def two_step_run(tmp_path_factory):
  """A real 2-step XLCo run (checkpoint at step 2) and its state's values."""
  tmp_path = tmp_path_factory.mktemp("xlco_two_steps")
  result = _run(infoxlm_helpers.xlco_run_params(tmp_path, train_steps=2),
                tmp_path / "run")
  state = result.model.states["xlco"]
  return tmp_path, dict(queue=state.queue.numpy(),
                        pointer=int(state.queue_pointer.numpy()),
                        keys=_values(state.key_variables))


@pytest.mark.slow
def test_a_resumed_run_continues_with_the_same_queue_and_key_encoder(
    two_step_run, tmp_path):
  data_dir, _ = two_step_run
  uninterrupted = _run(
      infoxlm_helpers.xlco_run_params(data_dir, train_steps=4),
      tmp_path / "uninterrupted")
  # The 2-step run stopped after its checkpoint; the same command, 4 steps.
  shutil.copytree(data_dir / "run", tmp_path / "resumed")
  resumed = _run(infoxlm_helpers.xlco_run_params(data_dir, train_steps=4),
                 tmp_path / "resumed")
  assert resumed.trainer.first_step_of_run == 2
  first, second = (r.model.states["xlco"] for r in (uninterrupted, resumed))
  assert int(second.updates.numpy()) == 4
  np.testing.assert_allclose(second.queue.numpy(), first.queue.numpy(),
                             atol=1e-5)
  assert int(second.queue_pointer.numpy()) == int(
      first.queue_pointer.numpy())
  for a, b in zip(first.key_variables, second.key_variables):
    np.testing.assert_allclose(b.numpy(), a.numpy(), atol=1e-5)


@pytest.mark.slow
def test_a_non_finite_batch_leaves_the_queue_and_key_side_unchanged(
    two_step_run, tmp_path):
  data_dir, clean = two_step_run
  # The same two batches, then two whose loss is NaN: skipped, no hook.
  poisoned = _run(infoxlm_helpers.xlco_run_params(
      data_dir, train_steps=4, poisoned_steps=(3, 4)), tmp_path / "poisoned")
  assert poisoned.trainer.skipped_batches == 2
  state = poisoned.model.states["xlco"]
  assert int(state.updates.numpy()) == 2
  assert int(state.queue_pointer.numpy()) == clean["pointer"] == 2 * 2 * 4
  np.testing.assert_array_equal(state.queue.numpy(), clean["queue"])
  for value, expected in zip(_values(state.key_variables), clean["keys"]):
    np.testing.assert_array_equal(value, expected)


@pytest.mark.slow
def test_sigkill_then_resume_continues_with_the_same_queue_and_key_encoder(
    tmp_path):
  """A `python -m cmlm train` process of an XLCo run is killed (SIGKILL) after
  a few checkpoints; resumed, it ends with the queue, pointer and momentum
  key encoder of a run never interrupted (both start from one ckpt-0)."""
  # pylint: disable=g-import-not-at-top
  import signal
  import time
  from tests import train_worker
  from tests.training import test_preemption
  tf.random.set_seed(None)  # as in the new training process
  params = infoxlm_helpers.xlco_run_params(tmp_path, train_steps=8)
  # The subprocess layers this run's YAML on cmlm/tiny, whose CMLM
  # objective must stay out of the run.
  params.override({
      "task": {"objectives": {"cmlm": {"type": "cmlm", "weight": 0.0}}},
      "trainer": {"steps_per_loop": 1, "checkpoint_interval": 1,
                  "summary_interval": 1, "max_to_keep": 3}})
  killed, uninterrupted = tmp_path / "killed", tmp_path / "uninterrupted"
  train_worker.write_initial_checkpoint(params, str(killed),
                                        str(uninterrupted))
  process = test_preemption.start_training(tmp_path, params, killed)
  while process.poll() is None and test_preemption.latest_step(killed) < 3:
    time.sleep(0.01)
  process.send_signal(signal.SIGKILL)
  output = process.communicate()[0]
  assert process.returncode == -signal.SIGKILL, output[-2000:]
  step = test_preemption.latest_step(killed)
  assert 3 <= step < 8

  reference = train.run(params, str(uninterrupted))
  resumed = train.run(params, str(killed))
  assert resumed.trainer.first_step_of_run == step
  first, second = (r.model.states["xlco"]
                   for r in (reference, resumed))
  assert int(second.updates.numpy()) == int(first.updates.numpy()) == 8
  assert int(second.queue_pointer.numpy()) == int(
      first.queue_pointer.numpy())
  np.testing.assert_allclose(second.queue.numpy(), first.queue.numpy(),
                             atol=1e-5)
  for a, b in zip(first.key_variables, second.key_variables):
    np.testing.assert_allclose(b.numpy(), a.numpy(), atol=1e-5)
