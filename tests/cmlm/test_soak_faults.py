"""benchmarks/soak_faults.py, a few minutes' worth in one cycle: a `train`
and an `export --overwrite`, each killed (SIGKILL or SIGTERM) at a random
moment, then the checks with no faults: the run resumes to its step, every
published export loads and equals its checkpoint, no temporary file is
left. The long soak (30 minutes, a disk that fills and empties) is the
script's own run; here the disk is not filled."""
import importlib.util
import os

import pytest

from tests import helpers


def _soak_module():
  path = os.path.join(helpers.REPO_ROOT, "benchmarks", "soak_faults.py")
  spec = importlib.util.spec_from_file_location("soak_faults", path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


@pytest.mark.slow
def test_a_killed_train_and_export_lose_nothing(tmp_path):
  soak = _soak_module()
  result = soak.main(["--cycles=1", "--commands=train,export",
                      "--kill_probability=1", "--seed=3", "--no_disk_faults",
                      f"--workdir={tmp_path}"])
  assert result["lost"] == []
  # Each ended by its signal (or, an export with no checkpoint yet to read,
  # refused in one line), then the two runs of the checks.
  assert result["processes"] == 4
  assert (result["sigkill"] + result["sigterm"] +
          result["refused_one_line"]) == 2
  assert result["ok"] == 2
  final = result["final"]
  assert final["train"] == 0 and final["train_reached_step"]
  assert final["export"] == 0 and final["temporary_files"] == []
  assert final["exports"] and set(final["exports"].values()) == {"equal"}
