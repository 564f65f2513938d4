"""Importing Model Garden BERT checkpoints and TF-Hub BERT SavedModels.

Each source is made here from a Model Garden encoder with random weights
(no downloads); the imported encoder must give that encoder's outputs.
"""
import numpy as np
import pytest

import tensorflow as tf
import tf_keras

from cmlm.experiments import registry_imports  # noqa: F401  (registers cmlm/en_base)
from official.nlp.modeling import networks
from tests.training import import_helpers as tiny
from cmlm.training import import_run as importer
from cmlm.training import run_dir as checkpoint_lib

ARCHITECTURE = dict(vocab_size=len(tiny.VOCAB), hidden_size=16, num_layers=2,
                    num_attention_heads=2, max_sequence_length=40,
                    type_vocab_size=2, dropout_rate=0.0,
                    attention_dropout_rate=0.0)


def _random_encoder(version):
  if version == "v2":
    encoder = networks.BertEncoderV2(inner_dim=32, **ARCHITECTURE)
    encoder(encoder.inputs)
  else:
    encoder = networks.BertEncoder(intermediate_size=32, dict_outputs=True,
                                   **ARCHITECTURE)
  rng = np.random.default_rng(3)
  for variable in encoder.variables:
    variable.assign(rng.normal(0, 0.3, variable.shape).astype(np.float32))
  return encoder


def _write_vocab(directory):
  (directory / "vocab.txt").write_text("\n".join(tiny.VOCAB) + "\n")


def _inputs():
  ids = np.array([[2, 7, 8, 9, 3, 0], [2, 10, 3, 0, 0, 0]], np.int32)
  mask = (ids > 0).astype(np.int32)
  return dict(input_word_ids=tf.constant(ids), input_mask=tf.constant(mask),
              input_type_ids=tf.zeros_like(ids)), mask


def _assert_same_encoder(source_encoder, result):
  encoder = checkpoint_lib.restore_encoder(result.params,
                                           result.checkpoint_path)
  inputs, mask = _inputs()
  expected = source_encoder(inputs)
  ours = encoder.transformer(inputs)
  for key in ("sequence_output", "pooled_output"):
    got, want = ours[key].numpy(), expected[key].numpy()
    if key == "sequence_output":
      got, want = got[mask == 1], want[mask == 1]
    np.testing.assert_allclose(got, want, atol=1e-5)


@pytest.mark.parametrize("version", ["v2", "v1"])
def test_encoder_checkpoint(tmp_path, version):
  encoder = _random_encoder(version)
  source = tmp_path / "pretrained"
  source.mkdir()
  _write_vocab(source)
  # As Model Garden's pretraining writes it: the whole model and the encoder.
  holder = tf.Module()
  holder.encoder_network = encoder
  tf.train.Checkpoint(global_step=tf.Variable(7, dtype=tf.int64),
                      model=holder, encoder=encoder).save(str(source / "ckpt"))
  result = importer.import_model(str(source), str(tmp_path / "out"))
  assert result.source.startswith("Model Garden checkpoint")
  config = result.params.task.model.encoder
  assert (config.vocab_size, config.hidden_size, config.num_layers,
          config.num_attention_heads, config.intermediate_size,
          config.max_position_embeddings) == (len(tiny.VOCAB), 16, 2, 2, 32, 40)
  assert result.imported_pooler and not result.imported_mlm_head
  _assert_same_encoder(encoder, result)


def test_tf_hub_saved_model(tmp_path):
  encoder = _random_encoder("v2")
  inputs = {name: tf_keras.Input(shape=(None,), dtype=tf.int32, name=name)
            for name in ("input_word_ids", "input_mask", "input_type_ids")}
  core = tf_keras.Model(inputs, encoder(inputs))
  _write_vocab(tmp_path)
  # As export_tfhub_lib does: the vocabulary and casing travel with it.
  core.vocab_file = tf.saved_model.Asset(str(tmp_path / "vocab.txt"))
  core.do_lower_case = tf.Variable(False, trainable=False)
  core.save(str(tmp_path / "hub"), include_optimizer=False, save_format="tf")
  (tmp_path / "vocab.txt").unlink()  # the asset copy inside must be used
  result = importer.import_model(str(tmp_path / "hub"), str(tmp_path / "out"))
  assert result.source.startswith("TF-Hub SavedModel")
  assert result.params.task.tokenization.lower_case is False
  _assert_same_encoder(encoder, result)


def test_checkpoint_without_vocabulary_is_a_clear_error(tmp_path):
  tf.train.Checkpoint(encoder=_random_encoder("v2")).save(
      str(tmp_path / "ckpt"))
  with pytest.raises(FileNotFoundError, match="give --vocab_file"):
    importer.import_model(str(tmp_path), str(tmp_path / "out"))
  assert not (tmp_path / "out").exists()


def test_checkpoint_without_an_encoder_is_a_clear_error(tmp_path):
  tf.train.Checkpoint(step=tf.Variable(1)).save(str(tmp_path / "ckpt"))
  _write_vocab(tmp_path)
  with pytest.raises(ValueError, match="holds no BERT encoder"):
    importer.import_model(str(tmp_path), str(tmp_path / "out"))
  assert not (tmp_path / "out").exists()
