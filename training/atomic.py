"""Directories that appear complete or not at all.

TF Serving watches a base path and loads each new `<base>/<version>/` it
sees; a version it catches half-written fails to load or, worse, loads
wrong. So every export is written into a temporary directory beside its
target (same file system, a name that is not a version number, so a server
ignores it: `.tmp-<host>-<pid>-<name>`, `atomic_file.temporary_path`) and
renamed into place when complete; one that a killed writer left is removed,
with a line, by the next writer of that target on the same host. An
existing target is never replaced unless asked (`overwrite=True`); on any failure the temporary
directory, and the parent directories made for it, are removed and the
target is left as it was. The directory gets the permissions the process'
umask gives a new one (not the private 0700 it is made with), so a server running as
another user can read what was published. (Single files: see
`data_pipelines/atomic_file.py`.)
"""
import contextlib
import os
import shutil
import tempfile
from typing import Iterator, List, Sequence

from cmlm.data_pipelines import atomic_file


def check_writable(targets: Sequence[str], overwrite: bool) -> None:
  """Fails before any work if a target exists and may not be replaced."""
  existing = [t for t in targets if os.path.lexists(t)]
  if existing and not overwrite:
    raise FileExistsError(
        f"{existing[0]} already exists; pass --overwrite to replace it, or "
        "choose another --export_dir or --version.")
  for target in existing:
    if not os.path.isdir(target):
      raise FileExistsError(f"{target} exists and is not a directory; "
                            "remove it or choose another --export_dir.")


@contextlib.contextmanager
def atomic_directory(target: str, overwrite: bool = False) -> Iterator[str]:
  """Yields a temporary directory that becomes `target` on success.

  Usage:
    with atomic_directory("models/cmlm/3") as tmp:
      tf.saved_model.save(model, tmp)
  """
  target = os.path.abspath(target)
  check_writable([target], overwrite)
  parent = os.path.dirname(target)
  created = _missing_ancestors(parent)
  os.makedirs(parent, exist_ok=True)
  # A killed writer's temporary of this target goes first, with a line.
  atomic_file.remove_stale_temporaries(target)
  temporary = atomic_file.temporary_path(target)
  os.mkdir(temporary, 0o700)
  try:
    with atomic_file.in_progress(temporary):
      os.chmod(temporary, 0o777 & ~_umask())
      yield temporary
      atomic_file.check_before_replace()
      _replace(temporary, target, overwrite)
  except BaseException:
    shutil.rmtree(temporary, ignore_errors=True)
    for directory in created:  # deepest first; only if still empty
      try:
        os.rmdir(directory)
      except OSError:
        break
    raise


def _umask() -> int:
  umask = os.umask(0)  # reading the umask means setting it
  os.umask(umask)
  return umask


def _missing_ancestors(directory: str) -> List[str]:
  """`directory` and its parents that do not exist yet, deepest first."""
  missing = []
  while directory and not os.path.exists(directory):
    missing.append(directory)
    directory = os.path.dirname(directory)
  return missing


def _replace(source: str, target: str, overwrite: bool) -> None:
  """Renames `source` to `target`, moving an old `target` aside first."""
  if not os.path.lexists(target):
    os.rename(source, target)
    return
  check_writable([target], overwrite)  # it may have appeared meanwhile
  # rename() cannot replace a non-empty directory: swap, then delete.
  old = tempfile.mkdtemp(prefix=f".old-{os.path.basename(target)}-",
                         dir=os.path.dirname(target))
  os.rename(target, os.path.join(old, "previous"))
  try:
    os.rename(source, target)
  except OSError:
    os.rename(os.path.join(old, "previous"), target)  # put it back
    raise
  finally:
    shutil.rmtree(old, ignore_errors=True)
