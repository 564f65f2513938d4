"""The packages' imports point down the layers (BUILD.md, "Layout").

    data_pipelines <- modeling <- objectives <- training <- export
      <- evaluation <- experiments <- cmlm (the command line)

A module may import its own package and the packages below it; only the
command line (`cmlm/`) and scripts run as `__main__` (experiments'
evidence scripts, benchmarks) sit on top of everything. `legacy_keras`, which
selects Keras 2, is below all of them.
"""
import ast
import os

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAYERS = ("legacy_keras", "data_pipelines", "modeling", "objectives",
          "training", "export", "evaluation", "experiments", "cmlm")
RANK = {name: rank for rank, name in enumerate(LAYERS)}


def _garden_imports(path):
  """(line, top-level garden package) of every import in a file."""
  with open(path, encoding="utf-8") as f:
    tree = ast.parse(f.read(), path)
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
      names = [node.module]
    else:
      continue
    for name in names:
      top = name.split(".")[0]
      if top in RANK:
        yield node.lineno, top


def _is_script(path):
  with open(path, encoding="utf-8") as f:
    return 'if __name__ == "__main__":' in f.read()


def _library_modules():
  for package in LAYERS[1:-1]:  # cmlm/ is the top: it may import anything
    for folder, _, files in os.walk(os.path.join(REPO_ROOT, package)):
      for name in sorted(files):
        path = os.path.join(folder, name)
        if name.endswith(".py") and not _is_script(path):
          yield package, path


def test_every_library_import_points_down_the_layers():
  upward = []
  for package, path in _library_modules():
    for line, imported in _garden_imports(path):
      if RANK[imported] > RANK[package]:
        upward.append(f"{os.path.relpath(path, REPO_ROOT)}:{line} imports "
                      f"{imported}")
  assert not upward, "imports from a lower layer to a higher one:\n" + (
      "\n".join(upward))


def test_the_check_sees_an_upward_import(tmp_path):
  """The checker itself: an import of training from modeling is caught."""
  module = tmp_path / "bad.py"
  module.write_text("import os\nfrom training import train\n",
                    encoding="utf-8")
  found = list(_garden_imports(str(module)))
  assert found == [(2, "training")]
  assert RANK["training"] > RANK["modeling"]


@pytest.mark.parametrize("package", LAYERS[1:])
def test_every_package_selects_keras_2_first(package):
  """`TF_USE_LEGACY_KERAS=1` is set in one module, `legacy_keras`, which each
  package's `__init__.py` imports before anything else."""
  with open(os.path.join(REPO_ROOT, package, "__init__.py"),
            encoding="utf-8") as f:
    tree = ast.parse(f.read())
  imports = [node for node in tree.body
             if isinstance(node, (ast.Import, ast.ImportFrom))]
  assert imports, f"{package}/__init__.py imports nothing"
  first = imports[0]
  assert isinstance(first, ast.Import)
  assert first.names[0].name == "legacy_keras"


def test_only_legacy_keras_sets_tf_use_legacy_keras():
  setters = []
  for folder, dirs, files in os.walk(REPO_ROOT):
    dirs[:] = [d for d in dirs if not d.startswith(".") and d != "tests"]
    for name in files:
      if name.endswith(".py"):
        path = os.path.join(folder, name)
        with open(path, encoding="utf-8") as f:
          if 'environ["TF_USE_LEGACY_KERAS"] =' in f.read():
            setters.append(os.path.relpath(path, REPO_ROOT))
  assert setters == ["legacy_keras.py"]
