"""Unsupervised SimCSE as an objective: dropout views, the train-only MLP,
its data (de-duplicated, sharded) and its experiments."""
import numpy as np
import pytest
import tensorflow as tf

from cmlm.projects.simcse_cse import sentence_dataloader
from cmlm.data_pipelines.tokenization import TokenizationConfig
from cmlm.projects.simcse_cse import registry_imports  # noqa: F401  (registers the project)
from cmlm.projects.simcse_cse import contrastive_loss
from official.core import exp_factory
from tests import helpers
from cmlm.projects.simcse_cse.tests import cse_helpers
from cmlm.training import task as task_lib
from cmlm.training import prepared_run


@pytest.mark.parametrize("jit_compile", [False, True])
def test_training_passes_differ_and_inference_passes_are_equal(jit_compile):
  """The two views of a sentence differ only by dropout: they (and two
  training calls) differ in training, and are all equal at inference."""
  features = cse_helpers.batch()
  task = cse_helpers.task(dropout=0.1)
  model = cse_helpers.model_of(task, features)
  forward = tf.function(
      lambda training: model({"simcse": features}, training=training)[
          "simcse"], jit_compile=jit_compile, autograph=False)
  first, second = forward(True), forward(True)
  assert np.abs(first["view_a"] - first["view_b"]).max() > 1e-3
  assert np.abs(first["view_a"] - second["view_a"]).max() > 1e-3
  a, b = forward(False), forward(False)
  np.testing.assert_allclose(a["view_a"], a["view_b"], atol=1e-6)
  np.testing.assert_allclose(a["view_a"], b["view_a"], atol=1e-6)


def test_loss_is_the_contrastive_loss_of_the_encoders_embeddings():
  features = cse_helpers.batch()
  task = cse_helpers.task()
  model = cse_helpers.model_of(task, features)
  outputs = model({"simcse": features}, training=True)
  embedding = model.encoder(
      {k: features[k] for k in ("input_word_ids", "input_mask",
                                "input_type_ids")})["default"]
  expected = contrastive_loss.simcse_loss(
      embedding, embedding, 0.05, same_sentence=contrastive_loss.
      same_sentence_mask(features["input_word_ids"],
                         features["input_word_ids"]))
  loss = task.build_losses({"simcse": features}, outputs)
  assert float(loss) == pytest.approx(float(expected), rel=1e-5)


def test_train_only_mlp_is_a_head_and_changes_only_the_views():
  features = cse_helpers.batch()
  task = cse_helpers.task(train_only_mlp=True)
  model = cse_helpers.model_of(task, features)
  assert set(model.checkpoint_items) == {"encoder", "simcse_head"}
  outputs = model({"simcse": features}, training=False)["simcse"]
  embedding = outputs["sentence_embedding"]
  np.testing.assert_allclose(outputs["view_a"],
                             model.heads["simcse"](embedding), atol=1e-6)
  assert np.abs(outputs["view_a"] - embedding).max() > 1e-3
  # The MLP trains: the loss reaches its weights.
  _, gradients = cse_helpers.loss_and_gradients(
      task, model, features, model.heads["simcse"].trainable_variables)
  assert all(float(tf.norm(g)) > 0 for g in gradients)


def _write(path, lines):
  path.write_text("\n".join(lines) + "\n", encoding="utf-8")
  return str(path)


def test_data_is_deduplicated_and_sharded(tmp_path):
  sentences = [f"the {w} was here today ." for w in
               ("house", "letter", "ball", "nation", "people", "war")]
  path = _write(tmp_path / "s.txt", sentences + sentences[:3] +
                ["  the house   was here today . "])
  assert sentence_dataloader.read_sentences(path) == sentences
  tokenization = TokenizationConfig(
      vocab_file=helpers.REPO_ROOT + "/data/vocab_en_uncased.txt",
      seq_length=12)
  seen = []
  for pipeline in range(2):
    context = tf.distribute.InputContext(2, pipeline, 2)
    data = sentence_dataloader.SentenceDataConfig(
        input_path=path, global_batch_size=4, is_training=False,
        drop_remainder=False)
    dataset = sentence_dataloader.SentenceDataLoader(
        data, tokenization).load(context)
    seen += [tuple(row) for b in dataset for row in
             b["input_word_ids"].numpy()]
  assert len(seen) == len(set(seen)) == len(sentences)


