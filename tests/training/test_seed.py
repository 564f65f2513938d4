"""`task.seed`: one seed fixes a run's initialisation, data order and masks,
and gives two arms that differ in an objective the same start."""
import numpy as np
import pytest
import tensorflow as tf

from tests import helpers
from cmlm.training import task as task_lib
from cmlm.training import train


def _arm(seed, condition=True):
  """(encoder weights, first training batch) of cmlm/tiny seeded `seed`."""
  params = helpers.tiny_run_params()
  params.override({"task": {"seed": seed, "objectives": {"cmlm": {
      "condition": condition}}}})
  train.seed_run(params.task)
  task = task_lib.SentenceEncoderTask(params.task)
  model = task.build_model()
  batch = next(iter(task.build_inputs(params.task.train_data)))["cmlm"]
  return [w.numpy() for w in model.encoder.weights], batch


def _same(a, b):
  return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


@pytest.mark.slow
def test_one_seed_gives_every_arm_the_same_start_and_the_same_batches():
  cmlm_weights, cmlm_batch = _arm(5, condition=True)
  mlm_weights, mlm_batch = _arm(5, condition=False)
  other_weights, other_batch = _arm(6)
  # CMLM and its MLM control (no conditioning) start from one encoder...
  assert _same(cmlm_weights, mlm_weights)
  # ... and read the same sequences with the same masks.
  for key in ("s1_input_word_ids", "s2_input_word_ids", "masked_lm_positions"):
    np.testing.assert_array_equal(cmlm_batch[key], mlm_batch[key])
  # Another seed: another start, other batches.
  assert not _same(cmlm_weights, other_weights)
  assert not np.array_equal(cmlm_batch["s2_input_word_ids"],
                            other_batch["s2_input_word_ids"])


def test_the_task_seed_is_the_data_seed_only_where_none_is_given():
  params = helpers.tiny_run_params()
  data = params.task.objectives.cmlm.train_data
  assert data.seed is None
  assert task_lib.seeded_data(data, 7).seed == 7
  assert task_lib.seeded_data(data, None).seed is None
  assert task_lib.seeded_data(data.replace(seed=3), 7).seed == 3
  assert data.seed is None  # the config itself is left as it was


def test_unseeded_runs_keep_drawing_afresh():
  params = helpers.tiny_run_params()
  assert params.task.seed is None
  tf.random.set_seed(None)
  first = task_lib.SentenceEncoderTask(params.task).build_model()
  second = task_lib.SentenceEncoderTask(params.task).build_model()
  assert not _same([w.numpy() for w in first.encoder.weights],
                   [w.numpy() for w in second.encoder.weights])
