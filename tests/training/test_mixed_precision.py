"""Mixed precision through Model Garden's runtime config.

`runtime.mixed_precision_dtype` sets the Keras policy for the run (and only
for the run); float16 gets a LossScaleOptimizer; the model's variables, the
losses and the exported encoder stay float32.
"""
import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from cmlm.training import train
from cmlm.training import run_dir as checkpoint_lib
from cmlm.export import encoder as encoder_lib
from cmlm.modeling import bitext_loss
from official.core import train_utils
from tests import train_worker

STEPS = 3


def train_steps(precision):
  """A trainer after STEPS steps under `precision`, its loss, a batch's outputs
  and loss."""
  tf_keras.utils.set_random_seed(1)
  params = train_worker.experiment(STEPS)
  params.runtime.mixed_precision_dtype = precision
  with train.mixed_precision(precision):
    trainer = train_worker.make_trainer(params)
    with trainer.strategy.scope():
      logs = trainer.train(tf.constant(STEPS))
    batch = next(iter(trainer.train_dataset))  # {"cmlm": features}
    outputs = trainer.model(batch, training=False)  # {"cmlm": outputs}
    loss = trainer.task.build_losses(batch, outputs)
  return trainer, float(logs["training_loss"]), outputs, loss


@pytest.fixture(scope="module")
def runs():
  return {}


def run(runs, precision):
  if precision not in runs:
    runs[precision] = train_steps(precision)
  return runs[precision]


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["bfloat16", "float16"])
def test_mixed_precision_trains_as_float32_with_float32_losses_and_variables(
    precision, runs):
  float32_loss = run(runs, "float32")[1]
  trainer, loss, outputs, batch_loss = run(runs, precision)
  assert tf_keras.mixed_precision.global_policy().name == "float32"
  assert trainer.model.encoder.dtype_policy.compute_dtype == precision
  assert trainer.model.heads["cmlm"].dtype_policy.compute_dtype == precision
  assert loss == pytest.approx(float32_loss, rel=2e-2)
  # As in Model Garden's MaskedLM, the logits come in the compute dtype; the
  # softmax cross-entropy upcasts them and runs in float32.
  assert outputs["cmlm"]["mlm_logits"].dtype == precision
  assert batch_loss.dtype == tf.float32 and np.isfinite(float(batch_loss))
  assert {w.dtype for w in trainer.model.weights} == {tf.float32}
  is_scaled = isinstance(trainer.optimizer,
                         tf_keras.mixed_precision.LossScaleOptimizer)
  assert is_scaled == (precision == "float16")


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["float32", "bfloat16", "float16"])
def test_the_step_is_traced_once_as_the_optimizer_s_slots_exist_before_it(
    precision, runs):
  """The trainer makes the optimizer's slots (a LossScaleOptimizer's inner
  one's under float16) with the model's variables: the first step makes no
  variable, so `tf.function` does not trace it a second time."""
  trainer = run(runs, precision)[0]
  assert trainer.traced_step.experimental_get_tracing_count() == 1


def test_the_bitext_loss_is_float32_for_half_precision_embeddings():
  source = tf.random.normal([4, 8], dtype=tf.bfloat16)
  target = tf.random.normal([4, 8], dtype=tf.float16)
  assert bitext_loss.additive_margin_loss(source, target).dtype == tf.float32


def test_a_bfloat16_checkpoint_exports_a_float32_encoder(tmp_path, runs):
  trainer = run(runs, "bfloat16")[0]
  train_utils.serialize_config(trainer.config, str(tmp_path))
  trainer.checkpoint.save(str(tmp_path / "ckpt"))
  # What `python -m cmlm export` builds, here or in a new process.
  restored, head = checkpoint_lib.restore_encoder(
      checkpoint_lib.load_params(str(tmp_path)),
      checkpoint_lib.find_checkpoint(str(tmp_path)), with_mlm_head=True)
  encoder = encoder_lib.build_export_encoder(restored, head)
  ids = tf.constant([[2, 100, 200, 3, 0, 0]])
  outputs = encoder(dict(input_word_ids=ids,
                         input_mask=tf.cast(ids > 0, tf.int32),
                         input_type_ids=tf.zeros_like(ids)))
  for value in tf.nest.flatten(outputs):
    assert value.dtype == tf.float32, value.name
  logits = encoder.mlm(dict(input_word_ids=ids,
                            input_mask=tf.cast(ids > 0, tf.int32),
                            input_type_ids=tf.zeros_like(ids),
                            masked_lm_positions=tf.constant([[1, 2]])))
  assert logits["mlm_logits"].dtype == tf.float32
  trained = trainer.model.encoder.weights + trainer.model.heads["cmlm"].weights
  assert len(restored.weights + head.weights) == len(trained)
  for a, b in zip(restored.weights + head.weights, trained):
    np.testing.assert_array_equal(a.numpy(), b.numpy())
