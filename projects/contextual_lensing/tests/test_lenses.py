"""Contextual lenses (Kiros et al. 2020, section 3) over token states."""
import numpy as np
import pytest
import tensorflow as tf

from cmlm.projects.contextual_lensing import lenses
from cmlm.modeling import model_builder
from cmlm.modeling import pooling
from tests import helpers
from tests.layer_testing import run_layer_test

HIDDEN = 8


def _states(batch=3, time=6, seed=0):
  rng = np.random.default_rng(seed)
  states = rng.normal(size=[batch, time, HIDDEN]).astype(np.float32)
  lengths = [time, 4, 1][:batch]
  mask = np.zeros([batch, time], np.int32)
  for row, length in enumerate(lengths):
    mask[row, :length] = 1
  return tf.constant(states), tf.constant(mask)


def _padded(states, mask, extra):
  """The same sentences with `extra` more padded positions, whose states
  are large garbage (what a transformer emits at padding)."""
  garbage = 100.0 * tf.ones([states.shape[0], extra, states.shape[2]])
  return (tf.concat([states, garbage], axis=1),
          tf.concat([mask, tf.zeros([mask.shape[0], extra], tf.int32)], 1))


LENSES = [
    (lenses.MeanPoolLens, {}),
    (lenses.SimpleLens, {"output_size": 5}),
    (lenses.GatedConvLens, {"output_size": 5, "gating_size": 4,
                            "num_conv_layers": 2, "kernel_widths": [3, 2]}),
]


@pytest.mark.parametrize("lens_cls,kwargs", LENSES)
def test_adding_padding_does_not_change_the_output(lens_cls, kwargs):
  lens = lens_cls(**kwargs)
  states, mask = _states()
  # Garbage at the existing padded positions too: it must not leak either.
  garbage_mask = tf.cast(mask, tf.float32)[:, :, None]
  states = states * garbage_mask + 50.0 * (1.0 - garbage_mask)
  expected = lens(states, mask).numpy()
  for extra in (1, 5):
    np.testing.assert_allclose(lens(*_padded(states, mask, extra)).numpy(),
                               expected, rtol=1e-5, atol=1e-5)


def test_simple_lens_is_relu_of_a_linear_map_max_pooled_over_real_tokens():
  lens = lenses.SimpleLens(output_size=5)
  states, mask = _states()
  lens(states, mask)  # builds the variables
  kernel, bias = lens.dense.kernel.numpy(), lens.dense.bias.numpy()
  bias[:] = np.linspace(-0.5, 0.5, 5)  # a non-zero bias, as trained
  lens.dense.bias.assign(bias)
  output = lens(states, mask).numpy()
  for row in range(3):
    length = int(mask[row].numpy().sum())
    tokens = states[row, :length].numpy()  # [length, hidden]
    expected = np.maximum(tokens @ kernel + bias, 0.0).max(axis=0)
    np.testing.assert_allclose(output[row], expected, rtol=1e-5, atol=1e-6)


def test_gated_conv_ends_in_tanh_and_sigmoid_with_a_residual_gate():
  lens = lenses.GatedConvLens(output_size=5, gating_size=4,
                              num_conv_layers=2, kernel_widths=[3])
  states, mask = _states()
  lens(states, mask)
  activations = [(c.name, c.activation.__name__) for c in
                 lens.encoder_convolutions + lens.controller_convolutions]
  assert activations == [("encoder_1", "relu"), ("encoder_2", "tanh"),
                         ("controller_1", "relu"), ("controller_2", "sigmoid")]
  assert [c.kernel_size[0] for c in lens.encoder_convolutions] == [3, 3]
  # F' = H_M * G_M + G_0: with the encoder's last layer at 0 (tanh(0) = 0),
  # F' is G_0 alone, so the output is the fusion of G_0.
  last = lens.encoder_convolutions[-1]
  last.kernel.assign(tf.zeros_like(last.kernel))
  last.bias.assign(tf.zeros_like(last.bias))
  gate_0 = lens.controller_input(states) * tf.cast(mask, tf.float32)[:, :,
                                                                     None]
  expected = pooling.masked_max_pool(lens.fusion(gate_0), mask)
  np.testing.assert_allclose(lens(states, mask), expected, rtol=1e-5,
                             atol=1e-6)


def test_mean_pool_lens_averages_real_tokens():
  states, mask = _states()
  output = lenses.MeanPoolLens()(states, mask).numpy()
  np.testing.assert_allclose(output[1], states[1, :4].numpy().mean(0),
                             rtol=1e-6)


@pytest.mark.parametrize("lens_cls,kwargs", LENSES[1:])
def test_layer_contract(lens_cls, kwargs):
  states, mask = _states()
  run_layer_test(lens_cls, kwargs, (states, mask),
                 expected_output_shape=(3, 5))


def test_binary_active_fraction_follows_the_threshold():
  lens = lenses.SimpleLens(output_size=64)
  states, mask = _states(seed=1)
  output = lens(states, mask)
  fractions = [float(tf.reduce_mean(lenses.binary_vectors(output, t)))
               for t in (0.0, 0.5, 1.0, 2.0, 1e9)]
  assert fractions[0] == 1.0 and fractions[-1] == 0.0  # ReLU >= 0
  assert all(a >= b for a, b in zip(fractions, fractions[1:]))
  assert fractions[1] > fractions[3]
  np.testing.assert_allclose(fractions[2],
                             np.mean(output.numpy() >= 1.0))


def test_config_errors_are_one_clear_sentence():
  with pytest.raises(ValueError, match="model.pooling_head.type must be 'none' or a registered"):
    lenses.LensConfig(type="conv").validate()
  with pytest.raises(ValueError, match="kernel_widths must be one positive"):
    lenses.LensConfig(type="gated_conv", num_conv_layers=2,
                      kernel_widths=[3, 3, 3]).validate()
  with pytest.raises(ValueError, match='sentence_representation="pooled"'):
    helpers.tiny_model_config(pooling_head=lenses.LensConfig(type="simple"),
                              sentence_representation="proj").validate()


def test_frozen_core_encoder_trains_only_the_lens_and_ignores_dropout():
  config = helpers.tiny_model_config(
      pooling_head=lenses.LensConfig(type="gated_conv", output_size=6, gating_size=4),
      trainable_core=False)
  config.encoder.dropout_rate = 0.5
  encoder = model_builder.build_siamese_encoder(config, seq_length=10)
  inputs = helpers.encoder_inputs(helpers.fake_batch())
  training_output = encoder(inputs, training=True)
  assert training_output["default"].shape == (4, 6)
  trainable = {w.name for w in encoder.trainable_weights}
  assert trainable and all("pooling_head" in name for name in trainable)
  # The core runs with training=False: its states do not see dropout.
  np.testing.assert_allclose(training_output["sequence_output"],
                             encoder(inputs, training=False)[
                                 "sequence_output"])
  restored = type(encoder).from_config(encoder.get_config())
  assert isinstance(restored.pooling_head, lenses.GatedConvLens)
  assert not restored.trainable_core
