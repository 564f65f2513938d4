"""data_pipelines/atomic_file.py: a file appears complete or not at all."""
import os
import subprocess
import sys
import tempfile

import pytest

from cmlm.data_pipelines import atomic_file


def test_the_file_appears_only_when_the_block_ends(tmp_path):
  target = tmp_path / "vocab.txt"
  target.write_text("old\n")
  with atomic_file.atomic_file(str(target)) as temporary:
    with open(temporary, "w", encoding="utf-8") as f:
      f.write("new\n")
    assert target.read_text() == "old\n"  # not yet replaced
  assert target.read_text() == "new\n"
  assert os.listdir(tmp_path) == ["vocab.txt"]


def test_a_failure_leaves_the_target_as_it_was_and_no_temporary(tmp_path):
  target = tmp_path / "report.json"
  target.write_text("{}\n")
  with pytest.raises(RuntimeError):
    with atomic_file.atomic_file(str(target)) as temporary:
      with open(temporary, "w", encoding="utf-8") as f:
        f.write('{"half": ')
      raise RuntimeError("disk full")
  assert target.read_text() == "{}\n"
  assert os.listdir(tmp_path) == ["report.json"]
  with pytest.raises(RuntimeError):  # nothing written, nothing left
    with atomic_file.atomic_file(str(tmp_path / "new.txt")):
      raise RuntimeError("no input")
  assert os.listdir(tmp_path) == ["report.json"]


def test_a_json_file_is_whole_or_the_old_one(tmp_path):
  """`write_json`: indented, one trailing newline; a value JSON cannot hold
  leaves the old file and no temporary."""
  import json  # pylint: disable=g-import-not-at-top
  target = tmp_path / "results.json"
  atomic_file.write_json(str(target), {"rows": [1, 2]})
  assert target.read_text() == '{\n "rows": [\n  1,\n  2\n ]\n}\n'
  with pytest.raises(TypeError):
    atomic_file.write_json(str(target), {"rows": object()})
  assert json.loads(target.read_text()) == {"rows": [1, 2]}
  assert os.listdir(tmp_path) == ["results.json"]


def test_a_killed_writer_s_temporary_is_removed_by_the_next_writer(tmp_path):
  """SIGKILL leaves a temporary file; the next writer of the same target on
  this host removes it, not a live process's, another target's or another
  host's."""
  dead = subprocess.Popen([sys.executable, "-c", "pass"])
  dead.wait()
  host = atomic_file._HOST  # pylint: disable=protected-access
  names = {"stale": f".tmp-{host}-{dead.pid}-e.npy",
           "live": f".tmp-{host}-{os.getppid()}-e.npy",
           "other target": f".tmp-{host}-{dead.pid}-f.npy",
           "other host": f".tmp-elsewhere-{dead.pid}-e.npy"}
  for name in names.values():
    (tmp_path / name).write_bytes(b"\x93NUMPY half")
  with atomic_file.atomic_file(str(tmp_path / "e.npy")) as temporary:
    with open(temporary, "wb") as f:
      f.write(b"whole")
  assert sorted(os.listdir(tmp_path)) == sorted(
      ["e.npy"] + [names["live"], names["other target"], names["other host"]])


def test_a_private_temporary_directory_holds_what_children_leave_then_goes(
    tmp_path, monkeypatch, capfd):
  """What Beam's runners and Dask's workers leave in the system's temporary
  directory (empty `beam-temp*`, `tmp*`, `dask-scratch-space`) goes with the
  job's own one; one a killed job left goes at the next start."""
  system = tmp_path / "system"
  system.mkdir()
  monkeypatch.setattr(tempfile, "tempdir", str(system))
  monkeypatch.setenv("TMPDIR", str(system))
  dead = subprocess.Popen([sys.executable, "-c", "pass"])
  dead.wait()
  host = atomic_file._HOST  # pylint: disable=protected-access
  stale = system / f".tmp-{host}-{dead.pid}-cmlm-beam"
  live = system / f".tmp-{host}-{os.getppid()}-cmlm-beam"
  for leftover in (stale, live):
    (leftover / "beam-temp1").mkdir(parents=True)
  with atomic_file.private_temporary_directory("cmlm-beam") as directory:
    assert tempfile.gettempdir() == directory == os.environ["TMPDIR"]
    assert os.path.dirname(directory) == str(system)
    child = subprocess.run(  # a runner's process: TMPDIR is its tempdir
        [sys.executable, "-c", "import tempfile; print(tempfile.mkdtemp())"],
        capture_output=True, text=True, check=True)
    assert os.path.dirname(child.stdout.strip()) == directory
    with atomic_file.private_temporary_directory("cmlm-dask") as inner:
      assert inner == directory  # nested: the outermost one
      tempfile.mkdtemp(prefix="beam-temp")
    assert os.path.isdir(directory)
  assert sorted(os.listdir(system)) == [live.name]
  assert tempfile.gettempdir() == str(system)
  assert os.environ["TMPDIR"] == str(system)
  assert capfd.readouterr().err.splitlines() == [
      f"Removed {stale}, left by process {dead.pid}, which no longer runs."]


def test_a_private_temporary_directory_goes_on_an_error_too(tmp_path,
                                                           monkeypatch):
  monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
  monkeypatch.delenv("TMPDIR", raising=False)
  with pytest.raises(KeyboardInterrupt):
    with atomic_file.private_temporary_directory("cmlm-beam"):
      tempfile.mkdtemp()
      raise KeyboardInterrupt
  assert os.listdir(tmp_path) == []
  assert "TMPDIR" not in os.environ
