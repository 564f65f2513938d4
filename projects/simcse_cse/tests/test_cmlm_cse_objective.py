"""CMLM-CSE (cmlm_cse_2023.txt section 3): the frozen extractor, h at the
fusioner's position 0, lambda = 0 as SimCSE, MLM labels at the masks only,
and an export holding the encoder alone."""
import numpy as np
import pytest
import tensorflow as tf

from cmlm.projects.simcse_cse import sentence_dataloader
from cmlm.data_pipelines.tokenization import TokenizationConfig
from cmlm.projects.simcse_cse import registry_imports  # noqa: F401  (registers the project)
from cmlm.export import exporter
from cmlm.projects.simcse_cse.cmlm_cse_layers import LexicalFeatureExtractor
from official.core import exp_factory
from tests import helpers
from cmlm.projects.simcse_cse.tests import cse_helpers
from cmlm.training import run_config
from cmlm.training import train


def test_lambda_zero_reproduces_simcse_exactly():
  features = cse_helpers.batch()
  cse = cse_helpers.task("cmlm_cse", mlm_weight=0.0)
  plain = cse_helpers.task("simcse")
  cse_model = cse_helpers.model_of(cse, features)
  plain_model = cse_helpers.model_of(plain, features)
  plain_model.encoder.set_weights(cse_model.encoder.get_weights())
  cse_loss, cse_gradients = cse_helpers.loss_and_gradients(
      cse, cse_model, features)
  plain_loss, plain_gradients = cse_helpers.loss_and_gradients(
      plain, plain_model, features)
  assert cse_loss == plain_loss
  for a, b in zip(cse_gradients, plain_gradients):
    np.testing.assert_array_equal(tf.convert_to_tensor(a),
                                  tf.convert_to_tensor(b))
  # With lambda > 0 the MLM term adds to the loss and reaches the encoder.
  cse.objectives["cmlm_cse"].config.mlm_weight = 0.5
  with_mlm, gradients = cse_helpers.loss_and_gradients(cse, cse_model,
                                                       features)
  assert with_mlm > cse_loss + 0.5
  assert any(np.abs(tf.convert_to_tensor(a) - tf.convert_to_tensor(b)).max()
             > 1e-7 for a, b in zip(gradients, plain_gradients))


def test_a_step_trains_encoder_and_fusioner_never_the_extractor():
  features = cse_helpers.batch()
  task = cse_helpers.task("cmlm_cse", num_layers=3, mlm_weight=1.0)
  model = cse_helpers.model_of(task, features)
  extractor = model.states["cmlm_cse"]
  assert extractor.num_layers == 2  # the paper's 8/12 of 3 layers
  assert not extractor.trainable_variables
  trainable = {id(v) for v in model.trainable_variables}
  assert not any(id(v) in trainable for v in extractor.variables)
  # Copied from the encoder: same values, other variables.
  encoder_embedding = model.encoder.transformer.get_embedding_table()
  assert extractor.embedding_table is not encoder_embedding
  np.testing.assert_array_equal(extractor.embedding_table, encoder_embedding)
  before = [v.numpy() for v in extractor.variables]
  encoder_before = [v.numpy() for v in model.encoder.trainable_variables]
  head_before = [v.numpy() for v in model.heads["cmlm_cse"].variables]
  inputs = {"cmlm_cse": features}
  with tf.GradientTape(persistent=True) as tape:
    loss = task.build_losses(inputs, model(inputs, training=True))
  gradients = tape.gradient(loss, model.trainable_variables)
  assert tape.gradient(loss, extractor.variables) == [None] * len(before)
  for variable, gradient in zip(model.trainable_variables, gradients):
    if gradient is not None:
      variable.assign_sub(tf.convert_to_tensor(gradient))
  for old, variable in zip(before, extractor.variables):
    np.testing.assert_array_equal(old, variable.numpy())  # bit-identical
  assert any(np.abs(old - v.numpy()).max() > 0 for old, v in
             zip(encoder_before, model.encoder.trainable_variables))
  assert any(np.abs(old - v.numpy()).max() > 0 for old, v in
             zip(head_before, model.heads["cmlm_cse"].variables))


