"""The garden's imports point down the layers, and projects stay apart.

    cmlm.data_pipelines <- cmlm.modeling <- cmlm.objectives <- cmlm.training
      <- cmlm.inference <- cmlm.export <- cmlm.evaluation <- cmlm.experiments
      <- cmlm.projects.<name> <- cmlm (the command line, the API, the registry)

A core module may import its own package and the packages below it. A
project (`projects/<name>/`) may import the core, never another project, and
the core imports no project: `cmlm/registry_imports.py` is the one module
that names them. Scripts run as `__main__` (evidence scripts, benchmarks)
and a project's command modules sit on top of everything.
"""
import ast
import os

import pytest

from tests import helpers

REPO_ROOT = helpers.REPO_ROOT
LAYERS = ("data_pipelines", "modeling", "objectives", "training",
          "inference", "export", "evaluation", "experiments", "projects",
          "cmlm")
RANK = {name: rank for rank, name in enumerate(LAYERS)}
walk_sources = helpers.walk_sources  # skips build outputs and environments


def garden_imports(path):
  """(line, layer, project or None) of every import of the garden in a
  file: `cmlm.modeling.x` is layer modeling, `cmlm.projects.misad.x` is
  layer projects of project misad, `cmlm.x` (not a layer) is layer cmlm."""
  with open(path, encoding="utf-8") as f:
    tree = ast.parse(f.read(), path)
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
      parts = name.split(".")
      if parts[0] != "cmlm":
        continue
      layer = parts[1] if len(parts) > 1 and parts[1] in RANK else "cmlm"
      project = parts[2] if layer == "projects" and len(parts) > 2 else None
      yield node.lineno, layer, project


def _is_script(path):
  """Scripts and a project's command modules (`register_command`) sit on
  top, with the command line."""
  with open(path, encoding="utf-8") as f:
    text = f.read()
  return ('if __name__ == "__main__":' in text
          or "commands.register_command(" in text)


def _library_modules():
  """(layer, project or None, path) of every library module of the core's
  layers and of the projects (cmlm/ is the top: it may import anything)."""
  for layer in LAYERS[:-1]:
    for path in walk_sources(os.path.join(REPO_ROOT, layer)):
      relative = os.path.relpath(path, REPO_ROOT).split(os.sep)
      if "tests" in relative[1:] or _is_script(path):
        continue
      project = relative[1] if layer == "projects" and len(relative) > 2 else None
      yield layer, project, path


def test_every_library_import_points_down_the_layers():
  upward = []
  for layer, _, path in _library_modules():
    for line, imported, _ in garden_imports(path):
      if RANK[imported] > RANK[layer]:
        upward.append(f"{os.path.relpath(path, REPO_ROOT)}:{line} imports "
                      f"cmlm.{imported}")
  assert not upward, "imports from a lower layer to a higher one:\n" + (
      "\n".join(upward))


def test_a_project_imports_no_other_project():
  crossing = []
  for _, project, path in _library_modules():
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
