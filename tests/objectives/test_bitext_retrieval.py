"""CMLM + bitext retrieval multitask training and its stages (section 4.2):
the sentence-encoder task with the `cmlm` and `bitext_retrieval` objectives."""
import numpy as np
import pytest
import tensorflow as tf

from cmlm.experiments import cmlm_experiments  # noqa: F401  (registers cmlm/tiny)
from cmlm.modeling import bitext_loss
from cmlm.modeling import losses
from cmlm.modeling.conditional_mlm import conditional_mlm_outputs
from cmlm.objectives import bitext_retrieval
from cmlm.objectives import cmlm
from official.core import exp_factory
from tests import helpers
from cmlm.training import task as task_lib
from cmlm.training import prepared_run
from cmlm.training import train


def _bitext_features(features):
  """Translation pairs: s1 as source, s1 reversed as target."""
  pairs = {}
  for key in ("input_word_ids", "input_mask", "input_type_ids"):
    pairs[f"source_{key}"] = features["s1_" + key]
    pairs[f"target_{key}"] = features["s1_" + key]
  pairs["target_input_word_ids"] = tf.reverse(features["s1_input_word_ids"],
                                              axis=[1])
  pairs["target_input_mask"] = tf.reverse(features["s1_input_mask"], axis=[1])
  return pairs


def _batch():
  features = helpers.fake_batch()
  return {"cmlm": features, "bitext_retrieval": _bitext_features(features)}


def _task(cmlm_weight=1.0, bitext_weight=0.2):
  return task_lib.SentenceEncoderTask(helpers.tiny_task_config(objectives={
      "cmlm": cmlm.CmlmObjectiveConfig(weight=cmlm_weight),
      "bitext_retrieval": bitext_retrieval.BitextRetrievalObjectiveConfig(
          weight=bitext_weight)}))


def _loss_and_gradients(task, model, features):
  with tf.GradientTape() as tape:
    loss = task.build_losses(features, model(features, training=True))
  return float(loss), tape.gradient(loss, model.encoder.trainable_variables)


def test_alpha_zero_reduces_to_cmlm_alone():
  features = _batch()
  multitask = _task(bitext_weight=0.0)
  assert list(multitask.objectives) == ["cmlm"]  # weight 0: not in the run
  model = multitask.build_model()
  cmlm_alone = task_lib.SentenceEncoderTask(helpers.tiny_task_config())
  alone_model = cmlm_alone.build_model()
  alone_model(features)
  model(features)
  alone_model.set_weights(model.get_weights())
  multitask_loss, multitask_grads = _loss_and_gradients(multitask, model,
                                                        features)
  cmlm_loss, cmlm_grads = _loss_and_gradients(cmlm_alone, alone_model,
                                              features)
  assert multitask_loss == pytest.approx(cmlm_loss, rel=1e-6)
  for a, b in zip(multitask_grads, cmlm_grads):
    np.testing.assert_allclose(tf.convert_to_tensor(a),
                               tf.convert_to_tensor(b), atol=1e-7)


def test_multitask_loss_is_cmlm_plus_alpha_times_bitext():
  """L = L_cmlm + 0.2 L_br, each computed here from the modeling layer's
  plain functions, apart from the objectives' code."""
  features = _batch()
  task = _task(bitext_weight=0.2)
  model = task.build_model()
  outputs = model(features)
  own = features["cmlm"]
  mlm_logits = conditional_mlm_outputs(model.encoder, model.heads["cmlm"],
                                       own)["mlm_logits"]
  cmlm_loss = losses.conditional_mlm_loss(own["masked_lm_ids"], mlm_logits,
                                          own["masked_lm_weights"])
  pairs = features["bitext_retrieval"]
  source, target = (model.encoder(
      {key: pairs[f"{side}_{key}"] for key in
       ("input_word_ids", "input_mask", "input_type_ids")})["pooled_output"]
                    for side in ("source", "target"))
  bitext = bitext_loss.additive_margin_loss(source, target, margin=0.3,
                                            scale=10.0)
  assert float(task.build_losses(features, outputs)) == pytest.approx(
      float(cmlm_loss + 0.2 * bitext), rel=1e-5)
  bitext_only = _task(cmlm_weight=0.0, bitext_weight=1.0)
  assert list(bitext_only.objectives) == ["bitext_retrieval"]
  assert float(bitext_only.build_losses(features, outputs)) == pytest.approx(
      float(bitext), rel=1e-5)


