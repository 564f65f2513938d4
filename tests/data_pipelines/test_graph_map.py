"""data_pipelines.graph_map: `Dataset.map` traced as written, without
AutoGraph's conversion of the function's source."""
import numpy as np
import pytest
import tensorflow as tf

from cmlm.data_pipelines import graph_map


def _doubled_positives(x):
  return tf.where(x > 0, 2 * x, x)


def test_the_elements_are_those_of_dataset_map():
  dataset = tf.data.Dataset.from_tensor_slices(np.arange(-3, 4))
  mapped = graph_map.graph_map(dataset, _doubled_positives,
                               num_parallel_calls=tf.data.AUTOTUNE,
                               deterministic=True)
  assert list(mapped.as_numpy_iterator()) == list(
      dataset.map(_doubled_positives).as_numpy_iterator())


def _python_if(x):
  if x > 0:  # AutoGraph would make this a tf.cond
    return 2 * x
  return x


def test_the_function_is_not_converted():
  """A Python `if` on a tensor, which AutoGraph converts in `Dataset.map`,
  fails at tracing under `graph_map`: nothing is converted."""
  dataset = tf.data.Dataset.from_tensor_slices(np.arange(-1, 2))
  assert list(dataset.map(_python_if).as_numpy_iterator()) == [-1, 0, 2]
  with pytest.raises(TypeError, match="bool"):
    graph_map.graph_map(dataset, _python_if)


def test_a_callable_object_is_mapped():
  """The CMLM features are a callable object (`_CmlmFeatures`)."""
  class Add:
    def __call__(self, index, x):
      return index + x
  dataset = tf.data.Dataset.from_tensor_slices(np.array([5, 6], np.int64))
  assert list(graph_map.graph_map(dataset.enumerate(), Add())
              .as_numpy_iterator()) == [5, 7]
