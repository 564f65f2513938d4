"""Test session set-up (tests/ and projects/*/tests/): Keras 2 first, and
two logical CPUs for strategies.

The CPU is split into two logical devices before TensorFlow runs anything, so
tests can compare MirroredStrategy over two replicas with one device.
"""
import collections
import gc
import json
import os
import resource
import time
import types

# Under pytest-xdist, each worker (and each subprocess a test starts) gets
# its share of the cores for TensorFlow's op threads and OpenMP (FAISS,
# NumPy's BLAS) rather than a thread per core: with a worker per core, a
# pool of a thread per core in each spins against the other's.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
  for _variable in ("TF_NUM_INTRAOP_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_variable,
                          str(max(1, (os.cpu_count() or 1) // _WORKERS)))

import cmlm  # noqa: E402,F401  (selects Keras 2 before TensorFlow loads)
import pytest  # noqa: E402


def _runs_tests(config) -> bool:
  """False only in pytest-xdist's controller (`make test`'s `-n 2`), which
  hands the tests to its workers and runs none itself."""
  return (hasattr(config, "workerinput")
          or not getattr(config.option, "numprocesses", None))


def pytest_configure(config):
  """In a process that runs tests, before any is collected: the CPU split
  into two logical devices, and CMLM_TEST_TIMES's folder made. The controller never loads TensorFlow (seconds
  of the run's start, before its workers start). Python's cycle collector
  is paused while the tests are collected and the libraries they import
  load, as `python -m cmlm` pauses it (`cmlm/library_loading.py`);
  `pytest_collection_finish` resumes it."""
  if not _runs_tests(config):
    return
  gc.disable()
  if _TEST_TIMES:  # also when set by hand, not by the timer
    os.makedirs(_TEST_TIMES, exist_ok=True)
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  cpus = tf.config.list_physical_devices("CPU")
  tf.config.set_logical_device_configuration(
      cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)


# benchmarks/test_suite_time.py's folder for each test's start and end, a
# file per pytest-xdist worker (how busy each was, and when it finished),
# with the CPU seconds the worker itself and its finished subprocesses
# spent in it: a test much longer than its CPU seconds was waiting.
_TEST_TIMES = os.environ.get("CMLM_TEST_TIMES")


def _cpu_seconds():
  """(this process's, its waited-for children's) user + system seconds."""
  own = resource.getrusage(resource.RUSAGE_SELF)
  children = resource.getrusage(resource.RUSAGE_CHILDREN)
  return (own.ru_utime + own.ru_stime,
          children.ru_utime + children.ru_stime)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):  # pylint: disable=unused-argument
  start, cpu = time.time(), _cpu_seconds()
  yield
  worker = getattr(item.config, "workerinput", {}).get("workerid")
  if _TEST_TIMES and worker:
    own, children = (round(b - a, 3) for a, b in zip(cpu, _cpu_seconds()))
    with open(os.path.join(_TEST_TIMES, f"{worker}.jsonl"), "a",
              encoding="utf-8") as f:
      f.write(json.dumps({"test": item.nodeid, "start": start,
                          "end": time.time(), "cpu_s": own,
                          "subprocess_cpu_s": children}) + "\n")


def pytest_collection_finish(session):
  """The collector resumed, with what the libraries and the test modules
  created frozen out of its reach (they live as long as the session)."""
  if _runs_tests(session.config):
    gc.enable()
    gc.freeze()


def pytest_collection_modifyitems(config, items):  # pylint: disable=unused-argument
  """The files with the most end-to-end tests (marked slow) first, each
  file's tests in their order. Under pytest-xdist (`make test`, whose
  --no-loadscope-reorder keeps this order), the long files start first and
  the short ones fill the end, rather than a long file starting last while
  the other worker has nothing left to run."""
  slow = collections.Counter(item.nodeid.split("::")[0] for item in items
                             if item.get_closest_marker("slow"))
  items.sort(key=lambda item: -slow[item.nodeid.split("::")[0]])


@pytest.fixture(scope="session", autouse=True)
def basetemp_made_first(tmp_path_factory):
  """pytest's temporary root, made before any test runs: a local Dask
  cluster or Beam job makes its private temporary directory the process's
  while it runs (`atomic_file.private_temporary_directory`), and a root
  made in the meantime would be removed with it (every later `tmp_path`
  then missing; pytest-xdist gives its workers theirs at their start)."""
  return tmp_path_factory.getbasetemp()


@pytest.fixture(scope="session")
def two_cpu_strategies():
  """(OneDeviceStrategy, MirroredStrategy) over the two logical CPUs.

  One MirroredStrategy for the whole session: separate instances in one
  process reuse collective instance keys, and a later one's all-reduce then
  collides with an earlier one's all-gather.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  devices = [d.name for d in tf.config.list_logical_devices("CPU")][:2]
  assert len(devices) == 2, "the CPU is split into two logical devices above"
  return (tf.distribute.OneDeviceStrategy(devices[0]),
          tf.distribute.MirroredStrategy(devices))


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
  """A real 4-step cmlm/tiny run (tests/helpers.tiny_run_params), trained
  once per test session, for every pytest worker (tests/shared_builds.py):
  (model_dir, TrainResult). Read it; never write in it.

  In a worker that did not train it, the TrainResult's `model` holds only
  the `encoder` (what the tests compare with), rebuilt from the weights the
  training process held in memory when training returned (saved apart from
  the run's checkpoints), and `trainer` and `progress` are None.
  """
  from tests import helpers  # pylint: disable=g-import-not-at-top
  from tests import shared_builds  # pylint: disable=g-import-not-at-top
  from cmlm.training import train  # pylint: disable=g-import-not-at-top
  trained = []

  def build(directory):
    model_dir = os.path.join(directory, "run")
    trained.append(train.run(helpers.tiny_run_params(4), model_dir))
    trained[0].model.encoder.save_weights(
        os.path.join(directory, "in_memory", "encoder"))
    return model_dir

  model_dir = shared_builds.build_once(tmp_path_factory, "tiny_run", build)
  if trained:
    return model_dir, trained[0]
  encoder = shared_builds.encoder_held_in_memory(
      model_dir, os.path.join(os.path.dirname(model_dir), "in_memory",
                              "encoder"))
  return model_dir, train.TrainResult(types.SimpleNamespace(encoder=encoder),
                                      trainer=None, progress=None)


@pytest.fixture(scope="session")
def tiny_export(tiny_run, tmp_path_factory):
  """`tiny_run` exported once per test session (with the `.mlm`
  subobject), for every pytest worker: the `export.exporter.ExportResult`.
  Read it; never write in it."""
  from cmlm.export import exporter  # pylint: disable=g-import-not-at-top
  from tests import shared_builds  # pylint: disable=g-import-not-at-top
  return shared_builds.build_once(
      tmp_path_factory, "tiny_export",
      lambda directory: exporter.export_run(
          tiny_run[0], os.path.join(directory, "export"), export_mlm=True))


@pytest.fixture(scope="session")
def tiny(tiny_run, tiny_export):
  """The tiny run and its export together, with the run's tokenizer and
  in-memory model (tests/export/export_helpers.TinyExport)."""
  from tests.export import export_helpers  # pylint: disable=g-import-not-at-top
  return export_helpers.tiny_export(tiny_run, tiny_export)


@pytest.fixture(scope="session")
def minilm(tmp_path_factory):
  """all-MiniLM-L6-v2 as sentence-transformers runs it and as the garden
  imports and exports it (once per test session, for every pytest worker)
  (tests/export/export_helpers.MiniLM); skipped, saying why, without the
  test requirements."""
  from tests import shared_builds  # pylint: disable=g-import-not-at-top
  from tests.export import export_helpers  # pylint: disable=g-import-not-at-top
  peer, source_dir = export_helpers.load_sentence_transformer()
  imported, exported = shared_builds.build_once(
      tmp_path_factory, "minilm",
      lambda directory: export_helpers.minilm_export(source_dir, directory))
  return export_helpers.MiniLM(peer, source_dir, imported, exported)


@pytest.fixture(scope="session")
def installed_garden(tmp_path_factory):
  """The garden's wheel, built offline and installed into a directory once
  per test session, for every pytest worker (tests/helpers.install_wheel):
  that directory, for PYTHONPATH. Read it; never write in it."""
  from tests import helpers  # pylint: disable=g-import-not-at-top
  from tests import shared_builds  # pylint: disable=g-import-not-at-top
  return shared_builds.build_once(tmp_path_factory, "wheel",
                                  helpers.install_wheel)


@pytest.fixture(scope="session")
def tiny_artifacts_export(tiny_run, tmp_path_factory):
  """`tiny_run` exported once per test session, for every pytest worker,
  with the TFLite and ONNX artifacts and the sentence-transformers folder
  (`--formats=saved_model,tflite,onnx,sentence_transformers`): the
  ExportResult. Read it; never write in it."""
  from cmlm.export import exporter  # pylint: disable=g-import-not-at-top
  from tests import shared_builds  # pylint: disable=g-import-not-at-top
  return shared_builds.build_once(
      tmp_path_factory, "tiny_artifacts_export",
      lambda directory: exporter.export_run(
          tiny_run[0], os.path.join(directory, "export"),
          formats=("saved_model", "tflite", "onnx", "sentence_transformers")))
