"""A run's input pipeline runs without tf.data's autotuning model
(training/task.without_autotuning_model): releasing an iterator whose model
thread runs waits, holding the GIL, for that thread's sleep, which grows to a
minute; a process that went on after training stopped dead when the run's
iterator was collected. `benchmarks/input_release.py` measures the wait."""
import tensorflow as tf

from cmlm.objectives import base as objective_base
from cmlm.training import task as task_lib
from cmlm.training import train
from tests import helpers


def test_training_and_validation_inputs_run_without_the_autotuning_model():
  params = helpers.tiny_run_params()
  task = task_lib.SentenceEncoderTask(params.task)
  assert objective_base.has_data(
      params.task.objectives.cmlm.validation_data)  # both splits are built
  for split in (params.task.train_data, params.task.validation_data):
    dataset = task.build_inputs(split)
    assert dataset.options().autotune.enabled is False
  # What the options leave alone: the pipelines' own parallelism.
  assert tf.data.Options().autotune.enabled is not False


def test_the_trainer_s_input_keeps_it_off_beside_its_checkpoint_options(
    tmp_path):
  """The trainer's dataset (made with the options that keep its iterator
  in the checkpoint) still runs without the model."""
  result = train.run(helpers.tiny_run_params(2), str(tmp_path / "run"))
  options = result.trainer.train_dataset.options()
  assert options.autotune.enabled is False
  assert options.experimental_external_state_policy == (
      tf.data.experimental.ExternalStatePolicy.IGNORE)
