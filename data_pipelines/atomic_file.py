"""Files that appear complete or not at all.

A reader (a training run picking up a vocabulary, TF Serving's user reading
embeddings, a dashboard reading report.json) must never see half a file: a
file is written under a temporary name beside its target and renamed onto
it (`os.replace`, atomic on one file system) when complete; on any failure
the temporary file is removed and the target is left as it was; one that a
killed process (SIGKILL) left is removed by the next writer of that target
on the same host, with one line (`remove_stale_temporaries`).
What other libraries leave in the system's temporary directory (Beam's
runners, Dask's workers) is kept in one of this process's own and removed
with it (`private_temporary_directory`).
Directories are written the same way by `training/atomic.py` (a layer up).
"""
import contextlib
import json
import os
import re
import shutil
import socket
import sys
import tempfile
from typing import Callable, Iterator, List, Optional, Set

# The temporary files and directories this process is writing now (its
# atomic files here, its atomic directories in `training/atomic.py`): what a
# process stopped at once (a second Ctrl-C, `training.stop_signals`)
# removes before it exits.
_IN_PROGRESS: Set[str] = set()
# Called before a temporary becomes its target (`check_before_replace`):
# `training.stop_signals` adds the check that a stop signal which a library
# swallowed still stops the writer before it publishes anything.
BEFORE_REPLACE: List[Callable[[], None]] = []
# In temporary names: a process killed at once leaves its file, which a
# later writer of the same target on this host removes.
_HOST = re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname()) or "host"


@contextlib.contextmanager
def in_progress(temporary: str) -> Iterator[None]:
  """Registers `temporary` as being written while the body runs."""
  _IN_PROGRESS.add(temporary)
  try:
    yield
  finally:
    _IN_PROGRESS.discard(temporary)


def check_before_replace() -> None:
  """Runs the `BEFORE_REPLACE` checks; one that raises keeps the target as
  it was (the caller removes its temporary)."""
  for check in BEFORE_REPLACE:
    check()


def remove_in_progress() -> None:
  """Removes every temporary file and directory being written (best effort:
  called by a process about to end at once)."""
  for path in list(_IN_PROGRESS):
    if os.path.isdir(path) and not os.path.islink(path):
      shutil.rmtree(path, ignore_errors=True)
    else:
      with contextlib.suppress(OSError):
        os.remove(path)


def check_output_path(path: str, flag: str,
                      directory: Optional[bool] = None) -> None:
  """Raises ValueError, one sentence naming `flag`, when the local `path`
  cannot be written as named: a file where a directory is named
  (`directory=True`), a directory where a file is (`directory=False`), or
  a file among the folders above it. Checked before any work; a remote
  path (`gs://...`) is left to its file system.

  Examples (notes.txt a file):
    check_output_path("notes.txt/run", "--model_dir", True)
    # ValueError: --model_dir=notes.txt/run is under /home/me/notes.txt,
    #   which is a file; name a path in a directory.
  """
  if not path or "://" in path:
    return
  absolute = os.path.abspath(path)
  if os.path.exists(absolute):
    if directory and not os.path.isdir(absolute):
      raise ValueError(f"{flag}={path} is a file; name a directory.")
    if directory is False and os.path.isdir(absolute):
      raise ValueError(f"{flag}={path} is a directory; name a file.")
    return
  above = os.path.dirname(absolute)
  while not os.path.exists(above) and os.path.dirname(above) != above:
    above = os.path.dirname(above)
  if not os.path.isdir(above):
    raise ValueError(f"{flag}={path} is under {above}, which is a file; "
                     "name a path in a directory.")


def temporary_path(path: str) -> str:
  """The temporary of `path` written by this process:
  `.tmp-<host>-<pid>-<name>` beside it (a file or a directory). The pid
  says whether a writer still holds it (`remove_stale_temporaries`); the
  host has no `-` and the pid is digits, so the name after them is exactly
  the target's, whatever it is."""
  directory, name = os.path.split(os.path.abspath(path))
  return os.path.join(directory, f".tmp-{_HOST}-{os.getpid()}-{name}")


