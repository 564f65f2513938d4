"""A project is a folder you could delete: the core stands without it.

Model Garden's rule for `official/projects/`: the core never imports a
project, and a project is known through one registry line. Here the claim is
run on a copy of the repository with every project folder deleted and every
project line taken out of `cmlm/registry_imports.py`: the command line
helps every core command, every core module imports, no registry names a
project, the README's road (train, export, encode) runs, and the core's
tests that read a registry's contents pass. (Deleting one project is
a part of deleting all: a project imports no other project,
tests/test_layering.py.)
"""
import ast
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from cmlm import layering
from tests import helpers
from tests import shared_builds

REPO_ROOT = helpers.REPO_ROOT
# The core's layers (cmlm/layering.py), less the projects.
LAYERS_OF_THE_CORE = tuple(layer for layer in layering.LAYERS
                           if layer != "projects")
REGISTRY = os.path.join("cmlm", "registry_imports.py")
# What a copy of the tree leaves out: environments, build outputs, runs.
IGNORED = shutil.ignore_patterns(".venv", ".git", "__pycache__", "*.pyc",
                                 "build", "dist", "runs", "site", "*.egg-info",
                                 ".pytest_cache", ".hypothesis")


def project_names():
  return sorted(name for name in os.listdir(os.path.join(REPO_ROOT,
                                                         "projects"))
                if os.path.isdir(os.path.join(REPO_ROOT, "projects", name))
                and not name.startswith("_"))


def garden_without_projects(destination) -> str:
  """A copy of the repository with no project: folders deleted, registry
  lines removed. Returns the copy's root."""
  root = os.path.join(destination, "garden")
  shutil.copytree(REPO_ROOT, root, ignore=IGNORED)
  # ../shared (data, papers) beside the copy, as beside the repository.
  os.symlink(os.path.join(os.path.dirname(REPO_ROOT), "shared"),
             os.path.join(destination, "shared"))
  for name in project_names():
    shutil.rmtree(os.path.join(root, "projects", name))
  path = os.path.join(root, REGISTRY)
  with open(path, encoding="utf-8") as f:
    lines = f.read().splitlines(keepends=True)
  with open(path, "w", encoding="utf-8") as f:
    f.writelines(line for line in lines
                 if not line.startswith("import cmlm.projects."))
  return root


def test_the_registry_has_one_line_per_project():
  with open(os.path.join(REPO_ROOT, REGISTRY), encoding="utf-8") as f:
    registered = re.findall(r"^import cmlm\.projects\.(\w+)\.registry_imports",
                            f.read(), re.MULTILINE)
  assert registered == project_names()


# What runs in the copy, in one process: every module of the core's layers
# is imported (none may need a project), then every registry is read.
IMPORT_THE_CORE = """
import importlib, json, os, sys
road = sys.argv.pop(1)
import cmlm
from cmlm import registry_imports  # the registry, without its project lines
# What every command loads at its start: not the libraries a few use.
at_start = sorted(name for name in sys.modules
                  if name.split(".")[0] in ("sklearn", "apache_beam", "faiss",
                                            "torch", "mteb")
                  or name.startswith("scipy.stats"))
from tests import helpers
from tests import shared_builds
root = os.getcwd()
modules = []
for layer in sys.argv[1:]:
  for path in helpers.walk_sources(os.path.join(root, layer)):
    relative = os.path.relpath(path, root)[:-3].split(os.sep)
    if "tests" in relative:
      continue
    if relative[-1] == "__init__":
      relative = relative[:-1]
    if layer == "cmlm":
      relative = relative[1:]
    name = ".".join(["cmlm"] + relative)
    importlib.import_module(name)
    modules.append(name)
from cmlm.commands import COMMANDS
from cmlm.evaluation import tasks
from cmlm.modeling import pooling_heads
from cmlm.objectives import base
from cmlm.training import run_config
print(json.dumps({
    "at_start": at_start,
    "modules": modules,
    "experiments": run_config.registered_experiments(),
    "objectives": base.registered_kinds(),
    "pooling_heads": pooling_heads.registered_kinds(),
    "eval_tasks": sorted(tasks.TASKS),
    "commands": sorted(COMMANDS)}), flush=True)
"""

# Then the README's road in the same process, each command through the
# command line's `main`, as `python -m cmlm ARGS` runs it: the commands
# (JSON, the first argument) one after another, stopping at the first that
# fails with its status.
THEN_THE_ROAD = """
from cmlm import __main__ as command_line
for argv in json.loads(road):
  try:
    command_line.main(["cmlm"] + argv)
  except SystemExit as exited:
    if exited.code not in (None, 0):
      print(json.dumps({"failed": argv, "status": exited.code}), flush=True)
      sys.exit(1)
print(json.dumps({"road": "done"}))
"""


