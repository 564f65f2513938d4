"""keras-hub's `run_layer_test` habit: one contract check for every layer.

`run_layer_test` builds a custom Keras layer (or model) and calls it, round
trips its config, takes a training step, and saves and reloads it (a
SavedModel and a checkpoint), so each layer's test file keeps only the
properties of the method.
"""
import copy
import inspect
import json
import os
import tempfile

import numpy as np
import tensorflow as tf
import tf_keras

_PLAIN = (bool, int, float, str, type(None))


def run_layer_test(layer_cls, init_kwargs, input_data,
                   expected_output_shape=None, expected_output_dtype=None,
                   expected_num_trainable_weights=None,
                   expected_num_non_trainable_weights=None,
                   run_training_check=True, run_saving_check=True,
                   tolerance=1e-5):
  """Checks `layer_cls(**init_kwargs)` on `input_data`; returns the layer.

  Args:
    layer_cls: the layer (or model) class.
    init_kwargs: its constructor arguments.
    input_data: one tensor or a dict (the single positional argument), or a
      tuple of positional arguments.
    expected_output_shape: a shape tuple, or a dict / list of them, matching
      the output's structure (dict keys left out are not checked).
    expected_output_dtype: the dtype of every output tensor.
    expected_num_trainable_weights, expected_num_non_trainable_weights:
      the built layer's weight counts.
    run_training_check: take a gradient and an SGD step (skipped anyway for
      layers without trainable weights, beyond the inputs' gradients).
    run_saving_check: SavedModel and checkpoint round trips.
    tolerance: absolute and relative tolerance of output comparisons.
  """
  args = input_data if isinstance(input_data, tuple) else (input_data,)
  layer = layer_cls(**init_kwargs)
  outputs = _call(layer, args)
  # (a) Build and call.
  if expected_output_shape is not None:
    _check_shapes(outputs, expected_output_shape, "output")
  for output in tf.nest.flatten(outputs):
    assert np.all(np.isfinite(output)), "non-finite output"
    if expected_output_dtype is not None:
      assert output.dtype == tf.as_dtype(expected_output_dtype), output.dtype
  if expected_num_trainable_weights is not None:
    assert len(layer.trainable_weights) == expected_num_trainable_weights
  if expected_num_non_trainable_weights is not None:
    assert (len(layer.non_trainable_weights)
            == expected_num_non_trainable_weights)

  # (b) get_config -> from_config, and Keras (de)serialization through JSON.
  config = layer.get_config()
  _check_config_names(layer_cls, config, init_kwargs)
  clone = layer_cls.from_config(copy.deepcopy(config))
  assert _plain(clone.get_config()) == _plain(config), "config round trip"
  _assert_close(_copy_weights(layer, clone, args), outputs, tolerance,
                "from_config clone with copied weights")
  serialized = json.loads(json.dumps(
      tf_keras.saving.serialize_keras_object(layer)))
  revived = tf_keras.saving.deserialize_keras_object(serialized)
  assert type(revived) is layer_cls, "class not registered for Keras"

  # (d) SavedModel and checkpoint round trips.
  if run_saving_check:
    with tempfile.TemporaryDirectory() as directory:
      _assert_close(_saved_model_outputs(layer, args, directory), outputs,
                    tolerance, "reloaded SavedModel")
      path = tf.train.Checkpoint(layer=layer).write(
          os.path.join(directory, "ckpt"))
      fresh = layer_cls.from_config(copy.deepcopy(config))
      _call(fresh, args)  # built, then restored
      tf.train.Checkpoint(layer=fresh).read(path).assert_consumed()
      _assert_close(_call(fresh, args), outputs, tolerance,
                    "fresh layer restored from a checkpoint")

  # (c) A training step (last: it changes the layer's weights).
  if run_training_check:
    _check_training_step(layer, args, outputs)
  return layer


def _call(layer, args, training=False):
  return layer(*args, training=training)


