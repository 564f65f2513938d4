"""CMLM + bitext retrieval multitask training and its stages (section 4.2)."""
import numpy as np
import pytest
import tensorflow as tf

from cmlm import cmlm_bitext_task
from cmlm import cmlm_task
from cmlm import train
from experiments import cmlm_experiments
from modeling import bitext_loss
from official.core import config_definitions as cfg
from official.core import exp_factory
from tests import helpers


def _with_bitext(features):
  """Adds translation pairs (s1 as source, s2's unmasked ids as target)."""
  extra = {}
  for side, prefix in (("source", "s1_"), ("target", "s1_")):
    for key in ("input_word_ids", "input_mask", "input_type_ids"):
      extra[f"{side}_{key}"] = features[prefix + key]
  extra["target_input_word_ids"] = tf.reverse(
      features["s1_input_word_ids"], axis=[1])
  extra["target_input_mask"] = tf.reverse(features["s1_input_mask"], axis=[1])
  return dict(features, **extra)


def _task(**kwargs):
  base = helpers.tiny_task_config()
  return cmlm_bitext_task.CmlmBitextTask(cmlm_bitext_task.CmlmBitextTaskConfig(
      model=base.model, train_data=base.train_data, **kwargs))


def _loss_and_gradients(task, model, features):
  with tf.GradientTape() as tape:
    loss = task.build_losses(features, model(features, training=True))
  return float(loss), tape.gradient(loss, model.trainable_variables)


def test_alpha_zero_reduces_to_cmlm_alone():
  features = _with_bitext(helpers.fake_batch())
  multitask = _task(bitext_weight=0.0)
  model = multitask.build_model()
  cmlm = cmlm_task.CmlmTask(helpers.tiny_task_config())
  multitask_loss, multitask_grads = _loss_and_gradients(multitask, model,
                                                        features)
  cmlm_loss, cmlm_grads = _loss_and_gradients(cmlm, model.cmlm, features)
  assert multitask_loss == pytest.approx(cmlm_loss, rel=1e-6)
  for a, b in zip(multitask_grads, cmlm_grads):
    np.testing.assert_allclose(tf.convert_to_tensor(a),
                               tf.convert_to_tensor(b), atol=1e-7)


def test_multitask_loss_is_cmlm_plus_alpha_times_bitext():
  features = _with_bitext(helpers.fake_batch())
  task = _task(bitext_weight=0.2)
  model = task.build_model()
  outputs = model(features)
  cmlm_loss = cmlm_task.CmlmTask(helpers.tiny_task_config()).build_losses(
      features, outputs)
  bitext = bitext_loss.additive_margin_loss(outputs["source_embedding"],
                                            outputs["target_embedding"],
                                            margin=0.3, scale=10.0)
  assert float(task.build_losses(features, outputs)) == pytest.approx(
      float(cmlm_loss + 0.2 * bitext), rel=1e-5)
  bitext_only = _task(cmlm_weight=0.0, bitext_weight=1.0)
  assert float(bitext_only.build_losses(features, outputs)) == pytest.approx(
      float(bitext), rel=1e-5)


def test_no_loss_weight_is_a_config_error():
  with pytest.raises(ValueError, match="nothing to train"):
    _task(cmlm_weight=0.0, bitext_weight=0.0).build_model()


@pytest.mark.parametrize("field,value,message", [
    ("lower_case", False, "bitext_data.lower_case is False but"),
    ("text_normalization", "huggingface", "must tokenize alike"),
    ("vocab_file", "other", "is not the vocabulary of"),
])
def test_bitext_data_must_tokenize_as_the_cmlm_data(tmp_path, field, value,
                                                    message):
  params = _stage(1, _bitext_file(tmp_path))
  params.task.validate_inputs("train")  # consistent: accepted
  if field == "vocab_file":
    vocab = cmlm_experiments.EMBEDDED_VOCAB
    with open(vocab, encoding="utf-8") as f:
      tokens = f.read().splitlines()
    value = tmp_path / "reordered_vocab.txt"
    value.write_text("\n".join(tokens[:5] + tokens[6:] + tokens[5:6]) + "\n",
                     encoding="utf-8")
    value = str(value)
  params.task.bitext_data.override({field: value})
  with pytest.raises(ValueError, match=message):
    params.task.validate_inputs("train")
  params.task.cmlm_weight = 0.0  # bitext alone (stage 2 of S2): no CMLM data
  params.task.validate_inputs("train")


def _bitext_file(tmp_path):
  sentences = [f"the {w} was here today ." for w in
               ("house", "letter", "ball", "nation", "people", "war", "peace",
                "sister", "mother", "garden", "money", "world")]
  path = tmp_path / "pairs.tsv"
  path.write_text("".join(f"{s}\t{s.upper()}\n" for s in sentences),
                  encoding="utf-8")
  return str(path)


def _stage(train_steps, bitext_path, cmlm_weight=1.0, bitext_weight=0.2,
           init_checkpoint=""):
  tiny = exp_factory.get_exp_config("cmlm/tiny")
  params = cfg.ExperimentConfig(
      task=cmlm_bitext_task.CmlmBitextTaskConfig(
          model=tiny.task.model, train_data=tiny.task.train_data,
          validation_data=tiny.task.validation_data,
          cmlm_weight=cmlm_weight, bitext_weight=bitext_weight,
          init_checkpoint=init_checkpoint),
      trainer=tiny.trainer, runtime=tiny.runtime)
  params.override(helpers.tiny_run_overrides(train_steps))
  params.override({"task": {"bitext_data": {
      "input_path": bitext_path, "global_batch_size": 4, "seq_length": 16,
      "is_training": True, "lower_case": True,
      "vocab_file": cmlm_experiments.EMBEDDED_VOCAB}}})
  return params


@pytest.mark.slow
def test_s3_second_stage_starts_from_the_first_stages_checkpoint(tmp_path):
  bitext_path = _bitext_file(tmp_path)
  stage1_dir, stage2_dir = str(tmp_path / "stage1"), str(tmp_path / "stage2")
  stage1 = train.run(_stage(2, bitext_path, bitext_weight=0.0), stage1_dir)
  trained = [w.numpy() for w in stage1.model.cmlm.encoder.weights]

  stage2_params = _stage(4, bitext_path, init_checkpoint=stage1_dir)
  task = cmlm_bitext_task.CmlmBitextTask(stage2_params.task)
  fresh = task.build_model()
  fresh(_with_bitext(helpers.fake_batch(seq_length=16)))
  assert not np.allclose(fresh.cmlm.encoder.weights[0].numpy(), trained[0])
  task.initialize(fresh)
  for restored, expected in zip(fresh.cmlm.encoder.weights, trained):
    np.testing.assert_array_equal(restored.numpy(), expected)

  stage2 = train.run(stage2_params, stage2_dir)
  assert stage2.trainer.first_step_of_run == 0
  assert int(stage2.trainer.global_step.numpy()) == 4
  assert np.isfinite(stage2.progress.last_loss)