# What reads a registry's contents: a test that names one of these sees
# which experiments, objectives, tasks or commands are registered, and so
# whether the projects' are there.
REGISTRY_READERS = ("COMMANDS", "registered_kinds", "registered_experiments",
                    "GROUPS", "TASKS", "_REGISTERED_CONFIGS")


def core_tests_reading_the_registries(root):
  """The core's tests (node ids, relative to `root`) that read a
  registry's contents (`REGISTRY_READERS`): the only core tests whose
  outcome the projects' registrations can change, since no core module
  imports a project (tests/test_layering.py). A test is selected when its
  code (decorators included) names a reader, or names or takes as a fixture
  a definition of its file that does, however deep (`_tests_reading`). The
  docs' tests are left out: the pages name the projects by design (a
  project's removal takes its row out of the README and regenerates the
  reference)."""
  selected = []
  for path in helpers.walk_sources(os.path.join(root, "tests")):
    name = os.path.basename(path)
    if not name.startswith("test_") or name in ("test_docs.py",
                                                os.path.basename(__file__)):
      continue
    relative = os.path.relpath(path, root)
    selected += [f"{relative}::{test}" for test in _tests_reading(path)]
  return sorted(selected)


def _defined_names(node):
  """The module-level names a statement of a test file defines."""
  if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
    return [node.name]
  if isinstance(node, (ast.Import, ast.ImportFrom)):
    return [(alias.asname or alias.name).split(".")[0]
            for alias in node.names]
  return [target.id for target in ast.walk(node)
          if isinstance(target, ast.Name) and isinstance(target.ctx,
                                                         ast.Store)]


