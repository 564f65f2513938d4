"""Test session set-up: Keras 2 first, and two logical CPUs for strategies.

The CPU is split into two logical devices before TensorFlow runs anything, so
tests can compare MirroredStrategy over two replicas with one device.
"""
import cmlm  # noqa: F401  (selects Keras 2 before TensorFlow loads)
import tensorflow as tf

_cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(
    _cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)
