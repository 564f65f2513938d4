"""The garden's imports point down the layers, and projects stay apart.

The layers (`cmlm/layering.py`, the one list) form a graph, not a line
(`STANDS_ON`; docs/architecture.md draws it): evaluation and export are
siblings over inference, the one reading layer.

    cmlm (the command line, the API, the registry)
      -> cmlm.projects.<name> -> cmlm.experiments
      -> cmlm.export (writing)   and   cmlm.evaluation (measuring)
      -> cmlm.inference (reading), under both
      -> cmlm.training -> cmlm.objectives -> cmlm.modeling
      -> cmlm.data_pipelines

A core module may import its own package and the packages its layer stands
on, directly or through others (`STANDS_ON`): export and evaluation each
import inference and below, experiments both of them. Evaluation never
imports export, nor does inference; and the readers (`READERS`: inference/,
evaluation/, cmlm/mteb_encoder.py) import no module of export anywhere in
them, not even in a function or a `__main__` block. A project
(`projects/<name>/`) may import the core, never another project, and the
core imports no project: `cmlm/registry_imports.py` is the one module that
names them.

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
# Each layer and the layers it stands on directly: it may import those and,
# through them, every layer below (`may_import`). Export and evaluation are
# siblings: each stands on inference, neither on the other.
STANDS_ON = {
    "data_pipelines": (),
    "modeling": ("data_pipelines",),
    "objectives": ("modeling",),
    "training": ("objectives",),
    "inference": ("training",),
    "export": ("inference",),
    "evaluation": ("inference",),
    "experiments": ("export", "evaluation"),
    "projects": ("experiments",),
    "cmlm": ("projects",),
}
# The modules that read a model (what export wrote): they import no module
# of export at all (paths relative to the repository; a folder means every
# module under it).
READERS = ("inference", "evaluation", os.path.join("cmlm", "mteb_encoder.py"))
RANK = {name: rank for rank, name in enumerate(LAYERS)}


def may_import(layer):
  """The layers `layer` may import: itself and all it stands on, directly
  or through others (`STANDS_ON`)."""
  allowed, todo = {layer}, [layer]
  while todo:
    for below in STANDS_ON[todo.pop()]:
      if below not in allowed:
        allowed.add(below)
        todo.append(below)
  return allowed
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
  file: `cmlm.modeling.x` is layer modeling, `cmlm.projects.<name>.x` is
  layer projects of project <name>, `cmlm.x` (not a layer) is layer cmlm."""
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
  """'path:line imports cmlm.<layer>' of every module's import of a layer
  its own does not stand on (`may_import`), under `root`."""
  upward = []
  for layer, _, path in _modules(root):
    allowed = may_import(layer)
    for line, imported, _ in layered_imports(path):
      if imported not in allowed:
        target = "cmlm" if imported == "cmlm" else f"cmlm.{imported}"
        upward.append(f"{os.path.relpath(path, root)}:{line} imports {target}")
  return upward


def reader_imports_of_export(root=REPO_ROOT):
  """'path:line imports cmlm.export' of every import of export in a reader
  (`READERS`) under `root`: anywhere in the module, a function's body or a
  `__main__` block included."""
  paths = []
  for reader in READERS:
    path = os.path.join(root, reader)
    if os.path.isfile(path):
      paths.append(path)
    else:
      paths.extend(p for p in walk_sources(path)
                   if "tests" not in os.path.relpath(p, path).split(os.sep))
  found = []
  for path in paths:
    for line, layer, _ in garden_imports(path):
      if layer == "export":
        found.append(f"{os.path.relpath(path, root)}:{line} imports "
                     "cmlm.export")
  return found


def test_every_import_points_down_the_layers():
  upward = upward_imports()
  assert not upward, "imports from a lower layer to a higher one:\n" + (
      "\n".join(upward))


def test_the_graph_names_every_layer_below_itself():
  """`STANDS_ON` has one entry per layer of `cmlm/layering.py`, and each
  layer stands only on layers listed before it there (the list is bottom
  to top)."""
  assert list(STANDS_ON) == list(LAYERS)
  for layer, below in STANDS_ON.items():
    assert all(RANK[base] < RANK[layer] for base in below), layer


def test_evaluation_and_export_are_siblings_over_inference():
  assert {"inference", "training"} <= may_import("export")
  assert {"inference", "training"} <= may_import("evaluation")
  assert "export" not in may_import("evaluation")
  assert "evaluation" not in may_import("export")
  assert not {"export", "evaluation"} & may_import("inference")
  assert {"export", "evaluation"} <= may_import("experiments")


def test_no_reader_imports_export():
  """inference/, evaluation/ and cmlm/mteb_encoder.py read what export
  wrote through inference; they never import export."""
  found = reader_imports_of_export()
  assert not found, "readers importing export:\n" + "\n".join(found)


def test_the_check_sees_a_reader_importing_export(tmp_path):
  """The checker itself: evaluation importing export (at module level or
  in a function) and inference importing it are caught by the graph;
  cmlm/mteb_encoder.py, in the top layer, is caught as a reader; export
  importing evaluation is caught; evaluation importing inference is not."""
  for relative, text in (
      ("evaluation/scores.py", "from cmlm.export import publish\n"
       "from cmlm.inference import embedders\n"),
      ("evaluation/lazy.py", "def f():\n  from cmlm import export\n"),
      ("inference/reader.py", "import cmlm.export.card_facts\n"),
      ("export/writer.py", "from cmlm.evaluation import report\n"
       "from cmlm.inference import layout\n"),
      ("cmlm/mteb_encoder.py", "from cmlm.export import card_facts\n")):
    path = tmp_path / relative
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
  assert sorted(upward_imports(str(tmp_path))) == [
      os.path.join("evaluation", "lazy.py") + ":2 imports cmlm.export",
      os.path.join("evaluation", "scores.py") + ":1 imports cmlm.export",
      os.path.join("export", "writer.py") + ":1 imports cmlm.evaluation",
      os.path.join("inference", "reader.py") + ":1 imports cmlm.export"]
  assert sorted(reader_imports_of_export(str(tmp_path))) == [
      os.path.join("cmlm", "mteb_encoder.py") + ":1 imports cmlm.export",
      os.path.join("evaluation", "lazy.py") + ":2 imports cmlm.export",
      os.path.join("evaluation", "scores.py") + ":1 imports cmlm.export",
      os.path.join("inference", "reader.py") + ":1 imports cmlm.export"]


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
                    "from cmlm.projects.some_paper import its_loss\n"
                    "from cmlm import registry_imports\n", encoding="utf-8")
  found = list(garden_imports(str(module)))
  assert found == [(2, "training", None), (3, "projects", "some_paper"),
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
