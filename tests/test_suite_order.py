"""The order the suite's files go out in (conftest.py): under pytest-xdist
the longest files start first, so that no long file starts last."""
import types

import conftest


def _item(nodeid, slow=False):
  return types.SimpleNamespace(
      nodeid=nodeid,
      get_closest_marker=lambda name: object() if slow and name == "slow"
      else None)


def test_files_with_more_slow_tests_go_first_each_file_in_its_order():
  items = [_item("a.py::one"), _item("a.py::two"),
           _item("b.py::one", slow=True), _item("b.py::two"),
           _item("c.py::one", slow=True), _item("c.py::two", slow=True),
           _item("d.py::one"), _item("e.py::one", slow=True)]
  conftest.pytest_collection_modifyitems(None, items)
  assert [item.nodeid for item in items] == [
      "c.py::one", "c.py::two", "b.py::one", "b.py::two", "e.py::one",
      "a.py::one", "a.py::two", "d.py::one"]
