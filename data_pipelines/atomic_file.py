"""Files that appear complete or not at all.

A reader (a training run picking up a vocabulary, TF Serving's user reading
embeddings, a dashboard reading report.json) must never see half a file: a
file is written under a temporary name beside its target and renamed onto
it (`os.replace`, atomic on one file system) when complete; on any failure
the temporary file is removed and the target is left as it was.
Directories are written the same way by `training/atomic.py` (a layer up).
"""
import contextlib
import os
import shutil
from typing import Iterator, Set

# The temporary files and directories this process is writing now (its
# atomic files here, its atomic directories in `training/atomic.py`): what a
# process stopped at once (a second Ctrl-C, `training.stop_signals`)
# removes before it exits.
_IN_PROGRESS: Set[str] = set()


@contextlib.contextmanager
def in_progress(temporary: str) -> Iterator[None]:
  """Registers `temporary` as being written while the body runs."""
  _IN_PROGRESS.add(temporary)
  try:
    yield
  finally:
    _IN_PROGRESS.discard(temporary)


def remove_in_progress() -> None:
  """Removes every temporary file and directory being written (best effort:
  called by a process about to end at once)."""
  for path in list(_IN_PROGRESS):
    if os.path.isdir(path) and not os.path.islink(path):
      shutil.rmtree(path, ignore_errors=True)
    else:
      with contextlib.suppress(OSError):
        os.remove(path)


@contextlib.contextmanager
def atomic_file(path: str) -> Iterator[str]:
  """Yields a temporary path beside `path` that becomes `path` on success.

  The directory of `path` must exist. Usage:
    with atomic_file("vocab.txt") as temporary:
      with open(temporary, "w") as f:
        f.write(...)
  """
  directory, name = os.path.split(os.path.abspath(path))
  temporary = os.path.join(directory, f".tmp-{os.getpid()}-{name}")
  with in_progress(temporary):
    try:
      yield temporary
      os.replace(temporary, path)
    finally:
      if os.path.exists(temporary):
        os.remove(temporary)
