"""TensorFlow and the libraries built on it load with Python's cycle
collector paused; under `python -m cmlm`, what they created is then frozen
out of its reach (`gc.freeze`).

Loading TensorFlow, tf-keras and Model Garden creates some 600,000 objects
and next to no garbage, and the collector, run every few hundred
allocations, walks them again and again, and once more at exit. `import
cmlm` pauses it while they load, in every process that imports the garden
first (a command, a Beam or Dask worker, a script), and resumes it as it
was. A command (`cmlm/__main__.py`) also freezes them, so that neither the
collections of the work that follows nor the one at exit walk them (the
objects of a loaded library live as long as the process): about a third of
a short command's CPU time. The garden imported as a library leaves its
host's objects to its host.
"""
import gc
import importlib.abc
import sys

# The top-level packages whose loading is paused: TensorFlow and what loads
# it. A package imported inside another's loading is already paused.
LIBRARIES = ("tensorflow", "tf_keras", "official", "tensorflow_text",
             "tensorflow_datasets", "apache_beam")


class _PausedLoading(importlib.abc.MetaPathFinder):
  """Finds each of its names as the finders after it do, the first time it
  is imported, with its loader's `exec_module` run paused (`_paused`)."""

  def __init__(self, names):
    self.pending = set(names)
    self.freeze = False

  def find_spec(self, name, path=None, target=None):
    if name not in self.pending:
      return None
    self.pending.discard(name)
    for finder in sys.meta_path:
      if finder is self or not hasattr(finder, "find_spec"):
        continue
      spec = finder.find_spec(name, path, target)
      if spec is not None:
        if hasattr(spec.loader, "exec_module"):
          spec.loader.exec_module = self._paused(spec.loader.exec_module)
        return spec
    return None

  def _paused(self, exec_module):
    """`exec_module` run with the collector paused; the outermost of them
    resumes it (and freezes what exists then, under a command)."""

    def exec_paused(module):
      outermost = gc.isenabled()
      gc.disable()
      try:
        exec_module(module)
      finally:
        if outermost:
          gc.enable()
          if self.freeze:
            gc.freeze()
    return exec_paused


_FINDER = None


def pause_collector_while_loading(names=None, freeze=False) -> None:
  """From now on, each of `names` (`LIBRARIES`) not yet imported loads
  paused (above); with `freeze`, what exists when it has loaded is frozen.
  Called again, it adds names and turns `freeze` on, never off."""
  global _FINDER
  if _FINDER is None or _FINDER not in sys.meta_path:
    _FINDER = _PausedLoading(())
    sys.meta_path.insert(0, _FINDER)
  _FINDER.pending.update(name for name in names or LIBRARIES
                         if name not in sys.modules)
  _FINDER.freeze = _FINDER.freeze or freeze
