"""No leftovers: a writer killed with SIGKILL at any point leaves at most its
`.tmp-<host>-<pid>-<target>` temporary, and the next writer of that target
removes it at its start, with one line, whatever the target's name; a live
writer's, and another target's, are left alone."""
import os
import random
import subprocess
import sys
import time

import pytest
import tensorflow as tf

from cmlm.data_pipelines import atomic_file
from cmlm.training import atomic
from tests import helpers

WRITER = """
import os, sys, time
sys.path.insert(0, {repo!r})
from cmlm.training import atomic
print("started", flush=True)
with atomic.atomic_directory({target!r}, overwrite=True) as temporary:
  for i in range(400):
    with open(os.path.join(temporary, f"part-{{i}}"), "w") as f:
      f.write("x" * 1000)
    time.sleep(0.002)
print("done", flush=True)
"""


def _leftovers(directory):
  return sorted(n for n in os.listdir(directory) if n.startswith(".tmp-"))


@pytest.mark.parametrize("name", ["3", "run-1", "a b.c-d"])
def test_a_writer_killed_at_random_points_leaves_nothing_after_the_next(
    tmp_path, capfd, name):
  rng = random.Random(name)
  target = str(tmp_path / "out" / name)
  for _ in range(3):
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER.format(repo=helpers.REPO_ROOT,
                                             target=target)],
        stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline().strip() == "started"
    time.sleep(rng.uniform(0.0, 0.8))  # before, during or after the rename
    writer.kill()
    writer.wait()
    left = _leftovers(tmp_path / "out") if (tmp_path / "out").is_dir() else []
    capfd.readouterr()
    with atomic.atomic_directory(target, overwrite=True) as temporary:
      (tmp_path / "out" / os.path.basename(temporary) / "whole").write_text(
          "1")
    lines = capfd.readouterr().err.splitlines()
    assert _leftovers(tmp_path / "out") == []
    assert os.listdir(target) == ["whole"]
    assert len(lines) == len(left)
    for leftover, line in zip(left, sorted(lines)):
      assert line == (f"Removed {tmp_path / 'out' / leftover}, left by "
                      f"process {writer.pid}, which no longer runs.")


def test_only_a_dead_writer_s_temporary_of_the_same_target_goes(tmp_path):
  dead = subprocess.Popen([sys.executable, "-c", "pass"])
  dead.wait()
  host = atomic_file._HOST  # pylint: disable=protected-access
  names = {"stale": f".tmp-{host}-{dead.pid}-3",
           "live": f".tmp-{host}-{os.getppid()}-3",
           "other target": f".tmp-{host}-{dead.pid}-5-3",
           "other target, same start": f".tmp-{host}-{dead.pid}-3-5",
           "other host": f".tmp-elsewhere-{dead.pid}-3"}
  for name in names.values():
    (tmp_path / name).mkdir()
    (tmp_path / name / "half").write_text("x")
  with atomic.atomic_directory(str(tmp_path / "3")):
    pass
  assert sorted(_leftovers(tmp_path)) == sorted(
      value for key, value in names.items() if key != "stale")


@pytest.mark.slow
def test_an_import_killed_while_writing_is_cleaned_by_the_next_import(
    tmp_path, capsys):
  """The finding: `import` SIGKILLed while its `.tmp-*` directory exists
  left it for good. Killed at a random point of its write, the next import
  to the same target removes it, saying so."""
  from tests.training import import_helpers  # pylint: disable=g-import-not-at-top
  import_helpers.write_tiny_bert(str(tmp_path / "hf"))
  command = [sys.executable, "-m", "cmlm", "import",
             f"--source={tmp_path / 'hf'}", "--overwrite",
             f"--model_dir={tmp_path / 'out'}"]
  rng = random.Random(0)
  for _ in range(5):  # until one is killed with its temporary there
    child = subprocess.Popen(command, cwd=helpers.REPO_ROOT,
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    while not _leftovers(tmp_path) and child.poll() is None:
      assert time.monotonic() < deadline, "the import never started writing"
      time.sleep(0.005)
    time.sleep(rng.uniform(0.0, 0.05))
    child.kill()
    child.wait()
    if _leftovers(tmp_path):
      break
  left = _leftovers(tmp_path)
  assert left, "no import was killed while writing"
  # The next import: the command's main, in this process.
  again = helpers.run_command_here(command[3:], capsys)
  assert again.returncode == 0, again.stderr[-2000:]
  assert (f"Removed {tmp_path / left[0]}, left by process {child.pid}, "
          "which no longer runs.") in again.stderr.splitlines()
  assert _leftovers(tmp_path) == []
  assert tf.train.latest_checkpoint(str(tmp_path / "out"))
