"""Session builds shared by the pytest-xdist workers (`make test`: -n 2).

A session fixture runs once per worker process, so under two workers the
tiny run, its exports, the imported all-MiniLM-L6-v2 and the wheel were each
built twice. `build_once` builds such a thing once per test session: the
first worker to ask builds it in a folder both workers see (the parent of
the workers' base temporaries, as pytest-xdist's documentation recommends),
under a file lock; a worker that asks later waits on the lock, then takes
what the builder recorded. Without xdist it is an ordinary session build.

A build that fails fails every test that uses it, in every worker, with the
builder's error; a builder that dies leaves no record, and the next worker
to ask builds it again (the lock is released with the process).
"""
import fcntl
import os
import pickle
import shutil
import time
import traceback

import pytest

from cmlm.data_pipelines import atomic_file

BUILT, SKIPPED, FAILED = "built", "skipped", "failed"
# Longer than any build takes on a loaded machine.
WAIT_SECONDS = 1800


# A test session started by a test (tests/test_projects_removable.py runs
# the core's tests in a copy of the tree) takes the builds of the session
# that started it from the folder this names.
ROOT_VARIABLE = "CMLM_TEST_SHARED_BUILDS"


def shared_root(tmp_path_factory) -> str:
  """The folder that every worker of this test session sees."""
  if os.environ.get(ROOT_VARIABLE):
    return os.environ[ROOT_VARIABLE]
  base = tmp_path_factory.getbasetemp()
  if os.environ.get("PYTEST_XDIST_WORKER"):
    base = base.parent  # .../pytest-N/popen-gwK -> .../pytest-N
  return str(base)


def build_once(tmp_path_factory, name: str, build):
  """`build(directory)` run once per test session, in `<root>/<name>`.

  Returns what `build` returned (it must pickle); in the worker that built
  it, that very object. `build` raising skips or fails every caller alike.
  """
  root = shared_root(tmp_path_factory)
  directory = os.path.join(root, name)
  record = os.path.join(root, f"{name}.outcome")
  with open(os.path.join(root, f"{name}.lock"), "w") as lock:
    _wait_for(lock, name)  # released when closed, or at the holder's death
    if os.path.exists(record):
      with open(record, "rb") as f:
        outcome, value = pickle.load(f)
    else:
      # A builder that died mid-way left its folder half written.
      shutil.rmtree(directory, ignore_errors=True)
      os.makedirs(directory)
      try:
        value = build(directory)
      except pytest.skip.Exception as skipped:
        _write(record, (SKIPPED, str(skipped)))
        raise
      except Exception:  # an interrupt is not recorded: it is no outcome
        _write(record, (FAILED, traceback.format_exc()))
        raise
      _write(record, (BUILT, value))
      return value
  if outcome == SKIPPED:
    pytest.skip(value)
  if outcome == FAILED:
    pytest.fail(f"The shared build {name!r} failed in another pytest "
                f"worker:\n{value}", pytrace=False)
  return value


def _wait_for(lock, name: str) -> None:
  """Takes `lock` (exclusive), or fails after WAIT_SECONDS: a build that
  never ends fails its users rather than hanging the session."""
  deadline = time.monotonic() + WAIT_SECONDS
  while True:
    try:
      fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
      return
    except BlockingIOError:
      if time.monotonic() > deadline:
        pytest.fail(f"Waited {WAIT_SECONDS} s for another pytest worker "
                    f"to build {name!r}.", pytrace=False)
      time.sleep(0.5)


def encoder_held_in_memory(model_dir: str, weights: str):
  """The encoder of the run in `model_dir` with `weights` (what its training
  process held in memory, saved with `save_weights`), every one restored."""
  from cmlm.modeling import model_builder  # pylint: disable=g-import-not-at-top
  from cmlm.training import run_dir  # pylint: disable=g-import-not-at-top
  task = run_dir.load_params(model_dir).task
  seq_length = task.tokenization.seq_length
  encoder = model_builder.build_siamese_encoder(task.model, seq_length)
  encoder(run_dir.dummy_encoder_inputs(seq_length))
  encoder.load_weights(weights).assert_consumed()
  return encoder


def _write(path: str, outcome) -> None:
  """`outcome` pickled into `path`, whole or not at all."""
  with atomic_file.atomic_file(path) as temporary:
    with open(temporary, "wb") as f:
      pickle.dump(outcome, f)
