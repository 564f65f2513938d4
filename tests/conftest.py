"""Test session set-up: Keras 2 first, and two logical CPUs for strategies.

The CPU is split into two logical devices before TensorFlow runs anything, so
tests can compare MirroredStrategy over two replicas with one device.
"""
import cmlm  # noqa: F401  (selects Keras 2 before TensorFlow loads)
import tensorflow as tf

_cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(
    _cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)


import pytest  # noqa: E402


@pytest.fixture(scope="session")
def two_cpu_strategies():
  """(OneDeviceStrategy, MirroredStrategy) over the two logical CPUs.

  One MirroredStrategy for the whole session: separate instances in one
  process reuse collective instance keys, and a later one's all-reduce then
  collides with an earlier one's all-gather.
  """
  devices = [d.name for d in tf.config.list_logical_devices("CPU")][:2]
  assert len(devices) == 2, "the CPU is split into two logical devices above"
  return (tf.distribute.OneDeviceStrategy(devices[0]),
          tf.distribute.MirroredStrategy(devices))
