"""When a run saves checkpoints: at the end of the loop that reaches each
multiple of `trainer.checkpoint_interval`, and at the last step, on a fresh
and on a resumed run alike (docs/training.md)."""
import re

import pytest
import tensorflow as tf

from cmlm.training import train
from tests import helpers


def _saved_steps(model_dir):
  state = tf.train.get_checkpoint_state(model_dir)
  return sorted(int(re.search(r"ckpt-(\d+)$", path).group(1))
                for path in state.all_model_checkpoint_paths)


@pytest.mark.slow
def test_checkpoints_fall_on_multiples_of_the_interval(tmp_path):
  # orbit alone saved at the end of the first loop, then every interval
  # from there: 2, 6, 10 here.
  params = helpers.tiny_run_params(10)
  params.override({"trainer": {"checkpoint_interval": 4, "max_to_keep": 10}})
  train.run(params, str(tmp_path))
  assert _saved_steps(str(tmp_path)) == [4, 8, 10]
  # Resumed at 10 for 6 more steps: the next multiple, then the last step.
  params.override({"trainer": {"train_steps": 16}})
  train.run(params, str(tmp_path))
  assert _saved_steps(str(tmp_path)) == [4, 8, 10, 12, 16]


@pytest.mark.slow
def test_an_interval_shorter_than_the_default_loop_is_honoured(tmp_path):
  """Every interval kept: 20 steps with a checkpoint every 10 (and the loop
  set to fit, as the refusal says) leave ckpt-10 and ckpt-20."""
  params = helpers.tiny_run_params(20)
  params.override({"trainer": {"steps_per_loop": 10, "summary_interval": 10,
                               "checkpoint_interval": 10, "max_to_keep": 5}})
  train.run(params, str(tmp_path))
  assert _saved_steps(str(tmp_path)) == [10, 20]