def _check_shapes(outputs, expected, where):
  if isinstance(expected, dict):
    for key, shape in expected.items():
      _check_shapes(outputs[key], shape, f"{where}[{key!r}]")
  elif isinstance(expected, list):
    assert len(outputs) == len(expected), f"{where}: {len(outputs)} outputs"
    for i, (output, shape) in enumerate(zip(outputs, expected)):
      _check_shapes(output, shape, f"{where}[{i}]")
  else:
    assert tuple(outputs.shape) == tuple(expected), (
        f"{where} has shape {tuple(outputs.shape)}, expected {expected}")


def _check_config_names(layer_cls, config, init_kwargs):
  """Every constructor argument is in the config, with the value given."""
  parameters = inspect.signature(layer_cls.__init__).parameters.values()
  names = [p.name for p in parameters if p.name != "self" and p.kind in (
      p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
  missing = [name for name in names if name not in config]
  assert not missing, f"{layer_cls.__name__}.get_config() lacks {missing}"
  for key, value in init_kwargs.items():
    # (A name like "gelu" or "glorot_uniform" may come back serialized.)
    if isinstance(value, _PLAIN) and not isinstance(config.get(key), dict):
      assert config.get(key) == value, (
          f"get_config()[{key!r}] is {config.get(key)!r}, given {value!r}")
  json.dumps(config)  # serializable


def _plain(config):
  return json.loads(json.dumps(config, sort_keys=True))


def _copy_weights(source, target, args):
  """Builds `target`, gives it `source`'s weights; returns its outputs."""
  _call(target, args)
  for attribute in ("trainable_weights", "non_trainable_weights"):
    shapes = [w.shape.as_list() for w in getattr(source, attribute)]
    assert [w.shape.as_list() for w in getattr(target, attribute)] == shapes, (
        f"{attribute} differ after from_config")
  target.set_weights(source.get_weights())
  return _call(target, args)


def _saved_model_outputs(layer, args, directory):
  """Outputs of `layer`'s call, saved in a SavedModel and reloaded."""
  module = tf.Module()
  # Only the variables are tracked (as in the export): tracking the layer
  # itself would also trace each Keras sublayer, slowly.
  module.layer_variables = list(layer.variables)
  specs = [tf.nest.map_structure(_batch_spec, arg) for arg in args]
  module.serve = tf.function(lambda *a: _call(layer, a), input_signature=specs,
                             autograph=False)  # as the export's
  path = os.path.join(directory, "saved_model")
  tf.saved_model.save(module, path)
  loaded = tf.saved_model.load(path)  # holds the variables while it serves
  return loaded.serve(*args)


def _batch_spec(tensor):
  """The tensor's spec with the batch dimension left open."""
  tensor = tf.convert_to_tensor(tensor)
  shape = tensor.shape.as_list()
  return tf.TensorSpec([None] + shape[1:] if shape else [], tensor.dtype)


def _check_training_step(layer, args, outputs):
  weights = layer.trainable_weights
  inputs = [x for x in tf.nest.flatten(args) if x.dtype.is_floating]
  with tf.GradientTape() as tape:
    tape.watch(inputs)
    loss = tf.add_n([tf.reduce_mean(tf.square(tf.cast(y, tf.float32)))
                     for y in tf.nest.flatten(_call(layer, args, True))
                     if y.dtype.is_floating])
  gradients, input_gradients = tape.gradient(loss, (weights, inputs))
  for gradient in gradients + input_gradients:
    if gradient is not None:
      assert np.all(np.isfinite(tf.convert_to_tensor(gradient))), "gradient"
  if not weights:
    return
  used = [(g, w) for g, w in zip(gradients, weights) if g is not None]
  assert any(np.any(tf.convert_to_tensor(g) != 0) for g, _ in used), (
      "every gradient w.r.t. the trainable weights is zero or None")
  tf_keras.optimizers.SGD(0.1).apply_gradients(used)
  after = tf.nest.flatten(_call(layer, args))
  assert any(not np.array_equal(a, b)
             for a, b in zip(after, tf.nest.flatten(outputs))), (
                 "an SGD step left the output unchanged")


def _assert_close(actual, expected, tolerance, what):
  tf.nest.assert_same_structure(actual, expected)
  for a, e in zip(tf.nest.flatten(actual), tf.nest.flatten(expected)):
    np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=tolerance,
                               atol=tolerance, err_msg=what)
