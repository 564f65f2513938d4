"""Keeping the best checkpoint by an injected score (training/best_checkpoint.py).

A scorer with a known sequence of scores is injected into a tiny cmlm/tiny
run; the kept checkpoint must be the one of the best score (its step, its
encoder's embeddings), load through run_dir like any checkpoint, and survive
a resume (the best so far is compared against, not forgotten).
"""
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from tests import helpers
from cmlm.inference import embedders
from cmlm.modeling.vectors import l2_normalize
from cmlm.training import best_checkpoint
from cmlm.training import run_dir
from cmlm.training import train

SENTENCES = ["the cat sat", "a dog ran far", "birds fly"]


class ScriptedScorer:
  """Returns `scores` in turn; records the embeddings it was shown."""

  def __init__(self, scores):
    self.scores = list(scores)
    self.seen = []  # embeddings of SENTENCES at each call

  def __call__(self, embed):
    self.seen.append(np.asarray(embed(SENTENCES)))
    return self.scores[len(self.seen) - 1]


def _params(train_steps, comp="higher", **trainer):
  params = helpers.tiny_run_params(train_steps)
  params.override({"trainer": {**dict(
      validation_interval=2, best_checkpoint_export_subdir="best",
      best_checkpoint_eval_metric="toy", best_checkpoint_metric_comp=comp),
      **trainer}})
  return params


def _info(model_dir):
  with open(os.path.join(model_dir, "best", "info.json")) as f:
    return json.load(f)


# Slow: two real runs (4 steps, then resumed to 8) and two checkpoint loads.
# The exporter's choice (one checkpoint, named by the best step, for either
# comparison) and the settings' checks are the fast tests below.
@pytest.mark.slow
def test_the_kept_checkpoint_is_the_best_scored_one_and_loads(tmp_path):
  model_dir = str(tmp_path / "run")
  first = ScriptedScorer([0.1, 0.5])  # steps 2, 4
  result = train.run(_params(4), model_dir, best_checkpoint_scorer=first)
  assert [step for step, _ in result.best.history] == [2, 4]
  assert _info(model_dir) == {"toy": 0.5, "best_ckpt_global_step": 4.0}
  # Resumed to step 8: 0.3 and 0.2 do not beat the 0.5 of step 4.
  second = ScriptedScorer([0.3, 0.2])  # steps 6, 8
  result = train.run(_params(8), model_dir, best_checkpoint_scorer=second)
  assert [step for step, _ in result.best.history] == [6, 8]
  assert result.best.best_step == 4
  assert _info(model_dir)["best_ckpt_global_step"] == 4
  best = run_dir.find_checkpoint(model_dir, os.path.join(model_dir, "best"))
  assert os.path.basename(best) == "best_ckpt-4"
  assert [f for f in os.listdir(os.path.join(model_dir, "best"))
          if f.endswith(".index")] == ["best_ckpt-4.index"]
  assert run_dir.checkpoint_step(best) == 4
  # It loads as any checkpoint of the run, and holds step 4's encoder.
  kept = l2_normalize(embedders.load_embedder(
      model_dir, checkpoint=best).embed(SENTENCES))
  np.testing.assert_allclose(kept, first.seen[1], atol=1e-5)
  assert not np.allclose(kept, second.seen[1], atol=1e-4)  # training moved
  latest = l2_normalize(embedders.load_embedder(model_dir).embed(SENTENCES))
  np.testing.assert_allclose(latest, second.seen[1], atol=1e-5)


@pytest.mark.parametrize("comp, kept_step", [("lower", 4), ("higher", 2)])
def test_the_exporter_keeps_one_checkpoint_named_by_the_best_step(
    tmp_path, comp, kept_step):
  step = tf.Variable(0, dtype=tf.int64)
  weight = tf.Variable(0.0)
  exporter = best_checkpoint.StepNamedExporter(str(tmp_path), "toy", comp,
                                               step)
  checkpoint = tf.train.Checkpoint(global_step=step, weight=weight)
  for value, score in ((2, 3.0), (4, 1.0), (6, 2.0)):
    step.assign(value)
    weight.assign(float(value))
    exporter.maybe_export_checkpoint(checkpoint, {"toy": score}, value)
  assert exporter.best_ckpt_path.endswith(f"best_ckpt-{kept_step}")
  assert sorted(f for f in os.listdir(tmp_path) if f.endswith(".index")) == [
      f"best_ckpt-{kept_step}.index"]
  restored = tf.Variable(-1.0)
  tf.train.Checkpoint(weight=restored).read(
      exporter.best_ckpt_path).expect_partial()
  assert restored.numpy() == kept_step


@pytest.mark.parametrize("trainer, words", [
    (dict(best_checkpoint_export_subdir=""), "best_checkpoint_export_subdir"),
    (dict(validation_interval=3), "multiple of trainer.steps_per_loop"),
    (dict(best_checkpoint_metric_comp="max"), "higher or lower"),
])
def test_a_setting_that_cannot_work_fails_before_anything_is_written(
    tmp_path, trainer, words):
  model_dir = str(tmp_path / "run")
  with pytest.raises(ValueError) as raised:
    train.run(_params(4, **trainer), model_dir,
              best_checkpoint_scorer=ScriptedScorer([1.0]))
  assert words in str(raised.value) and "\n" not in str(raised.value)
  assert not os.path.exists(model_dir)
