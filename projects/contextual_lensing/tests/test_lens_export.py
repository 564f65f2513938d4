"""A lens run (contextual lensing, Kiros et al. 2020) exported: the lens is
the encoder's `default`, the serving model's embedding, and the binary
vectors are the serving model's `serving_binary` signature."""
import json
import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_hub as hub
import yaml

from cmlm.export import exporter
from cmlm.inference import run_record
from cmlm.projects.contextual_lensing import lenses
from cmlm.training import run_config
from cmlm.training import train

pytestmark = pytest.mark.slow

SENTENCES = ["a man is playing music .", "the woman is reading a letter .",
             "two children play in the garden", "it was a fine day",
             "he said nothing", "mr darcy walked into the room"]


@pytest.fixture(scope="module")
def lens_run(tiny_run, tmp_path_factory):
  """2 steps of `lensing/tiny` (a GatedConv lens, the Classifier) over the
  frozen core of the session's tiny CMLM run."""
  work = tmp_path_factory.mktemp("lens_run")
  nli = work / "nli.tsv"
  nli.write_text("".join(f"{a}\t{b}\t{label}\n" for a, b, label in zip(
      SENTENCES, SENTENCES[1:] + SENTENCES[:1],
      ["entailment", "neutral", "contradiction"] * 2)), encoding="utf-8")
  override = {
      "task": {"init_checkpoint": tiny_run[0],
               "tokenization": {"seq_length": 16},
               "model": {"pooling_head": {"type": "gated_conv", "output_size": 32,
                                  "gating_size": 8, "num_conv_layers": 2,
                                  "kernel_widths": [3, 2],
                                  "binary_threshold": 0.05}},
               "objectives": {"classifier": {
                   "hidden_size": 8,
                   "train_data": {"input_path": str(nli),
                                  "global_batch_size": 4},
                   "validation_data": {"input_path": ""}}}},
      "trainer": {"train_steps": 2, "steps_per_loop": 1,
                  "summary_interval": 1, "checkpoint_interval": 2,
                  "validation_interval": 2}}
  params = run_config.build_params("lensing/tiny",
                                   params_override=json.dumps(override))
  model_dir = str(work / "run")
  train.run(params, model_dir)
  return model_dir


def test_exported_lens_reproduces_the_in_process_one(lens_run, tmp_path):
  run = run_record.read_run(lens_run)
  encoder = run.restore_encoder()
  assert type(encoder.pooling_head).__name__ == "GatedConvLens"
  batch = tf.constant(SENTENCES)
  in_process = encoder(run.tokenizer().tokenize_and_pack(batch),
                           training=False)["default"].numpy()
  assert in_process.shape == (len(SENTENCES), 32)
  result = exporter.export_run(lens_run, str(tmp_path / "export"))
  preprocess = hub.KerasLayer(result.preprocessor_dir)
  encoder = hub.KerasLayer(result.encoder_dir)
  np.testing.assert_allclose(encoder(preprocess(batch))["default"],
                             in_process, rtol=1e-5, atol=1e-5)
  serving = tf.saved_model.load(result.serving_dir)
  embedding = serving.signatures["serving_default"](batch)["embedding"]
  normalized = in_process / np.linalg.norm(in_process, axis=1, keepdims=True)
  np.testing.assert_allclose(embedding, normalized, rtol=1e-5, atol=1e-5)
  binary = serving.signatures[lenses.BINARY_SIGNATURE_NAME](batch)
  expected = (in_process >= 0.05).astype(np.float32)
  np.testing.assert_array_equal(binary["binary"], expected)
  np.testing.assert_allclose(binary["active_fraction"], expected.mean(1),
                             rtol=1e-6)
  assert 0.0 < expected.mean() < 1.0  # the threshold does cut
  # The frozen core stays frozen for hub.KerasLayer(trainable=True) users.
  trainable = hub.KerasLayer(result.encoder_dir, trainable=True)
  trainable(preprocess(batch))
  names = [w.name for w in trainable.trainable_weights]
  assert names and all("pooling_head" in name for name in names), names


def test_a_run_of_the_older_layout_still_loads_and_exports(lens_run,
                                                           tmp_path):
  """Runs written before lenses became pooling heads: params.yaml says
  `task.model.lens` and the checkpoint names the lens `encoder/lens`. They
  load (`compat.upgrade_params`, `compat.stored_encoder_part`) and export
  as they did."""
  run = run_record.read_run(lens_run)
  old = tmp_path / "old_run"
  old.mkdir()
  with open(os.path.join(lens_run, "params.yaml"), encoding="utf-8") as f:
    params = yaml.safe_load(f)
  model = params["task"]["model"]
  model["lens"] = model.pop("pooling_head")
  with open(old / "params.yaml", "w", encoding="utf-8") as f:
    yaml.safe_dump(params, f)
  encoder = run.restore_encoder()
  tf.train.Checkpoint(
      encoder=tf.train.Checkpoint(transformer=encoder.transformer,
                                  lens=encoder.pooling_head),
      global_step=tf.Variable(2, dtype=tf.int64)).write(str(old / "ckpt-2"))
  tf.compat.v1.train.update_checkpoint_state(str(old), str(old / "ckpt-2"))
  keys = [k for k, _ in tf.train.list_variables(str(old / "ckpt-2"))]
  assert any(k.startswith("encoder/lens/") for k in keys)
  reread = run_record.read_run(str(old))
  assert reread.params.task.model.pooling_head.type == "gated_conv"
  batch = tf.constant(SENTENCES)
  expected = encoder(run.tokenizer().tokenize_and_pack(batch),
                     training=False)["default"].numpy()
  np.testing.assert_allclose(
      reread.restore_encoder()(reread.tokenizer().tokenize_and_pack(batch),
                     training=False)["default"], expected, atol=1e-6)
  result = exporter.export_run(str(old), str(tmp_path / "export"))
  binary = tf.saved_model.load(result.serving_dir).signatures[
      lenses.BINARY_SIGNATURE_NAME](batch)["binary"]
  np.testing.assert_array_equal(binary, (expected >= 0.05).astype(np.float32))
