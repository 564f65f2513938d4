"""cmlm/library_loading.py: the libraries load with the cycle collector
paused, which is then resumed and what they made frozen."""
import gc
import sys

import pytest

from cmlm import library_loading


@pytest.fixture
def packages(tmp_path, monkeypatch):
  """Two fresh packages, `outer_lib` importing `inner_lib`; each records
  whether the collector ran while it loaded and leaves a reference cycle."""
  for name, body in (("inner_lib", ""), ("outer_lib", "import inner_lib\n")):
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text(
        "import gc\n" + body +
        "collector_on_while_loading = gc.isenabled()\n"
        "cycle = []\ncycle.append(cycle)\n"
        "collector_on_after_inner = gc.isenabled()\n")
  monkeypatch.syspath_prepend(str(tmp_path))
  meta_path = list(sys.meta_path)
  yield
  sys.meta_path[:] = meta_path
  for name in ("inner_lib", "outer_lib"):
    sys.modules.pop(name, None)
  gc.enable()


def test_a_library_loads_paused_then_the_collector_resumes_frozen(packages):
  del packages
  assert gc.isenabled()
  frozen = gc.get_freeze_count()
  library_loading.pause_collector_while_loading(("outer_lib", "inner_lib"))
  import outer_lib  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  inner_lib = sys.modules["inner_lib"]
  assert not outer_lib.collector_on_while_loading
  assert not inner_lib.collector_on_while_loading
  # The inner library, loaded inside the outer, does not resume it early.
  assert not outer_lib.collector_on_after_inner
  assert gc.isenabled()
  assert gc.get_freeze_count() > frozen
  # Frozen: a collection no longer walks what the libraries made.
  assert not any(obj is outer_lib.cycle for obj in gc.get_objects())


def test_a_library_not_named_or_already_loaded_is_left_to_the_collector(
    packages):
  del packages
  import inner_lib  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  assert inner_lib.collector_on_while_loading
  library_loading.pause_collector_while_loading(("inner_lib",))
  library_loading.pause_collector_while_loading(("absent_lib",))
  import outer_lib  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  assert outer_lib.collector_on_while_loading
  with pytest.raises(ModuleNotFoundError):
    import absent_lib  # noqa: F401  pylint: disable=g-import-not-at-top,import-outside-toplevel,unused-import
  assert gc.isenabled()


def test_the_command_line_loads_tensorflow_paused(monkeypatch):
  """`python -m cmlm` pauses it for TensorFlow and what loads it (not for
  tensorflow_hub, whose import cmlm's own guard may have to stop)."""
  assert {"tensorflow", "tf_keras", "official"} <= set(
      library_loading.LIBRARIES)
  assert "tensorflow_hub" not in library_loading.LIBRARIES
  monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
  monkeypatch.delitem(sys.modules, "cmlm.__main__", raising=False)
  monkeypatch.setattr(library_loading, "LIBRARIES", ("not_loaded_lib",))
  import cmlm.__main__  # noqa: F401  pylint: disable=g-import-not-at-top,import-outside-toplevel,unused-import
  assert any(isinstance(finder, library_loading._PausedLoading)  # pylint: disable=protected-access
             for finder in sys.meta_path)
