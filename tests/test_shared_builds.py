"""tests/shared_builds.py: a session build shared by the pytest workers is
built once, and its failure reaches every test that uses it.

A second `build_once` call with the same name stands for the worker that
asks later: it finds the first one's record under the lock.
"""
import os
import uuid

import numpy as np
import pytest

from tests import shared_builds


def _never(directory):
  raise AssertionError(f"built a second time in {directory}")


def _name():
  return f"test-{uuid.uuid4().hex}"


def test_a_later_worker_takes_the_builder_s_result(tmp_path_factory):
  name = _name()
  built = []

  def build(directory):
    with open(os.path.join(directory, "made"), "w") as f:
      f.write("once")
    built.append(directory)
    return {"directory": directory, "step": 4}

  first = shared_builds.build_once(tmp_path_factory, name, build)
  later = shared_builds.build_once(tmp_path_factory, name, _never)
  assert later == first and len(built) == 1
  assert os.listdir(first["directory"]) == ["made"]
  assert os.path.dirname(first["directory"]) == shared_builds.shared_root(
      tmp_path_factory)


def test_a_failed_build_fails_every_later_caller_with_its_error(
    tmp_path_factory):
  name = _name()

  def build(directory):
    raise ValueError("the vocabulary file is empty")

  with pytest.raises(ValueError, match="vocabulary file is empty"):
    shared_builds.build_once(tmp_path_factory, name, build)
  with pytest.raises(pytest.fail.Exception) as failed:
    shared_builds.build_once(tmp_path_factory, name, _never)
  assert name in str(failed.value)
  assert "ValueError: the vocabulary file is empty" in str(failed.value)
  assert "Traceback" in str(failed.value)  # where the builder failed


def test_a_skipped_build_skips_every_later_caller_saying_why(
    tmp_path_factory):
  name = _name()

  def build(directory):
    pytest.skip("torch (CPU) is a test dependency")

  with pytest.raises(pytest.skip.Exception):
    shared_builds.build_once(tmp_path_factory, name, build)
  with pytest.raises(pytest.skip.Exception, match="torch .CPU. is a test"):
    shared_builds.build_once(tmp_path_factory, name, _never)


def test_a_builder_that_died_is_built_again_from_a_clean_folder(
    tmp_path_factory):
  """A worker killed mid-build leaves a half-written folder and no record:
  the next caller builds again, from an empty folder."""
  name = _name()
  half = os.path.join(shared_builds.shared_root(tmp_path_factory), name)
  os.makedirs(half)
  with open(os.path.join(half, "half-written"), "w") as f:
    f.write("x")
  seen = shared_builds.build_once(tmp_path_factory, name, os.listdir)
  assert seen == []


def test_a_build_that_never_ends_fails_its_waiters(tmp_path_factory,
                                                   monkeypatch):
  """A waiter gives up after WAIT_SECONDS, naming the build, rather than
  hanging the session (here the lock is held by another open file)."""
  import fcntl  # pylint: disable=g-import-not-at-top
  name = _name()
  monkeypatch.setattr(shared_builds, "WAIT_SECONDS", 1)
  root = shared_builds.shared_root(tmp_path_factory)
  with open(os.path.join(root, f"{name}.lock"), "w") as holder:
    fcntl.flock(holder, fcntl.LOCK_EX)
    with pytest.raises(pytest.fail.Exception, match=f"build {name!r}"):
      shared_builds.build_once(tmp_path_factory, name, _never)


def test_a_later_worker_s_encoder_embeds_as_the_trained_one(tiny_run):
  """The encoder another worker rebuilds from the weights saved when the
  tiny run trained gives the embeddings of the encoder training returned."""
  from tests.export import export_helpers  # pylint: disable=g-import-not-at-top
  model_dir, trained = tiny_run
  weights = os.path.join(os.path.dirname(model_dir), "in_memory", "encoder")
  rebuilt = shared_builds.encoder_held_in_memory(model_dir, weights)
  tiny = export_helpers.tiny_export(tiny_run, None)
  inputs = tiny.tokenizer.tokenize_and_pack(
      export_helpers.tf.constant(export_helpers.SENTENCES))
  np.testing.assert_allclose(
      rebuilt(inputs, training=False)["default"].numpy(),
      trained.model.encoder(inputs, training=False)["default"].numpy(),
      atol=1e-6, rtol=0)
  assert len(rebuilt.weights) == len(trained.model.encoder.weights)