def remove_stale_temporaries(path: str, say: bool = True) -> List[str]:
  """Removes the temporaries of `path` (files or directories,
  `temporary_path`) that no living process of this host holds: their
  writer was killed (SIGKILL leaves them) and its pid no longer runs, or
  it is this process's pid (reused) and this process is not writing it.
  Prints one line per removal to stderr unless `say` is False; returns
  their paths. Another host's, or a live process's, are left alone. Every
  writer through a temporary calls it at its start (`atomic_file`,
  `training.atomic.atomic_directory`, `beam_shards.temporary_output`).

  Examples:
    >>> remove_stale_temporaries("out/embeddings.npy")
    Removed out/.tmp-host-4242-embeddings.npy, left by process 4242, which no longer runs.
    ['out/.tmp-host-4242-embeddings.npy']
  """
  directory, name = os.path.split(os.path.abspath(path))
  pattern = re.compile(rf"\.tmp-{re.escape(_HOST)}-(\d+)-{re.escape(name)}")
  removed = []
  try:
    entries = os.listdir(directory)
  except OSError:
    return removed
  for entry in entries:
    match = pattern.fullmatch(entry)
    if not match:
      continue
    pid, leftover = int(match.group(1)), os.path.join(directory, entry)
    if pid == os.getpid():
      if leftover in _IN_PROGRESS:
        continue
    elif _running(pid):
      continue
    try:
      if os.path.isdir(leftover) and not os.path.islink(leftover):
        shutil.rmtree(leftover)
      else:
        os.remove(leftover)
    except FileNotFoundError:
      continue  # another writer removed it first
    except OSError:
      continue  # not ours to remove (permissions): left as it was
    removed.append(leftover)
    if say:
      print(f"Removed {leftover}, left by process {pid}, which no longer "
            "runs.", file=sys.stderr, flush=True)
  return removed


def _running(pid: int) -> bool:
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:
    return True  # another user's
  return True


# The directory `private_temporary_directory` made, while it is in use.
_PRIVATE_TEMPORARY: List[str] = []


@contextlib.contextmanager
def private_temporary_directory(name: str) -> Iterator[str]:
  """The temporary directory of this process and its children for the
  body's duration: `.tmp-<host>-<pid>-<name>` in the system's, set as
  `tempfile.tempdir` and `TMPDIR`, removed with all it holds on any exit
  (both restored). What Beam's runners and Dask's workers leave there goes
  with it. One that a killed process left is removed, with a line, at the
  next start (`remove_stale_temporaries`). Nested uses share the
  outermost one; it is the whole process's, so one job at a time.

  Examples:
    with private_temporary_directory("cmlm-beam"):
      run_to_end(pipeline)  # Beam's beam-temp*/tmp* made here, then gone
  """
  if _PRIVATE_TEMPORARY:
    yield _PRIVATE_TEMPORARY[-1]
    return
  system = tempfile.gettempdir()
  path = os.path.join(system, name)
  remove_stale_temporaries(path)
  directory = temporary_path(path)
  os.makedirs(directory, mode=0o700, exist_ok=True)
  previous_tempdir, previous_env = tempfile.tempdir, os.environ.get("TMPDIR")
  tempfile.tempdir = directory
  os.environ["TMPDIR"] = directory
  _PRIVATE_TEMPORARY.append(directory)
  try:
    with in_progress(directory):
      yield directory
  finally:
    _PRIVATE_TEMPORARY.pop()
    tempfile.tempdir = previous_tempdir
    if previous_env is None:
      os.environ.pop("TMPDIR", None)
    else:
      os.environ["TMPDIR"] = previous_env
    shutil.rmtree(directory, ignore_errors=True)


@contextlib.contextmanager
def atomic_file(path: str) -> Iterator[str]:
  """Yields a temporary path beside `path` that becomes `path` on success.

  The directory of `path` must exist. Usage:
    with atomic_file("vocab.txt") as temporary:
      with open(temporary, "w") as f:
        f.write(...)
  """
  remove_stale_temporaries(path)
  temporary = temporary_path(path)
  with in_progress(temporary):
    try:
      yield temporary
      check_before_replace()
      os.replace(temporary, path)
    finally:
      if os.path.exists(temporary):
        os.remove(temporary)


def write_json(path: str, value) -> None:
  """`value` as indented JSON (one trailing newline) at `path`, through
  `atomic_file`: a results file a page renders is whole or absent."""
  with atomic_file(path) as temporary:
    with open(temporary, "w", encoding="utf-8") as f:
      json.dump(value, f, indent=1)
      f.write("\n")
