"""A project is a folder you could delete: the core stands without it.

Model Garden's rule for `official/projects/`: the core never imports a
project, and a project is known through one registry line. Here the whole
claim is run: a copy of the repository with every project folder deleted
and every project line taken out of `cmlm/registry_imports.py` runs the
command line and the core's own test suite, green. (Deleting one project is
a part of deleting all: a project imports no other project,
tests/test_layering.py.)
"""
import os
import re
import shutil
import subprocess
import sys

import pytest

from tests import helpers

REPO_ROOT = helpers.REPO_ROOT
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


@pytest.mark.slow
def test_the_core_passes_its_tests_with_every_project_deleted(tmp_path):
  root = garden_without_projects(str(tmp_path))
  assert os.listdir(os.path.join(root, "projects")) == ["__init__.py"]
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  env.pop("CMLM_DEBUG", None)
  listing = subprocess.run([sys.executable, "-m", "cmlm", "--help"], cwd=root,
                           env=env, capture_output=True, text=True,
                           timeout=300)
  assert listing.returncode == 0, listing.stderr[-2000:]
  assert "ngrams" not in listing.stdout  # a project's command is gone
  assert "\n  train " in listing.stdout
  tests = subprocess.run(
      [sys.executable, "-m", "pytest", "-q", "-x", "-m", "not slow",
       "-p", "no:cacheprovider", "tests",
       "--deselect", "tests/test_projects_removable.py"],
      cwd=root, env=env, capture_output=True, text=True, timeout=1800)
  summary = tests.stdout.strip().splitlines()[-1] if tests.stdout else ""
  assert tests.returncode == 0, tests.stdout[-4000:] + tests.stderr[-2000:]
  assert " passed" in summary and "failed" not in summary, summary