def test_bad_settings_are_one_clear_error(tmp_path):
  path = _write(tmp_path / "s.txt", ["a b c", "d e f"])
  params = exp_factory.get_exp_config("simcse/tiny")
  params.task.objectives.simcse.train_data.input_path = path
  params.task.objectives.simcse.temperature = 0.0
  with pytest.raises(ValueError, match="temperature must be above 0"):
    prepared_run.prepare(params)
  params.task.objectives.simcse.temperature = 0.05
  params.task.objectives.simcse.train_data.global_batch_size = 1
  with pytest.raises(ValueError, match="global_batch_size=1 must be 2"):
    prepared_run.prepare(params)


@pytest.mark.parametrize("name", ["simcse/tiny", "simcse/bert_base",
                                  "cmlm_cse/tiny", "cmlm_cse/bert_base"])
def test_experiments_are_registered_with_the_papers_recipe(name):
  params = exp_factory.get_exp_config(name)
  kind = name.split("/")[0]
  objective = getattr(params.task.objectives, kind)
  assert objective.temperature == 0.05
  assert params.task.tokenization.seq_length == 32
  # SimCSE's MLP over the sentence vector, in training only.
  assert objective.train_only_mlp
  if name.endswith("bert_base"):
    # Unsupervised SimCSE reads [CLS] ("--pooler_type cls --mlp_only_train").
    assert params.task.model.pooling == "cls"
    assert objective.train_data.global_batch_size == 64
    assert params.trainer.optimizer_config.learning_rate.polynomial.\
        initial_learning_rate == 3e-5
    assert params.task.model.encoder.num_layers == 12
  if kind == "cmlm_cse":
    assert objective.mlm_weight == 0.005
    assert objective.train_data.masking_rate == 0.15
    assert objective.fusioner_layers == 3
    objectives = task_lib.build_objectives(params.task)
    assert objectives[kind].extractor_layers == (
        8 if name.endswith("bert_base") else 1)


def test_bert_base_keeps_cls_pooling_over_a_mean_pooled_start(tiny_run):
  from cmlm.training import run_config  # pylint: disable=g-import-not-at-top
  model_dir, _ = tiny_run  # cmlm/tiny: mean pooling, hidden 16
  params = exp_factory.get_exp_config("simcse/bert_base")
  params.task.init_checkpoint = model_dir
  run_config.adopt_init_checkpoint_encoder(params)
  assert params.task.model.encoder.hidden_size == 16  # the start's encoder
  assert params.task.model.pooling == "cls"  # the recipe's read-out
  tiny = exp_factory.get_exp_config("simcse/tiny")
  tiny.task.model.pooling = "mean"
  tiny.task.init_checkpoint = model_dir
  run_config.adopt_init_checkpoint_encoder(tiny)
  assert tiny.task.model.pooling == "mean"


def test_bert_base_recipes_select_their_best_checkpoint_on_sts_b_dev():
  """SimCSE's model selection (STS-B dev every 125 steps, keep the best)
  passes the trainer's check (moved from tests/training/test_best_checkpoint.py:
  these are the project's recipes)."""
  from cmlm.training import best_checkpoint  # pylint: disable=g-import-not-at-top
  for name in ("simcse/bert_base", "cmlm_cse/bert_base"):
    trainer = exp_factory.get_exp_config(name).trainer
    best_checkpoint.check_config(trainer)
    assert (trainer.validation_interval, trainer.best_checkpoint_eval_metric,
            trainer.best_checkpoint_metric_comp) == (125, "sts-b", "higher")
