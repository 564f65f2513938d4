"""CMLM-CSE's layers pass `run_layer_test` (build, config, train, save)."""
import numpy as np
import tensorflow as tf

from cmlm.projects.simcse_cse.cmlm_cse_layers import CmlmCseHead
from cmlm.projects.simcse_cse.cmlm_cse_layers import LexicalFeatureExtractor
from cmlm.projects.simcse_cse.cmlm_cse_layers import SemanticFeatureFusioner
from cmlm.projects.simcse_cse.cmlm_cse_layers import SimcseMlp
from cmlm.modeling.siamese_encoder import build_transformer
from tests import helpers
from tests.layer_testing import run_layer_test

HIDDEN, BATCH, SEQ = 16, 2, 6


def _normal(*shape):
  return tf.constant(np.random.default_rng(0).normal(size=shape), tf.float32)


def _fusioner_args():
  mask = tf.ones([BATCH, SEQ], tf.int32)
  positions = tf.constant([[1, 2], [3, 0]], tf.int32)
  return (_normal(BATCH, HIDDEN), _normal(BATCH, SEQ, HIDDEN), mask,
          positions, _normal(helpers.VOCAB_SIZE, HIDDEN))


def test_simcse_mlp():
  run_layer_test(SimcseMlp, dict(initializer="glorot_uniform"),
                 _normal(3, HIDDEN), expected_output_shape=(3, HIDDEN),
                 expected_num_trainable_weights=2)


def test_semantic_feature_fusioner():
  run_layer_test(
      SemanticFeatureFusioner,
      dict(vocab_size=helpers.VOCAB_SIZE, num_layers=2, num_attention_heads=2,
           intermediate_size=32, activation="gelu", dropout_rate=0.0,
           attention_dropout_rate=0.0, norm_first=False,
           initializer="glorot_uniform"),
      _fusioner_args(), expected_output_shape=(BATCH, 2, helpers.VOCAB_SIZE),
      expected_output_dtype="float32")


def test_cmlm_cse_head():
  fusioner = SemanticFeatureFusioner(helpers.VOCAB_SIZE, num_layers=1,
                                     num_attention_heads=2,
                                     intermediate_size=32)
  run_layer_test(CmlmCseHead, dict(fusioner=fusioner, mlp=False),
                 _fusioner_args(),
                 expected_output_shape=(BATCH, 2, helpers.VOCAB_SIZE))


def test_lexical_feature_extractor_is_frozen():
  transformer = build_transformer(helpers.tiny_model_config().encoder, 3)
  ids = tf.constant([[2, 7, 8, 3, 0, 0]] * BATCH)
  layer = run_layer_test(
      LexicalFeatureExtractor, dict(transformer=transformer, num_layers=1),
      dict(input_word_ids=ids, input_mask=tf.cast(ids > 0, tf.int32),
           input_type_ids=tf.zeros_like(ids)),
      expected_output_shape=(BATCH, SEQ, HIDDEN),
      expected_num_trainable_weights=0, run_training_check=False)
  assert layer.non_trainable_weights
