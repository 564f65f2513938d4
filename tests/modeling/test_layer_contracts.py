"""Every custom Keras layer and model of the garden passes `run_layer_test`:
it builds and runs, its config round-trips (every constructor argument
included), it trains, and it saves and reloads.

(`PrincipalComponentRemoval` is a plain `tf.Module`, not a Keras layer; the
export tests save and serve it.)
"""
import pytest
import tensorflow as tf
import tf_keras

from cmlm.modeling import model_builder
from cmlm.modeling.bitext_loss import AdditiveMarginBitextLoss
from cmlm.modeling.conditional_mlm import ConditionalMaskedLM
from cmlm.modeling.conditional_mlm import ConditionalMlmHead
from cmlm.modeling.nli_head import NliHead
from cmlm.modeling.nli_head import NliModel
from cmlm.modeling.pooling import SentencePooling
from cmlm.modeling.projection_head import ProjectionHead
from cmlm.modeling.siamese_encoder import SiameseEncoder
from cmlm.modeling.siamese_encoder import build_transformer
from tests import helpers
from tests.layer_testing import run_layer_test

HIDDEN = helpers.tiny_model_config().encoder.hidden_size
BATCH, SEQ, PREDICTIONS, PROJECTIONS = 4, 10, 3, 3


def _transformer():
  return build_transformer(helpers.tiny_model_config().encoder, PROJECTIONS)


def _encoder():
  return model_builder.build_siamese_encoder(
      helpers.tiny_model_config(num_projections=PROJECTIONS), SEQ)


def _normal(*shape, seed=0):
  return tf.random.stateless_normal(shape, seed=[seed, len(shape)])


@pytest.mark.parametrize("mode", ["mean", "cls", "max"])
def test_sentence_pooling(mode):
  mask = tf.constant([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
  run_layer_test(SentencePooling, dict(mode=mode, name="pooling"),
                 (_normal(2, 5, 4), mask), expected_output_shape=(2, 4),
                 expected_output_dtype="float32",
                 expected_num_trainable_weights=0)


@pytest.mark.parametrize("num_projections", [1, 4])
def test_projection_head(num_projections):
  run_layer_test(
      ProjectionHead,
      dict(num_projections=num_projections,
           initializer=tf_keras.initializers.TruncatedNormal(stddev=0.02)),
      _normal(3, 8), expected_output_shape=(3, num_projections, 8),
      expected_num_trainable_weights=0 if num_projections == 1 else 6)


@pytest.mark.parametrize("pooling,representation",
                         [("mean", "pooled"), ("max", "proj")])
def test_sentence_encoder(pooling, representation):
  sequence = (BATCH, SEQ, HIDDEN)
  run_layer_test(
      SiameseEncoder,
      dict(transformer=_transformer(), pooling=pooling,
           sentence_representation=representation,
           projection_head=ProjectionHead(PROJECTIONS, name="projection_head"),
           name="sentence_encoder"),
      helpers.encoder_inputs(helpers.fake_batch(BATCH, SEQ, PREDICTIONS)),
      expected_output_shape=dict(default=(BATCH, HIDDEN),
                                 pooled_output=(BATCH, HIDDEN),
                                 sequence_output=sequence,
                                 encoder_outputs=[sequence]),
      expected_output_dtype="float32",
      # BERT's [CLS] pooler stays frozen, also after from_config.
      expected_num_non_trainable_weights=2)


@pytest.mark.parametrize("skip", [False, True])
def test_conditional_mlm_head(skip):
  positions = tf.tile([[1, 2, 3]], [BATCH, 1])
  run_layer_test(
      ConditionalMlmHead,
      dict(transformer=_transformer(), skip=skip, mlm_activation="gelu",
           mlm_initializer=tf_keras.initializers.TruncatedNormal(stddev=0.02),
           name="cmlm_head"),
      (_normal(BATCH, SEQ, HIDDEN), positions,
       _normal(BATCH, PROJECTIONS, HIDDEN)),
      expected_output_shape=(BATCH, PREDICTIONS, helpers.VOCAB_SIZE),
      expected_output_dtype="float32")


def test_conditional_masked_lm():
  encoder = _encoder()
  run_layer_test(
      ConditionalMaskedLM,
      dict(encoder=encoder, head=model_builder.build_cmlm_head(encoder),
           name="conditional_mlm"),
      helpers.fake_batch(BATCH, SEQ, PREDICTIONS),
      expected_output_shape=dict(
          mlm_logits=(BATCH, PREDICTIONS, helpers.VOCAB_SIZE),
          sentence_embedding=(BATCH, HIDDEN),
          projections=(BATCH, PROJECTIONS, HIDDEN)))


def test_nli_head():
  run_layer_test(NliHead, dict(num_classes=3, initializer="glorot_uniform"),
                 (_normal(BATCH, HIDDEN), _normal(BATCH, HIDDEN, seed=1)),
                 expected_output_shape=(BATCH, 3),
                 expected_num_trainable_weights=2)


def test_nli_head_with_a_hidden_layer():
  """Contextual lensing's two-layer Classifier (Kiros et al. 2020, 3.1)."""
  run_layer_test(NliHead, dict(num_classes=3, hidden_size=8),
                 (_normal(BATCH, HIDDEN), _normal(BATCH, HIDDEN, seed=1)),
                 expected_output_shape=(BATCH, 3),
                 expected_num_trainable_weights=4)


def test_nli_model():
  features = helpers.fake_batch(BATCH, SEQ, PREDICTIONS)
  pair = dict(
      **{f"premise_{k}": v
         for k, v in helpers.encoder_inputs(features, "s1_").items()},
      **{f"hypothesis_{k}": v
         for k, v in helpers.encoder_inputs(features, "s2_").items()})
  run_layer_test(NliModel, dict(encoder=_encoder(), num_classes=3,
                                name="nli_model"),
                 pair, expected_output_shape=dict(logits=(BATCH, 3)))


def test_additive_margin_bitext_loss():
  run_layer_test(
      AdditiveMarginBitextLoss, dict(margin=0.2, scale=5.0, normalize=True),
      (_normal(BATCH, 8), _normal(BATCH, 8, seed=1)), expected_output_shape=(),
      expected_output_dtype="float32", expected_num_trainable_weights=0)
