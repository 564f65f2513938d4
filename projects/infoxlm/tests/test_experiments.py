"""The registered InfoXLM experiments (projects/infoxlm/experiments.py)."""
import os

from cmlm.projects.infoxlm import experiments
from cmlm.projects.infoxlm import registry_imports  # noqa: F401  (registers the project)
from tests import helpers
from official.core import exp_factory


def test_base_is_the_papers_recipe():
  params = exp_factory.get_exp_config("infoxlm/base")
  objectives = params.task.objectives
  assert set(objectives.names()) == {"mmlm", "tlm", "xlco"}
  assert all(getattr(objectives, n).weight == 1 for n in objectives.names())
  xlco = objectives.xlco
  assert (xlco.layer, xlco.momentum, xlco.queue_size, xlco.pooling) == (
      8, 0.999, 131_072, "cls")
  assert xlco.train_data.mixup
  assert objectives.mmlm.train_data.sampling_exponent == 0.7
  assert objectives.mmlm.train_data.global_batch_size == 2048
  encoder = params.task.model.encoder
  assert (encoder.num_layers, encoder.hidden_size) == (12, 768)
  assert params.trainer.train_steps == 150_000
  optimizer = params.trainer.optimizer_config
  assert optimizer.learning_rate.polynomial.initial_learning_rate == 2e-4
  assert optimizer.warmup.linear.warmup_steps == 10_000
  assert optimizer.optimizer.adamw.beta_2 == 0.98


def test_base_clips_gradients_to_global_norm_one():
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from official.modeling.optimization import optimizer_factory  # pylint: disable=g-import-not-at-top
  config = exp_factory.get_exp_config("infoxlm/base").trainer.optimizer_config
  assert config.optimizer.adamw.gradient_clip_norm == 1.0  # table 10
  factory = optimizer_factory.OptimizerFactory(config)
  optimizer = factory.build_optimizer(factory.build_learning_rate())
  variable = tf.Variable([0.0, 0.0])
  optimizer.apply_gradients([(tf.constant([60.0, 80.0]), variable)])
  # Adam's second moment holds the clipped gradient (norm 100 -> 1).
  second_moment = optimizer.get_slot(variable, "v").numpy()
  np.testing.assert_allclose(second_moment, (1 - 0.98) * np.array(
      [0.6, 0.8]) ** 2, rtol=1e-4)


def _paths(monolingual, bitext):
  return ([part.split("=", 1)[1] for part in monolingual.split(",")]
          + [path for part in bitext.split(",") for path in part.split("|")])


def test_tiny_reads_its_data_under_source_data():
  """`infoxlm/tiny` names no folder outside the working directory: its data
  is under `source_data/` (README.md's Data), and the same layout in the
  developers' copy holds every file."""
  params = exp_factory.get_exp_config("infoxlm/tiny")
  objectives = params.task.objectives
  for path in _paths(objectives.mmlm.train_data.input_path,
                     objectives.tlm.train_data.input_path):
    assert path.startswith(experiments.SOURCE_DATA + "/"), path
  if os.path.isdir(helpers.SHARED_DATA):
    for path in _paths(experiments.tiny_monolingual_path(helpers.SHARED_DATA),
                       experiments.tiny_bitext_path(helpers.SHARED_DATA)):
      assert os.path.exists(path), path
  assert objectives.xlco.layer < params.task.model.encoder.num_layers
  assert objectives.xlco.queue_size >= (
      2 * objectives.xlco.train_data.global_batch_size)
