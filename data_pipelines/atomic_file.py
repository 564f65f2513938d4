"""Files that appear complete or not at all.

A reader (a training run picking up a vocabulary, TF Serving's user reading
embeddings, a dashboard reading report.json) must never see half a file: a
file is written under a temporary name beside its target and renamed onto
it (`os.replace`, atomic on one file system) when complete; on any failure
the temporary file is removed and the target is left as it was; one that a
killed process (SIGKILL) left is removed by the next writer of that target
on the same host.
Directories are written the same way by `training/atomic.py` (a layer up).
"""
import contextlib
import os
import re
import shutil
import socket
from typing import Callable, Iterator, List, Set

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


def remove_stale_temporaries(path: str) -> List[str]:
  """Removes the temporary files of `path` that processes of this host left
  when they were killed (SIGKILL leaves them; their pid no longer runs);
  returns their paths. Another host's, or a live process's, are left alone.

  Examples:
    >>> remove_stale_temporaries("out/embeddings.npy")
    ['out/.tmp-host-4242-embeddings.npy']
  """
  directory, name = os.path.split(os.path.abspath(path))
  pattern = re.compile(rf"\.tmp-{re.escape(_HOST)}-(\d+)-{re.escape(name)}")
  removed = []
  with contextlib.suppress(OSError):
    for entry in os.listdir(directory):
      match = pattern.fullmatch(entry)
      if match and not _running(int(match.group(1))):
        with contextlib.suppress(OSError):
          os.remove(os.path.join(directory, entry))
          removed.append(os.path.join(directory, entry))
  return removed


def _running(pid: int) -> bool:
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:
    return True  # another user's
  return True


@contextlib.contextmanager
def atomic_file(path: str) -> Iterator[str]:
  """Yields a temporary path beside `path` that becomes `path` on success.

  The directory of `path` must exist. Usage:
    with atomic_file("vocab.txt") as temporary:
      with open(temporary, "w") as f:
        f.write(...)
  """
  directory, name = os.path.split(os.path.abspath(path))
  remove_stale_temporaries(path)
  temporary = os.path.join(directory,
                           f".tmp-{_HOST}-{os.getpid()}-{name}")
  with in_progress(temporary):
    try:
      yield temporary
      check_before_replace()
      os.replace(temporary, path)
    finally:
      if os.path.exists(temporary):
        os.remove(temporary)
