"""The command line's start-up: TensorFlow and the libraries built on it
load with Python's cycle collector paused, and what they created is then
frozen out of its reach (`gc.freeze`).

Loading TensorFlow, tf-keras and Model Garden creates millions of objects
and next to no garbage, and the collector, run every few hundred
allocations, walks them again and again: about a quarter of a command's
start-up goes to it. Frozen, they are not walked by the collections of the
work that follows either (the objects of a loaded library live as long as
the process). Only `python -m cmlm` does this (`cmlm/__main__.py`); the
garden imported as a library leaves its host's collector as it is.
"""
import gc
import importlib.abc
import importlib.machinery
import sys

# The top-level packages whose loading is paused: TensorFlow and what loads
# it. A package imported inside another's loading is already paused.
LIBRARIES = ("tensorflow", "tf_keras", "official", "tensorflow_text",
             "tensorflow_datasets", "apache_beam")


def _paused(exec_module):
  """`exec_module` run with the collector paused; the outermost of them
  resumes it and freezes what exists then."""

  def exec_paused(module):
    outermost = gc.isenabled()
    gc.disable()
    try:
      exec_module(module)
    finally:
      if outermost:
        gc.enable()
        gc.freeze()
  return exec_paused


class _PausedLoading(importlib.abc.MetaPathFinder):
  """Finds `LIBRARIES` as the path finder does, the first time each is
  imported, with their loader's `exec_module` run under `_paused`."""

  def __init__(self, names):
    self._pending = set(names)

  def find_spec(self, name, path=None, target=None):
    if name not in self._pending:
      return None
    self._pending.discard(name)
    spec = importlib.machinery.PathFinder.find_spec(name, path, target)
    if spec is not None and hasattr(spec.loader, "exec_module"):
      spec.loader.exec_module = _paused(spec.loader.exec_module)
    return spec


def pause_collector_while_loading(names=None) -> None:
  """From now on, each of `names` (`LIBRARIES`) not yet imported loads
  paused (above)."""
  pending = [name for name in names or LIBRARIES if name not in sys.modules]
  if pending:
    sys.meta_path.insert(0, _PausedLoading(pending))
