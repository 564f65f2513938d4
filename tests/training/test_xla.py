"""XLA (`runtime.enable_xla`) and TPU readiness, on the CPU.

The training step compiles with `jit_compile=True` and trains as the plain
step does; the training input has the static shapes XLA and TPUs need; the
TPU strategy path takes `--tpu` and fails clearly where there is no TPU.
"""
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from cmlm.training import run_config
from cmlm.training import train
from cmlm.data_pipelines import cmlm_dataloader
from tests import train_worker
from tests import helpers

REPO = helpers.REPO_ROOT


def train_steps(enable_xla, steps=2):
  """Logs and weights after `steps` steps from the same initial weights."""
  tf_keras.utils.set_random_seed(1)
  params = train_worker.experiment(steps)
  params.runtime.enable_xla = enable_xla
  trainer = train_worker.make_trainer(params)
  with trainer.strategy.scope():
    logs = trainer.train(tf.constant(steps))
  return trainer, logs


@pytest.mark.slow
def test_the_train_step_compiles_with_xla_and_trains_as_the_plain_step():
  plain, plain_logs = train_steps(enable_xla=False)
  compiled, compiled_logs = train_steps(enable_xla=True)
  assert compiled.jit_compile and not plain.jit_compile
  batch = next(iter(compiled.train_dataset))
  hlo = compiled._forward_backward.experimental_get_compiler_ir(batch)(  # pylint: disable=protected-access
      stage="hlo")
  assert "HloModule" in hlo
  assert float(compiled_logs["training_loss"]) == pytest.approx(
      float(plain_logs["training_loss"]), rel=1e-5)
  for a, b in zip(compiled.model.weights, plain.model.weights):
    np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-5, err_msg=a.name)


def test_xla_over_several_cpu_devices_of_one_process_is_a_clear_error():
  params = train_worker.experiment(1)
  params.runtime.enable_xla = True
  devices = [d.name for d in tf.config.list_logical_devices("CPU")][:2]
  with pytest.raises(ValueError, match="XLA cannot compile one step for "
                                       "several CPU devices"):
    train_worker.make_trainer(params, tf.distribute.MirroredStrategy(devices))


def test_training_batches_have_static_shapes_for_xla_and_tpus():
  task = train_worker.experiment(1).task
  data = task.objectives.cmlm.train_data
  context = tf.distribute.InputContext(num_input_pipelines=2,
                                       input_pipeline_id=1,
                                       num_replicas_in_sync=2)
  for input_context, batch in ((None, 8), (context, 4)):
    spec = cmlm_dataloader.CmlmDataLoader(
        data, task.tokenization).load(input_context).element_spec
    for name, tensor_spec in spec.items():
      assert tensor_spec.shape.is_fully_defined(), name
      assert tensor_spec.shape[0] == batch, name
    assert spec["masked_lm_positions"].shape[1] == data.max_predictions_per_seq


def test_tpu_flags_set_the_tpu_strategy_and_its_address():
  params = run_config.build_params("cmlm/tiny", strategy="tpu", tpu="local")
  assert params.runtime.distribution_strategy == "tpu"
  assert params.runtime.tpu == "local"


def test_the_tpu_strategy_with_no_tpu_named_or_found_asks_for_one(
    monkeypatch):
  """It said "No TPU found for --tpu=None", naming a flag not given."""
  def no_tpu(**kwargs):
    raise ValueError("Please provide a TPU Name to connect to.")
  monkeypatch.setattr(train.distribute_utils, "get_distribution_strategy",
                      no_tpu)
  params = run_config.build_params("cmlm/tiny", strategy="tpu", quiet=True)
  with pytest.raises(ValueError) as raised:
    train.make_strategy(params)
  assert str(raised.value) == (
      "--strategy=tpu found no TPU on this machine; give --tpu=NAME (a Cloud "
      "TPU's name or grpc:// address) or set runtime.tpu.")


@pytest.mark.slow
def test_the_tpu_strategy_without_a_tpu_fails_in_one_line(tmp_path):
  # In a new process: initialising a TPU system touches global TF state.
  model_dir = tmp_path / "run"
  result = subprocess.run(
      [sys.executable, "-m", "cmlm", "train", "--experiment=cmlm/tiny",
       "--strategy=tpu", "--tpu=local", f"--model_dir={model_dir}"],
      cwd=REPO, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
      capture_output=True, text=True, timeout=180)
  assert result.returncode == 2, result.stderr[-2000:]
  assert "cmlm train: error: No TPU found for --tpu='local'" in result.stderr
  assert not model_dir.exists()