def test_no_loss_weight_is_a_config_error():
  with pytest.raises(ValueError, match="nothing to train"):
    _task(cmlm_weight=0.0, bitext_weight=0.0)


def _bitext_file(tmp_path):
  sentences = [f"the {w} was here today ." for w in
               ("house", "letter", "ball", "nation", "people", "war", "peace",
                "sister", "mother", "garden", "money", "world")]
  path = tmp_path / "pairs.tsv"
  path.write_text("".join(f"{s}\t{s.upper()}\n" for s in sentences),
                  encoding="utf-8")
  return str(path)


def test_bitext_data_tokenizes_with_the_runs_one_tokenization(tmp_path):
  """There is one `task.tokenization`: changing its casing changes the ids
  of the bitext objective's inputs too (before, each data config had its
  own and a mismatch had to be caught)."""
  params = _stage(1, _bitext_file(tmp_path))
  prepared_run.prepare(params)

  def target_ids(lower_case):
    params.task.tokenization.lower_case = lower_case
    objective = task_lib.build_objectives(params.task)["bitext_retrieval"]
    batch = next(iter(objective.build_inputs(
        params.task.objectives.bitext_retrieval.train_data)))
    return batch["target_input_word_ids"].numpy()

  unk = 1
  cased, uncased = target_ids(False), target_ids(True)
  # The targets are upper-cased: the uncased vocabulary reads them only when
  # the run lower-cases.
  assert (cased == unk).sum() > (uncased == unk).sum()


def _stage(train_steps, bitext_path, cmlm_weight=1.0, bitext_weight=0.2,
           init_checkpoint=""):
  params = exp_factory.get_exp_config("cmlm/tiny")
  params.override({"task": {
      "init_checkpoint": init_checkpoint,
      "objectives": {"bitext_retrieval": {
          "type": "bitext_retrieval", "weight": bitext_weight,
          "train_data": {"input_path": bitext_path, "global_batch_size": 4,
                         "is_training": True}}}}})
  params.override(helpers.tiny_run_overrides(train_steps))
  params.task.objectives.cmlm.weight = cmlm_weight
  return params


@pytest.mark.slow
def test_s3_second_stage_starts_from_the_first_stages_checkpoint(tmp_path):
  bitext_path = _bitext_file(tmp_path)
  stage1_dir, stage2_dir = str(tmp_path / "stage1"), str(tmp_path / "stage2")
  stage1 = train.run(_stage(2, bitext_path, bitext_weight=0.0), stage1_dir)
  assert "bitext_retrieval" not in stage1.model.objectives
  trained = [w.numpy() for w in stage1.model.encoder.weights]
  trained_head = [w.numpy() for w in stage1.model.heads["cmlm"].weights]

  stage2_params = _stage(4, bitext_path, init_checkpoint=stage1_dir)
  task = task_lib.SentenceEncoderTask(stage2_params.task)
  fresh = task.build_model()
  batch = helpers.fake_batch(seq_length=16)
  fresh({"cmlm": batch, "bitext_retrieval": _bitext_features(batch)})
  assert not np.allclose(fresh.encoder.weights[0].numpy(), trained[0])
  task.initialize(fresh)
  for restored, expected in zip(fresh.encoder.weights, trained):
    np.testing.assert_array_equal(restored.numpy(), expected)
  # The CMLM head is a checkpoint item of both stages: it carries over too.
  for restored, expected in zip(fresh.heads["cmlm"].weights, trained_head):
    np.testing.assert_array_equal(restored.numpy(), expected)

  stage2 = train.run(stage2_params, stage2_dir)
  assert stage2.trainer.first_step_of_run == 0
  assert int(stage2.trainer.global_step.numpy()) == 4
  assert np.isfinite(stage2.progress.last_loss)
  assert {"cmlm/loss", "bitext_retrieval/loss",
          "bitext_retrieval/bitext_accuracy"} <= {
              m.name for m in stage2.trainer.train_metrics}