def _tests_reading(path):
  """The tests of one file (module-level functions `test_*` and classes
  `Test*`) that read a registry. A module-level definition reads one when
  its code names a reader or a name it uses (or a fixture it takes) is a
  definition that reads one; an autouse fixture that reads one selects
  every test of the file."""
  with open(path, encoding="utf-8") as f:
    tree = ast.parse(f.read())
  reads, uses, autouse_fixtures = {}, {}, set()
  for node in tree.body:
    used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    used |= {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
    used |= {n.arg for n in ast.walk(node) if isinstance(n, ast.arg)}
    code = ast.unparse(node)
    names_a_reader = any(reader in code for reader in REGISTRY_READERS)
    if isinstance(node, ast.FunctionDef) and "autouse=True" in code:
      autouse_fixtures.add(node.name)
    for name in _defined_names(node):
      reads[name] = reads.get(name, False) or names_a_reader
      uses.setdefault(name, set()).update(used)
  changed = True
  while changed:  # to a fixed point: whatever uses a reader reads too
    changed = False
    for name, used in uses.items():
      if not reads[name] and any(reads.get(u) for u in used - {name}):
        reads[name] = changed = True
  autouse = any(reads[name] for name in autouse_fixtures)
  return [node.name for node in tree.body
          if isinstance(node, (ast.FunctionDef, ast.ClassDef))
          and node.name.startswith(("test_", "Test"))
          and (autouse or reads[node.name])]


def override_string(tree, prefix=""):
  """A nested override dict as `--params_override`'s `a.b=c,...`."""
  items = []
  for key, value in tree.items():
    name = f"{prefix}.{key}" if prefix else key
    items += ([override_string(value, name)] if isinstance(value, dict)
              else [f"{name}={value}"])
  return ",".join(items)


def test_the_selection_finds_the_tests_that_read_a_registry():
  """The selection itself, test by test: the command line's listing test
  (the command list) and the experiments' (the registered names) are
  selected; a test of the same file that reads no registry and a loss's
  tests are not."""
  selected = core_tests_reading_the_registries(REPO_ROOT)
  cli = os.path.join("tests", "cmlm", "test_cli.py")
  assert f"{cli}::test_without_a_known_command_the_commands_are_listed" in (
      selected)
  assert f"{cli}::test_an_unknown_flag_is_a_one_line_error" not in selected
  assert any(test.startswith(os.path.join("tests", "experiments",
                                          "test_experiments.py") + "::")
             for test in selected)
  assert not any(test.startswith(os.path.join("tests", "modeling",
                                              "test_bitext_loss.py"))
                 for test in selected)


READS = """
import pytest
from cmlm.commands import COMMANDS
NAMES = sorted(COMMANDS)
def names():
  return NAMES
def deeper():
  return names()
@pytest.fixture
def listed():
  return deeper()
def test_direct():
  assert COMMANDS
def test_through_helpers():
  assert deeper()
def test_through_a_fixture(listed):
  assert listed
@pytest.mark.parametrize("name", NAMES)
def test_parametrized(name):
  assert name
def test_nothing():
  assert True
"""


def test_a_test_reading_a_registry_through_its_file_s_helpers_is_selected(
    tmp_path):
  """Through a helper, a fixture, a module constant, however deep, and
  every test of a file by an autouse fixture; a test naming nothing that
  reads is left out."""
  tests = tmp_path / "tests"
  tests.mkdir()
  (tests / "test_reads.py").write_text(READS)
  (tests / "test_autouse.py").write_text(
      "import pytest\n"
      "from cmlm.evaluation import tasks\n"
      "@pytest.fixture(autouse=True)\ndef every():\n  assert tasks.TASKS\n"
      "def test_one():\n  assert True\n")
  (tests / "test_none.py").write_text("def test_plain():\n  assert 1\n")
  reads = os.path.join("tests", "test_reads.py") + "::"
  assert core_tests_reading_the_registries(str(tmp_path)) == [
      os.path.join("tests", "test_autouse.py") + "::test_one",
      reads + "test_direct", reads + "test_parametrized",
      reads + "test_through_a_fixture", reads + "test_through_helpers"]


@pytest.mark.slow
def test_the_core_stands_with_every_project_deleted(tmp_path,
                                                   tmp_path_factory):
  """In a copy without the projects: the command line lists and helps every
  core command; every module of the core imports and the registries hold the
  core's names; the road of the README (train, export, encode) runs through
  the registry; and the core's tests that read a registry's contents
  (`core_tests_reading_the_registries`) pass. The core's other tests run
  the same code with or without the projects' folders: no core module
  imports a project (tests/test_layering.py).

  Those tests take this session's tiny run and exports
  (tests/shared_builds.py) rather than building their own: the copy trains
  and exports itself on the README's road above."""
  root = garden_without_projects(str(tmp_path))
  assert os.listdir(os.path.join(root, "projects")) == ["__init__.py"]
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  env.pop("CMLM_DEBUG", None)

  def run(*args, timeout=600):
    return subprocess.run([sys.executable, *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=timeout)
  listing = run("-m", "cmlm", "--help")
  assert listing.returncode == 0, listing.stderr[-2000:]
  assert "ngrams" not in listing.stdout  # a project's command is gone
  assert "\n  train " in listing.stdout
  from cmlm.commands import CORE_COMMANDS  # pylint: disable=g-import-not-at-top
  for command in CORE_COMMANDS:
    helped = run("-m", "cmlm", command, "--help")
    assert helped.returncode == 0, (command, helped.stderr[-2000:])

  # Every core module imported, then the road through the registry (train
  # two steps, export, encode), in one process.
  model_dir, export_dir = tmp_path / "run", tmp_path / "export"
  (tmp_path / "sentences.txt").write_text("a sentence\nanother\n")
  road = [["train", "--experiment=cmlm/tiny", f"--model_dir={model_dir}",
           "--params_override=" + override_string(
               helpers.tiny_run_overrides(2))],
          ["export", f"--model_dir={model_dir}", f"--export_dir={export_dir}"],
          ["encode", f"--model={export_dir}",
           f"--input={tmp_path / 'sentences.txt'}",
           f"--output={tmp_path / 'vectors.npy'}"]]
  imported = run("-c", IMPORT_THE_CORE + THEN_THE_ROAD, json.dumps(road),
                 *LAYERS_OF_THE_CORE)
  assert imported.returncode == 0, (imported.stdout[-2000:] +
                                    imported.stderr[-3000:])
  lines = imported.stdout.strip().splitlines()
  found = json.loads(next(line for line in lines
                          if line.startswith('{"at_start"')))
  assert found["at_start"] == []  # imported where used (a command's start)
  assert "cmlm.training.train" in found["modules"]
  assert "cmlm.inference.embedders" in found["modules"]
  # The core's registrations stand, and only they: the commands are the
  # core's, every core objective and the core's experiments are there.
  assert found["commands"] == sorted(CORE_COMMANDS)
  assert {"cmlm", "bitext_retrieval", "nli"} <= set(found["objectives"])
  assert {"cmlm/tiny", "cmlm/en_base"} <= set(found["experiments"])
  assert "sts-b" in found["eval_tasks"]
  assert lines[-1] == json.dumps({"road": "done"})
  import numpy as np  # pylint: disable=g-import-not-at-top
  assert np.load(tmp_path / "vectors.npy").shape[0] == 2

  selected = core_tests_reading_the_registries(root)
  assert any(test.startswith(os.path.join("tests", "cmlm", "test_cli.py"))
             for test in selected)
  env[shared_builds.ROOT_VARIABLE] = shared_builds.shared_root(
      tmp_path_factory)
  tests = run("-m", "pytest", "-q", "-x", "-m", "not slow",
              "-p", "no:cacheprovider", "-p", "no:xdist", *selected,
              timeout=1800)
  summary = tests.stdout.strip().splitlines()[-1] if tests.stdout else ""
  assert tests.returncode == 0, tests.stdout[-4000:] + tests.stderr[-2000:]
  assert " passed" in summary and "failed" not in summary, summary