def test_the_fusioners_position_0_is_h():
  features = cse_helpers.batch()
  task = cse_helpers.task("cmlm_cse")
  model = cse_helpers.model_of(task, features)
  fusioner = model.heads["cmlm_cse"].fusioner
  rng = np.random.default_rng(0)
  h = tf.constant(rng.normal(size=(4, 16)), tf.float32)
  lexical = tf.constant(rng.normal(size=(4, 10, 16)), tf.float32)
  fused = fusioner.fused_inputs(h, lexical)
  np.testing.assert_array_equal(fused[:, 0], h)
  np.testing.assert_array_equal(fused[:, 1:], lexical[:, 1:])
  table = model.states["cmlm_cse"].embedding_table
  logits = lambda h, lexical: fusioner(
      h, lexical, features["input_mask"], features["masked_lm_positions"],
      table).numpy()
  other_cls = tf.concat([lexical[:, :1] + 5.0, lexical[:, 1:]], axis=1)
  # h' at position 0 ([CLS]) is replaced: changing it changes nothing; h does.
  np.testing.assert_array_equal(logits(h, lexical), logits(h, other_cls))
  assert np.abs(logits(h, lexical) - logits(h + 1.0, lexical)).max() > 1e-6


def test_mlm_labels_exist_only_at_masked_positions(tmp_path):
  path = tmp_path / "s.txt"
  path.write_text("\n".join(
      f"the {w} of the house was here today and yesterday ." for w in
      ("house", "letter", "ball", "nation", "people", "war", "peace",
       "sister")) + "\n", encoding="utf-8")
  tokenization = TokenizationConfig(
      vocab_file=helpers.REPO_ROOT + "/data/vocab_en_uncased.txt",
      seq_length=16)
  data = sentence_dataloader.SentenceDataConfig(
      input_path=str(path), global_batch_size=8, is_training=False,
      masking_rate=0.15, seed=3)
  batch = next(iter(sentence_dataloader.SentenceDataLoader(
      data, tokenization, with_masking=True).load()))
  ids, masked = batch["input_word_ids"].numpy(), batch[
      "masked_input_word_ids"].numpy()
  positions = batch["masked_lm_positions"].numpy()
  weights = batch["masked_lm_weights"].numpy()
  real = batch["input_mask"].numpy().sum(axis=1) - 2  # no [CLS], [SEP]
  assert positions.shape[1] == 3  # ceil(0.15 x 14)
  for row in range(8):
    used = positions[row][weights[row] > 0]
    assert len(used) == min(3, max(1, round(0.15 * real[row])))
    assert ((used > 0) & (used < real[row] + 1)).all()  # real tokens only
    changed = set(np.flatnonzero(ids[row] != masked[row]))
    assert changed <= set(used)  # every changed token has a label
    np.testing.assert_array_equal(batch["masked_lm_ids"].numpy()[row][
        weights[row] > 0], ids[row][used])
  assert (masked == 4).sum() > 0  # [MASK]


@pytest.mark.slow
def test_run_from_an_encoder_keeps_the_extractor_and_exports_the_encoder(
    tiny_run, tmp_path):
  """From a CMLM run: the extractor is that run's encoder (its lower
  layers), bit-identical after training; the export holds the encoder
  alone (no fusioner, MLP or extractor)."""
  init_dir, _ = tiny_run
  params = exp_factory.get_exp_config("cmlm_cse/tiny")
  params.override({
      "task": {"init_checkpoint": init_dir,
               "tokenization": {"seq_length": 16},
               "objectives": {"cmlm_cse": {
                   "train_only_mlp": True, "mlm_weight": 1.0,
                   "train_data": {"global_batch_size": 4, "seed": 1}}}},
      "trainer": {"train_steps": 2, "steps_per_loop": 1,
                  "summary_interval": 1, "checkpoint_interval": 2}})
  run_config.adopt_init_checkpoint_encoder(params)
  model_dir = str(tmp_path / "run")
  result = train.run(params, model_dir)
  extractor = result.model.states["cmlm_cse"]
  start = tf.train.load_checkpoint(tf.train.latest_checkpoint(
      init_dir)).get_tensor("encoder/transformer/_position_embedding_layer/"
                            "embeddings/.ATTRIBUTES/VARIABLE_VALUE")
  # pylint: disable=protected-access
  position = lambda transformer: (
      transformer._position_embedding_layer.weights[0].numpy())
  np.testing.assert_array_equal(position(extractor.transformer), start)
  assert np.abs(position(result.model.encoder.transformer) - start).max() > 0
  latest = tf.train.latest_checkpoint(model_dir)
  names = {name.split("/")[0] for name, _ in tf.train.list_variables(latest)}
  assert {"encoder", "cmlm_cse_head", "cmlm_cse_state"} <= names
  export = exporter.export_run(model_dir, str(tmp_path / "export"))
  loaded = tf.saved_model.load(export.encoder_dir)
  exported = {v.name for v in loaded.variables}
  assert not any(word in name for name in exported for word in
                 ("fusioner", "mlp", "extractor", "cmlm_cse"))
  weights = [v for v in loaded.variables if "do_lower_case" not in v.name]
  assert len(weights) == len(result.model.encoder.variables)
  assert isinstance(extractor, LexicalFeatureExtractor)
