"""benchmarks/soak_faults.py, a few minutes' worth in one cycle: a `train`,
an `export --overwrite`, an `import --overwrite` and a `fetch`, each killed
(SIGKILL or SIGTERM) at a random moment, then the checks with no faults:
the run resumes to its step, every published export loads and equals its
checkpoint, the imported run equals the export, the fetched files are the
mirror's, no temporary or lock file is left. The long soak (30 minutes, a disk that fills and empties) is the
script's own run; here the disk is not filled."""
import importlib.util
import os
import types

import pytest

from tests import helpers


def _soak_module():
  path = os.path.join(helpers.REPO_ROOT, "benchmarks", "soak_faults.py")
  spec = importlib.util.spec_from_file_location("soak_faults", path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def test_each_command_of_the_cycle_has_its_arguments():
  """The hook a new command uses: a line in COMMANDS, an argv_ method."""
  soak = _soak_module()
  for name in soak.COMMANDS:
    assert callable(getattr(soak.Soak, f"argv_{name}", None)), name
  with pytest.raises(SystemExit):
    soak.parse_args(["--commands=train,cluster"])  # not one of them


@pytest.mark.slow
def test_killed_train_export_import_and_fetch_lose_nothing(tmp_path, capsys):
  soak = _soak_module()
  commands = ["train", "export", "import", "fetch"]
  result = soak.main(["--cycles=1", f"--commands={','.join(commands)}",
                      "--kill_probability=1", "--seed=3", "--no_disk_faults",
                      f"--workdir={tmp_path}"])
  assert result["lost"] == []
  err = capsys.readouterr().err  # a line after the cycle, then the checks
  assert f"1 of 1 cycles: {len(commands)} processes" in err
  assert err.index("1 of 1 cycles") < err.index("final checks")
  # Each ended by its signal, refused in one line (nothing yet to read) or
  # finished before its signal came; then the runs of the checks.
  assert result["processes"] == 2 * len(commands)
  assert (result["ok"] + result["sigkill"] + result["sigterm"] +
          result["refused_one_line"]) == result["processes"]
  assert result["ok"] >= len(commands)
  final = result["final"]
  assert final["train"] == 0 and final["train_reached_step"]
  assert final["export"] == final["import"] == final["fetch"] == 0
  assert final["temporary_files"] == []
  assert final["exports"]["imported run"] == "equal"
  assert set(final["exports"].values()) == {"equal"}
  assert final["fetched"] and set(final["fetched"].values()) == {"equal"}
  for field in ("command", "commit", "cpu_model", "cpu_flags", "cores",
                "date", "load"):
    assert field in result, field


def test_each_cycle_s_line_says_how_far_and_how_the_processes_ended():
  soak = _soak_module()
  state = types.SimpleNamespace(counts=dict(
      cycles=3, processes=21, ok=12, sigkill=5, sigterm=3,
      refused_one_line=1), lost=[{"command": "export"}])
  by_minutes = soak.parse_args(["--minutes=20"])
  assert soak.progress(state, 430.0, by_minutes) == (
      "cycle 3, 7.2 of 20 min: 21 processes, 12 ok, 5 SIGKILL, 3 SIGTERM, "
      "1 refused in one line; 1 lost")
  by_cycles = soak.parse_args(["--cycles=5"])
  assert soak.progress(state, 430.0, by_cycles).startswith(
      "3 of 5 cycles: 21 processes")


def test_the_mined_pairs_check_counts_malformed_and_identical_rows(tmp_path):
  soak_module = _soak_module()
  soak = soak_module.Soak.__new__(soak_module.Soak)
  soak.out_dir = str(tmp_path)
  assert soak.mined_pairs() == {"pairs": 0, "identical": 0, "malformed": 0}
  (tmp_path / "pairs.tsv").write_text(
      "1.2\ta b\ta b\n1.1\tc\td\nnot a pair\n", encoding="utf-8")
  assert soak.mined_pairs() == {"pairs": 3, "identical": 1, "malformed": 1}
