"""The CMLM objective of the sentence-encoder task under tf.distribute, and
training runs that resume."""
import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from tests import helpers
from cmlm.training import task as task_lib
from cmlm.training import train


def _uneven_batch():
  """8 examples whose masked-token counts differ between the two halves."""
  features = helpers.fake_batch(batch_size=8, num_predictions=4)
  weights = np.ones([8, 4], np.float32)
  weights[:4, 1:] = 0.0  # replica 0 predicts 4 tokens, replica 1 predicts 16
  return {"cmlm": dict(features, masked_lm_weights=tf.constant(weights))}


def _one_step(strategy, features, initial_weights):
  config = helpers.tiny_task_config()
  with strategy.scope():
    task = task_lib.SentenceEncoderTask(config)
    model = task.build_model()
    model(features)  # builds the projection and MLM heads
    model.set_weights(initial_weights)
    optimizer = tf_keras.optimizers.SGD(0.5)
  dataset = strategy.experimental_distribute_dataset(
      tf.data.Dataset.from_tensors(features))

  @tf.function(autograph=False)  # as the garden's train step
  def step(inputs):
    loss = strategy.run(helpers.train_step,
                        args=(task, inputs, model, optimizer))
    return strategy.reduce(tf.distribute.ReduceOp.MEAN, loss, axis=None)

  loss = step(next(iter(dataset)))
  return float(loss), [w.numpy() for w in model.trainable_weights]


@pytest.mark.slow
def test_mirrored_over_two_cpus_equals_one_device_for_the_same_global_batch(
    two_cpu_strategies):
  one_device, mirrored = two_cpu_strategies
  features = _uneven_batch()
  reference = task_lib.SentenceEncoderTask(helpers.tiny_task_config()).build_model()
  reference(features)
  initial = reference.get_weights()
  one_loss, one_weights = _one_step(one_device, features, initial)
  two_loss, two_weights = _one_step(mirrored, features, initial)
  assert two_loss == pytest.approx(one_loss, rel=1e-5)
  for one, two in zip(one_weights, two_weights):
    np.testing.assert_allclose(two, one, atol=2e-6)
  assert any(not np.allclose(w, i) for w, i in zip(one_weights, initial))


def test_loss_is_normalised_by_the_global_masked_token_count():
  features = _uneven_batch()
  task = task_lib.SentenceEncoderTask(helpers.tiny_task_config())
  outputs = task.build_model()(features)
  per_token = tf.nn.sparse_softmax_cross_entropy_with_logits(
      features["cmlm"]["masked_lm_ids"], outputs["cmlm"]["mlm_logits"])
  weights = features["cmlm"]["masked_lm_weights"]
  expected = tf.reduce_sum(per_token * weights) / tf.reduce_sum(weights)
  assert float(task.build_losses(features, outputs)) == pytest.approx(
      float(expected), rel=1e-6)


@pytest.mark.slow
def test_a_stopped_run_restarts_from_its_saved_step(tmp_path):
  model_dir = str(tmp_path)
  first = train.run(helpers.tiny_run_params(4), model_dir)
  assert first.trainer.first_step_of_run == 0
  assert tf.train.latest_checkpoint(model_dir).endswith("ckpt-4")
  second = train.run(helpers.tiny_run_params(6), model_dir)
  assert second.trainer.first_step_of_run == 4
  assert int(second.trainer.global_step.numpy()) == 6
  assert int(second.trainer.optimizer.iterations.numpy()) == 6
  assert tf.train.latest_checkpoint(model_dir).endswith("ckpt-6")
  assert os.path.exists(os.path.join(model_dir, "params.yaml"))
  summaries = [f for _, _, files in os.walk(model_dir) for f in files
               if f.startswith("events.out.tfevents")]
  assert summaries, "TensorBoard summaries are written"


def test_without_conditioning_it_is_plain_mlm_of_s2_and_trains():
  """condition=false (experiments/cmlm_vs_mlm.py's baseline): s1 has no
  effect on the logits, which are the same head on s2 read alone."""
  from cmlm.objectives import cmlm  # pylint: disable=g-import-not-at-top
  config = helpers.tiny_task_config(objectives={
      "cmlm": cmlm.CmlmObjectiveConfig(condition=False)})
  task = task_lib.SentenceEncoderTask(config)
  model = task.build_model()
  features = helpers.fake_batch()
  other = dict(features, s1_input_word_ids=tf.reverse(
      features["s1_input_word_ids"], [0]))
  logits = model({"cmlm": features})["cmlm"]["mlm_logits"]
  np.testing.assert_allclose(
      model({"cmlm": other})["cmlm"]["mlm_logits"], logits)
  conditioned = task_lib.SentenceEncoderTask(
      helpers.tiny_task_config()).build_model()
  assert not np.allclose(conditioned({"cmlm": features})["cmlm"]["mlm_logits"],
                         conditioned({"cmlm": other})["cmlm"]["mlm_logits"])
  optimizer = tf_keras.optimizers.Adam(1e-2)
  losses = [float(helpers.train_step(task, {"cmlm": features}, model,
                                     optimizer)) for _ in range(5)]
  assert np.isfinite(losses).all() and losses[-1] < losses[0]
