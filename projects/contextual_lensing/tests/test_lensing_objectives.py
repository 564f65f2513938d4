"""Contextual lensing's training modules over a frozen core (Kiros et al.
2020, section 3.1): the Classifier (`nli` with a hidden layer) and the
Ranker (`ranker`, VSE++)."""
import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from cmlm.projects.contextual_lensing.lenses import LensConfig
from cmlm.objectives import nli
from cmlm.projects.contextual_lensing import ranker_objective as ranker
from tests import helpers
from cmlm.training import task as task_lib

SIDES = {"ranker": ("source", "target"), "classifier": ("premise",
                                                         "hypothesis")}


def _features(kind):
  batch = helpers.fake_batch(batch_size=4, seq_length=10)
  first, second = SIDES[kind]
  features = {f"{side}_{key}": batch[f"{prefix}_{key}"]
              for side, prefix in ((first, "s1"), (second, "s2"))
              for key in ("input_word_ids", "input_mask", "input_type_ids")}
  if kind == "classifier":
    features["label"] = tf.constant([0, 1, 2, 1])
  return features


def _task(kind, lens_type="gated_conv"):
  objective = (ranker.RankerObjectiveConfig() if kind == "ranker" else
               nli.NliObjectiveConfig(hidden_size=12))
  config = helpers.tiny_task_config(
      objectives={kind: objective},
      pooling_head=LensConfig(type=lens_type, output_size=6, gating_size=4),
      trainable_core=False)
  return task_lib.SentenceEncoderTask(config)


@pytest.mark.parametrize("kind", ["ranker", "classifier"])
def test_a_training_step_changes_the_lens_and_leaves_the_core_bit_identical(
    kind):
  task = _task(kind)
  model = task.build_model()
  features = {kind: _features(kind)}
  model(features)
  core = model.encoder.transformer.weights
  before = [w.numpy().copy() for w in core]
  lens_before = [w.numpy().copy() for w in model.encoder.pooling_head.weights]
  optimizer = tf_keras.optimizers.Adam(1e-2)
  for _ in range(2):
    loss = helpers.train_step(task, features, model, optimizer)
  assert np.isfinite(float(loss))
  for weight, value in zip(core, before):
    assert np.array_equal(weight.numpy(), value), weight.name
  assert any(not np.array_equal(w.numpy(), v)
             for w, v in zip(model.encoder.pooling_head.weights, lens_before))
  # The optimizer keeps slots (Adam's m and v) for the lens and head only.
  trainable = model.trainable_variables
  assert trainable and not any(
      "transformer" in v.name or "projection_head" in v.name
      for v in trainable)
  assert len(optimizer.variables()) == 1 + 2 * len(trainable)


def test_the_classifier_is_a_two_layer_network_on_u_v_product_absdiff():
  task = _task("classifier", lens_type="simple")
  model = task.build_model()
  outputs = model({"classifier": _features("classifier")})
  assert outputs["classifier"]["logits"].shape == (4, 3)
  head = model.heads["classifier"]
  assert head.hidden.kernel.shape == (4 * 6, 12)  # 4 x lens output_size
  assert head.classifier.kernel.shape == (12, 3)


def test_a_lens_run_starts_from_a_core_checkpoint_without_a_lens(tmp_path):
  plain = task_lib.SentenceEncoderTask(helpers.tiny_task_config(
      objectives={"ranker": ranker.RankerObjectiveConfig()})).build_model()
  plain({"ranker": _features("ranker")})
  path = tf.train.Checkpoint(encoder=plain.encoder).write(
      str(tmp_path / "ckpt"))
  model = _task("ranker").build_model()
  model({"ranker": _features("ranker")})
  assert task_lib.restore_items(model, path) == ["encoder"]
  for restored, saved in zip(model.encoder.transformer.weights,
                             plain.encoder.transformer.weights):
    np.testing.assert_array_equal(restored.numpy(), saved.numpy())
  # Its own checkpoint, lens included, restores the lens too.
  lens_path = tf.train.Checkpoint(encoder=model.encoder).write(
      str(tmp_path / "lens"))
  again = _task("ranker").build_model()
  again({"ranker": _features("ranker")})
  task_lib.restore_items(again, lens_path)
  for restored, saved in zip(again.encoder.pooling_head.weights,
                             model.encoder.pooling_head.weights):
    np.testing.assert_array_equal(restored.numpy(), saved.numpy())


def test_ranker_bad_margin_is_one_clear_error(tmp_path):
  pairs = tmp_path / "pairs.tsv"
  pairs.write_text("a\tb\nc\td\n", encoding="utf-8")
  config = ranker.RankerObjectiveConfig(margin=0.0)
  config.train_data.input_path = str(pairs)
  config.train_data.global_batch_size = 2
  objective = task_lib.build_objectives(helpers.tiny_task_config(
      objectives={"ranker": config}))["ranker"]
  with pytest.raises(ValueError, match="margin must be above 0"):
    objective.validate("train")
