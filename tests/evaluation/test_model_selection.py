"""Evaluation tasks as best-checkpoint scorers (evaluation/model_selection.py)
and their injection by `python -m cmlm train`."""
import os

import numpy as np
import pytest

from cmlm.evaluation import model_selection
from cmlm.training import train


def _sts_b_dir(tmp_path, dev_order=1, test_order=-1):
  """An STSBenchmark folder: pair i is ("anchor", "s<i>"), gold `order * i`
  (the test file's gold runs the other way: selecting on it would show)."""
  folder = tmp_path / "sts" / "STSBenchmark"
  folder.mkdir(parents=True)
  for name, order in (("sts-dev.csv", dev_order), ("sts-test.csv",
                                                   test_order)):
    lines = [f"g\tf\t2012\t{i:04d}\t{2.5 + order * (i - 2) * 0.5:.3f}\t"
             f"anchor\ts{i}" for i in range(5)]
    (folder / name).write_text("\n".join(lines) + "\n")
  return str(tmp_path)


def _embed(sentences, reverse=False):
  """cos(anchor, s<i>) grows with i (falls with `reverse`)."""
  def vector(sentence):
    if sentence == "anchor":
      return [1.0, 0.0]
    i = int(sentence[1:])
    angle = (i if reverse else 4 - i) * 0.3
    return [np.cos(angle), np.sin(angle)]
  return np.array([vector(s) for s in sentences], np.float32)


def test_the_score_is_the_dev_splits_spearman_never_the_tests(tmp_path):
  scorer = model_selection.task_scorer("sts-b", _sts_b_dir(tmp_path))
  assert scorer(_embed) == pytest.approx(100.0)  # dev gold follows cos
  assert scorer(lambda s: _embed(s, reverse=True)) == pytest.approx(-100.0)


def test_scorers_refuse_tasks_without_dev_and_missing_files(tmp_path):
  with pytest.raises(ValueError, match="is not an evaluation task"):
    model_selection.task_scorer("nope")
  with pytest.raises(ValueError, match="no dev split"):
    model_selection.task_scorer("cr")
  with pytest.raises(FileNotFoundError, match="--eval_data_dir"):
    model_selection.task_scorer("sts-b", str(tmp_path))
  # No default folder: without one the scorer says what to pass.
  with pytest.raises(ValueError, match="give --eval_data_dir=DIR"):
    model_selection.task_scorer("sts-b")


def test_the_train_command_injects_the_named_tasks_scorer(tmp_path,
                                                          monkeypatch):
  from cmlm.commands import train as train_command  # pylint: disable=g-import-not-at-top
  seen = {}

  def fake_run(params, model_dir, mode, best_checkpoint_scorer=None):
    seen["scorer"] = best_checkpoint_scorer
    return train.TrainResult(None, None, None)
  monkeypatch.setattr(train, "run", fake_run)
  override = ("trainer.best_checkpoint_eval_metric=sts-b,"
              "trainer.best_checkpoint_export_subdir=best")
  train_command.main([
      "--experiment=cmlm/tiny", f"--model_dir={tmp_path / 'run'}",
      f"--params_override={override}",
      f"--eval_data_dir={_sts_b_dir(tmp_path)}"])
  assert seen["scorer"](_embed) == pytest.approx(100.0)
  # A missing dev file stops the command before training starts.
  seen.clear()
  with pytest.raises(FileNotFoundError):
    train_command.main([
        "--experiment=cmlm/tiny", f"--model_dir={tmp_path / 'run2'}",
        f"--params_override={override}",
        f"--eval_data_dir={tmp_path / 'none'}"])
  assert not seen and not os.path.exists(tmp_path / "run2")
