"""Test session set-up (tests/ and projects/*/tests/): Keras 2 first, and
two logical CPUs for strategies.

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


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
  """A real 4-step cmlm/tiny run (tests/helpers.tiny_run_params), trained
  once per session: (model_dir, TrainResult). Read it; never write in it."""
  from tests import helpers  # pylint: disable=g-import-not-at-top
  from cmlm.training import train  # pylint: disable=g-import-not-at-top
  model_dir = str(tmp_path_factory.mktemp("tiny_run"))
  return model_dir, train.run(helpers.tiny_run_params(4), model_dir)


@pytest.fixture(scope="session")
def tiny_export(tiny_run, tmp_path_factory):
  """`tiny_run` exported once per session (with the `.mlm` subobject):
  the `export.exporter.ExportResult`."""
  from cmlm.export import exporter  # pylint: disable=g-import-not-at-top
  export_dir = str(tmp_path_factory.mktemp("tiny_export") / "export")
  return exporter.export_run(tiny_run[0], export_dir, export_mlm=True)


@pytest.fixture(scope="session")
def tiny(tiny_run, tiny_export):
  """The tiny run and its export together, with the run's tokenizer and
  in-memory model (tests/export/export_helpers.TinyExport)."""
  from tests.export import export_helpers  # pylint: disable=g-import-not-at-top
  return export_helpers.tiny_export(tiny_run, tiny_export)


@pytest.fixture(scope="session")
def minilm(tmp_path_factory):
  """all-MiniLM-L6-v2 as sentence-transformers runs it and as the garden
  imports and exports it, once per session
  (tests/export/export_helpers.MiniLM); skipped, saying why, without the
  test requirements."""
  from tests.export import export_helpers  # pylint: disable=g-import-not-at-top
  return export_helpers.minilm_export(str(tmp_path_factory.mktemp("minilm")))


@pytest.fixture(scope="session")
def installed_garden(tmp_path_factory):
  """The garden's wheel, built offline and installed into a directory once
  per session (tests/helpers.install_wheel): that directory, for
  PYTHONPATH. Read it; never write in it."""
  from tests import helpers  # pylint: disable=g-import-not-at-top
  return helpers.install_wheel(str(tmp_path_factory.mktemp("wheel")))


@pytest.fixture(scope="session")
def tiny_artifacts_export(tiny_run, tmp_path_factory):
  """`tiny_run` exported once per session with the TFLite and ONNX
  artifacts and the sentence-transformers folder
  (`--formats=saved_model,tflite,onnx,sentence_transformers`): the
  ExportResult."""
  from cmlm.export import exporter  # pylint: disable=g-import-not-at-top
  export_dir = str(tmp_path_factory.mktemp("tiny_artifacts") / "export")
  return exporter.export_run(tiny_run[0], export_dir,
                             formats=("saved_model", "tflite", "onnx",
                                      "sentence_transformers"))
