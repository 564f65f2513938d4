"""The exported encoder computes the sentence embedding the config trained."""
import numpy as np
import pytest

import cmlm.export  # noqa: F401  (Keras 2 before TensorFlow loads)
import tensorflow as tf

from cmlm.experiments import cmlm_experiments
from cmlm.export import encoder as encoder_lib
from cmlm.modeling import model_builder
from tests import helpers

VOCAB = cmlm_experiments.EMBEDDED_VOCAB


def _model(skip=False, **kwargs):
  """The tiny encoder + CMLM head (`skip`: table 7's head), built."""
  model = model_builder.build_cmlm_model(helpers.tiny_model_config(**kwargs),
                                         seq_length=10, skip=skip)
  model(helpers.fake_batch())  # builds every variable
  return model


def _export(model, with_mlm=False):
  """The export encoder of a trained `SiameseEncoder` (+ its MLM head)."""
  return encoder_lib.build_export_encoder(
      model.encoder, model.head if with_mlm else None)


@pytest.mark.parametrize("pooling,representation", [
    ("mean", "pooled"), ("cls", "pooled"), ("max", "pooled"),
    ("mean", "proj")])
def test_default_is_the_embedding_as_trained(pooling, representation):
  model = _model(pooling=pooling, sentence_representation=representation)
  inputs = helpers.encoder_inputs(helpers.fake_batch())
  expected = model.encoder(inputs, training=False)
  exported = _export(model)(inputs, training=False)
  for key in ("default", "pooled_output", "sequence_output"):
    np.testing.assert_allclose(exported[key], expected[key], atol=1e-6)
  assert len(exported["encoder_outputs"]) == 1


def test_only_the_embeddings_variables_are_exported_and_the_pooler_is_frozen():
  pooled = _export(_model())
  projected = _export(_model(sentence_representation="proj"))
  def names(variables):
    return {v.name for v in variables}
  assert not any("projection_head" in n
                 for n in names(pooled.trainable_variables))
  assert any("projection_head" in n
             for n in names(projected.trainable_variables))
  for model in (pooled, projected):
    assert not any("pooler" in n for n in names(model.trainable_variables))
    assert any("pooler" in n for n in names(model.non_trainable_variables))


def test_mlm_subobject_reads_the_tied_mlm_head(tmp_path):
  model = _model()
  exported = _export(model, with_mlm=True)
  features = helpers.fake_batch()
  inputs = dict(helpers.encoder_inputs(features),
                masked_lm_positions=features["masked_lm_positions"])
  logits = exported.mlm(inputs, training=False)["mlm_logits"]
  sequence = model.encoder(helpers.encoder_inputs(features),
                           training=False)["sequence_output"]
  expected = model.masked_lm(sequence,
                             masked_positions=features["masked_lm_positions"])
  np.testing.assert_allclose(logits, expected, atol=1e-5)
  # The core model does not carry the MLM head's own variables.
  assert not any("predictions" in v.name for v in exported.variables)
  assert any("predictions" in v.name for v in exported.mlm.variables)
  path = str(tmp_path / "encoder")
  encoder_lib.export_encoder(exported, path, VOCAB, lower_case=True)
  loaded = tf.saved_model.load(path)
  np.testing.assert_allclose(loaded.mlm(inputs)["mlm_logits"], logits,
                             atol=1e-5)
  assert bool(loaded.do_lower_case.numpy())


def test_mlm_export_of_the_skip_architecture_is_refused():
  with pytest.raises(ValueError, match="'skip' architecture"):
    _export(_model(skip=True), with_mlm=True)
