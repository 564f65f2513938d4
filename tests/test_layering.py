"""The garden's imports point down the layers, and projects stay apart.

The layers are `cmlm/layering.py`'s one list, bottom to top:

    cmlm.data_pipelines <- cmlm.modeling <- cmlm.objectives <- cmlm.training
      <- cmlm.inference <- cmlm.export <- cmlm.evaluation <- cmlm.experiments
      <- cmlm.projects.<name> <- cmlm (the command line, the API, the registry)

A core module may import its own package and the packages below it. A
project (`projects/<name>/`) may import the core, never another project, and
the core imports no project: `cmlm/registry_imports.py` is the one module
that names them.

Scripts (the evidence scripts of `experiments/` and `projects/<name>/`) are
modules of their layer like any other: tests and other scripts import them
and call their functions, `main` included. Only their
`if __name__ == "__main__":` block, which runs when the file is run and
never on import, may import upward. A script registers the experiments it
runs from its own layer: `cmlm.experiments.registry_imports` (the core's) or
its project's `registry_imports`; the garden's `cmlm.registry_imports`
(every project) would be an upward import, allowed in that block alone. A
project's command modules (`commands.register_command(`) are checked too;
they may import `cmlm.commands`, the command line they add a command to.
(`benchmarks/` is no layer: it sits on top, with the command line.)
"""
import ast
import os

import pytest

from cmlm.layering import LAYERS
from tests import helpers

REPO_ROOT = helpers.REPO_ROOT
RANK = {name: rank for rank, name in enumerate(LAYERS)}
walk_sources = helpers.walk_sources  # skips build outputs and environments


def _parse(path):
  with open(path, encoding="utf-8") as f:
    return ast.parse(f.read(), path)


def _garden_names(tree):
  """(line, dotted name) of every import of the garden in a tree."""
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
      names = [node.module]
      if node.module in ("cmlm", "cmlm.projects"):  # from cmlm import x
        names = [f"{node.module}.{alias.name}" for alias in node.names]
    else:
      continue
    for name in names:
      if name.split(".")[0] == "cmlm":
        yield node.lineno, name


def _layer(name):
  """(layer, project or None) of a module of the garden."""
  parts = name.split(".")
  layer = parts[1] if len(parts) > 1 and parts[1] in RANK else "cmlm"
  project = parts[2] if layer == "projects" and len(parts) > 2 else None
  return layer, project


def garden_imports(path):
  """(line, layer, project or None) of every import of the garden in a
  file: `cmlm.modeling.x` is layer modeling, `cmlm.projects.misad.x` is
  layer projects of project misad, `cmlm.x` (not a layer) is layer cmlm."""
  for line, name in _garden_names(_parse(path)):
    yield (line,) + _layer(name)


def main_block_lines(tree):
  """The lines of a module's top-level `if __name__ == "__main__":` blocks."""
  lines = set()
  for node in tree.body:
    if (isinstance(node, ast.If) and
        ast.unparse(node.test) in ("__name__ == '__main__'",
                                   "'__main__' == __name__")):
      lines.update(range(node.lineno, node.end_lineno + 1))
  return lines


def layered_imports(path):
  """`garden_imports` that the layers bind: all but those inside the
  `__main__` block and, in a command module, those of `cmlm.commands`."""
  tree = _parse(path)
  exempt = main_block_lines(tree)
  command_module = any(
      isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
      and node.func.attr == "register_command" for node in ast.walk(tree))
  for line, name in _garden_names(tree):
    if line in exempt:
      continue
    if command_module and (name == "cmlm.commands" or
                           name.startswith("cmlm.commands.")):
      continue
    yield (line,) + _layer(name)


def _modules(root=REPO_ROOT):
  """(layer, project or None, path) of every module of the core's layers
  and of the projects, scripts included (cmlm/ is the top: it may import
  anything)."""
  for layer in LAYERS[:-1]:
    for path in walk_sources(os.path.join(root, layer)):
      relative = os.path.relpath(path, root).split(os.sep)
      if "tests" in relative[1:]:
        continue
      project = relative[1] if layer == "projects" and len(relative) > 2 else None
      yield layer, project, path


def upward_imports(root=REPO_ROOT):
  """'path:line imports cmlm.<layer>' of every module's import of a higher
  layer, under `root`."""
  upward = []
  for layer, _, path in _modules(root):
    for line, imported, _ in layered_imports(path):
      if RANK[imported] > RANK[layer]:
        target = "cmlm" if imported == "cmlm" else f"cmlm.{imported}"
        upward.append(f"{os.path.relpath(path, root)}:{line} imports {target}")
  return upward


