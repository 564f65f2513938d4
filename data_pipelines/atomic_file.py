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
from typing import Iterator


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
  try:
    yield temporary
    os.replace(temporary, path)
  finally:
    if os.path.exists(temporary):
      os.remove(temporary)
