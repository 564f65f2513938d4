"""cmlm/library_loading.py: the libraries load with the cycle collector
paused, which is then resumed, and under a command what they made frozen."""
import gc
import sys

import pytest

from cmlm import library_loading


@pytest.fixture
def packages(tmp_path, monkeypatch):
  """Two fresh packages, `outer_lib` importing `inner_lib`; each records
  whether the collector ran while it loaded and leaves a reference cycle.
  The garden's own finder is set aside meanwhile."""
  for name, body in (("inner_lib", ""), ("outer_lib", "import inner_lib\n")):
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text(
        "import gc\n" + body +
        "collector_on_while_loading = gc.isenabled()\n"
        "cycle = []\ncycle.append(cycle)\n"
        "collector_on_after_inner = gc.isenabled()\n")
  monkeypatch.syspath_prepend(str(tmp_path))
  monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
  monkeypatch.setattr(library_loading, "_FINDER", None)
  yield
  for name in ("inner_lib", "outer_lib"):
    sys.modules.pop(name, None)
  gc.enable()


@pytest.mark.parametrize("freeze", [True, False])
def test_a_library_loads_paused_then_the_collector_resumes(packages, freeze):
  del packages
  assert gc.isenabled()
  frozen = gc.get_freeze_count()
  library_loading.pause_collector_while_loading(("outer_lib", "inner_lib"),
                                                freeze=freeze)
  import outer_lib  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  inner_lib = sys.modules["inner_lib"]
  assert not outer_lib.collector_on_while_loading
  assert not inner_lib.collector_on_while_loading
  # The inner library, loaded inside the outer, does not resume it early.
  assert not outer_lib.collector_on_after_inner
  assert gc.isenabled()
  # Frozen (a command): a collection no longer walks what they made; as a
  # library, the host's objects stay the collector's.
  assert (gc.get_freeze_count() > frozen) is freeze
  tracked = any(obj is outer_lib.cycle for obj in gc.get_objects())
  assert tracked is not freeze


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


def test_the_garden_pauses_for_tensorflow_and_a_command_also_freezes(
    packages, monkeypatch):
  """`import cmlm` pauses it for TensorFlow and what loads it (not for
  tensorflow_hub, whose import cmlm's own guard may have to stop);
  `python -m cmlm` turns freezing on."""
  del packages
  assert {"tensorflow", "tf_keras", "official"} <= set(
      library_loading.LIBRARIES)
  assert "tensorflow_hub" not in library_loading.LIBRARIES
  monkeypatch.delitem(sys.modules, "cmlm.__main__", raising=False)
  monkeypatch.setattr(library_loading, "LIBRARIES", ("not_loaded_lib",))
  import cmlm.__main__  # noqa: F401  pylint: disable=g-import-not-at-top,import-outside-toplevel,unused-import
  finder = library_loading._FINDER  # pylint: disable=protected-access
  assert finder in sys.meta_path and finder.freeze
  assert finder.pending == {"not_loaded_lib"}