def test_every_import_points_down_the_layers():
  upward = upward_imports()
  assert not upward, "imports from a lower layer to a higher one:\n" + (
      "\n".join(upward))


def test_a_project_imports_no_other_project():
  """Not even in a script's `__main__` block: deleting one project leaves
  every other one whole."""
  crossing = []
  for _, project, path in _modules():
    for line, _, imported in garden_imports(path):
      if project and imported and imported != project:
        crossing.append(f"{os.path.relpath(path, REPO_ROOT)}:{line} imports "
                        f"the project {imported}")
  assert not crossing, "\n".join(crossing)


def test_only_the_registry_names_the_projects():
  """The core imports no project; `cmlm/registry_imports.py` alone lists
  them (the command line and the API import that module)."""
  naming = []
  for path in walk_sources(REPO_ROOT):
    relative = os.path.relpath(path, REPO_ROOT)
    if relative.split(os.sep)[0] in ("projects", "benchmarks"):
      continue
    if relative == os.path.join("cmlm", "registry_imports.py"):
      continue
    for line, layer, _ in garden_imports(path):
      if layer == "projects":
        naming.append(f"{relative}:{line}")
  assert not naming, "imports of a project outside the registry:\n" + (
      "\n".join(naming))


def test_the_check_sees_upward_and_crossing_imports(tmp_path):
  """The checker itself: modeling importing training is caught, and so is a
  project importing another."""
  module = tmp_path / "bad.py"
  module.write_text("import os\nfrom cmlm.training import train\n"
                    "from cmlm.projects.misad import misad_loss\n"
                    "from cmlm import registry_imports\n", encoding="utf-8")
  found = list(garden_imports(str(module)))
  assert found == [(2, "training", None), (3, "projects", "misad"),
                   (4, "cmlm", None)]
  assert RANK["training"] > RANK["modeling"]


def test_the_check_exempts_a_scripts_main_block_and_nothing_else(tmp_path):
  """A script of experiments/ importing the top layer at module level is
  caught; the same import inside `if __name__ == "__main__":` is not; a
  command module may import `cmlm.commands` and nothing else above it."""
  script = tmp_path / "experiments" / "evidence.py"
  script.parent.mkdir()
  script.write_text('''import sys
from cmlm import demo_measures


def main():
  from cmlm import registry_imports


if __name__ == "__main__":
  from cmlm import registry_imports
  main()
''', encoding="utf-8")
  assert main_block_lines(_parse(str(script))) == {9, 10, 11}
  assert upward_imports(str(tmp_path)) == [
      os.path.join("experiments", "evidence.py") + ":2 imports cmlm",
      os.path.join("experiments", "evidence.py") + ":6 imports cmlm"]
  command = tmp_path / "projects" / "mine" / "mine_command.py"
  command.parent.mkdir(parents=True)
  command.write_text('''from cmlm import commands
from cmlm.commands import flag_parsing
from cmlm import demo
commands.register_command(None)
''', encoding="utf-8")
  script.write_text("", encoding="utf-8")
  assert upward_imports(str(tmp_path)) == [
      os.path.join("projects", "mine", "mine_command.py") +
      ":3 imports cmlm"]


def test_only_the_cmlm_package_sets_tf_use_legacy_keras():
  """`TF_USE_LEGACY_KERAS=1` is set in one place, `cmlm/__init__.py`, which
  Python runs before any module of the garden."""
  setters = []
  for path in walk_sources(REPO_ROOT):
    if os.sep + "tests" + os.sep in path:
      continue
    with open(path, encoding="utf-8") as f:
      if 'environ["TF_USE_LEGACY_KERAS"] =' in f.read():
        setters.append(os.path.relpath(path, REPO_ROOT))
  assert setters == [os.path.join("cmlm", "__init__.py")]


def test_build_outputs_are_not_walked(tmp_path):
  """A `pip install .` leaves build/lib/ copies of the sources; the checks
  above do not read them."""
  for folder in ("build/lib/cmlm", "pkg.egg-info", ".venv/lib", "src"):
    os.makedirs(tmp_path / folder)
    (tmp_path / folder / "x.py").write_text("", encoding="utf-8")
  assert [os.path.relpath(p, tmp_path) for p in walk_sources(tmp_path)] == [
      os.path.join("src", "x.py")]


@pytest.mark.parametrize("layer", LAYERS[:-1])
def test_every_layer_is_a_package_of_the_namespace(layer):
  """Each top-level folder is `cmlm.<layer>` (imported as such)."""
  import importlib  # pylint: disable=g-import-not-at-top
  module = importlib.import_module(f"cmlm.{layer}")
  assert os.path.dirname(module.__file__) == os.path.join(REPO_ROOT, layer)
