"""A project is its folder plus one registry line: no core file names one.

Model Garden's `official/projects/` (STYLE.md, "A paper is a place"): the
core finds a project's pages, scripts and tests by glob
(`projects/*/README.md`, `projects/*/*.py`, pytest's `testpaths`) or through
what the project registers, never by its name; the one line that names a
project is its `import cmlm.projects.<name>.registry_imports` in
`cmlm/registry_imports.py`. So every core file (outside `projects/`: the
code, the tests, the build and CI files) is read here for a project's name
as a path (`projects/<name>/...`, `os.path.join("projects", "<name>")`), a
module (`cmlm.projects.<name>`) or a string of its own (`"<name>"`). The
pages (Markdown) name the projects by design, and data files are not read.
(Imports alone: tests/test_layering.py; the core with every project
deleted: tests/test_projects_removable.py.)
"""
import os
import re
from typing import List

from tests import helpers

REPO_ROOT = helpers.REPO_ROOT
REGISTRY = os.path.join("cmlm", "registry_imports.py")
REGISTRY_LINE = re.compile(
    r"import cmlm\.projects\.(\w+)\.registry_imports  # noqa: F401")
# What a core file is: code, tests, build and CI files (not pages, data).
CORE_SUFFIXES = (".py", ".toml", ".ini", ".cfg", ".txt", ".yml", ".yaml",
                 ".sh")
CORE_NAMES = ("Makefile", "run")  # run: .ci/run
# Folders of the tree that are not the core: the projects themselves, data,
# and what runs and builds leave (besides helpers.SKIPPED_FOLDERS).
NOT_CORE = ("projects", "data", "runs")


def project_names(root: str) -> List[str]:
  """The projects of the tree at `root`: each folder of projects/ that is
  a package."""
  folder = os.path.join(root, "projects")
  return sorted(name for name in os.listdir(folder)
                if os.path.isfile(os.path.join(folder, name, "__init__.py")))


def core_files(root: str) -> List[str]:
  """The core's files under `root` (relative paths): every code, test,
  build and CI file outside the projects, data and build outputs."""
  found = []
  for folder, dirs, files in os.walk(root):
    top = os.path.relpath(folder, root) == "."
    dirs[:] = sorted(
        d for d in dirs if d not in helpers.SKIPPED_FOLDERS
        and not d.endswith(".egg-info")
        and (not d.startswith(".") or d == ".ci")
        and not (top and d in NOT_CORE))
    for name in sorted(files):
      if name.endswith(CORE_SUFFIXES) or name in CORE_NAMES:
        found.append(os.path.relpath(os.path.join(folder, name), root))
  return found


def naming_pattern(name: str) -> re.Pattern:
  """A project's name as a path or module below projects/, or as a string
  of its own (`"some_paper"`, `'some_paper/README.md'`)."""
  return re.compile(rf"\bprojects\W{{1,4}}{name}\b|[\"']{name}\b")


def project_namings(root: str) -> List[str]:
  """`path:line: name` for every line of a core file that names a project
  of the tree at `root`, but a registry line."""
  patterns = {name: naming_pattern(name) for name in project_names(root)}
  found = []
  for path in core_files(root):
    with open(os.path.join(root, path), encoding="utf-8",
              errors="replace") as f:
      lines = f.read().splitlines()
    for number, line in enumerate(lines, 1):
      if path == REGISTRY and REGISTRY_LINE.fullmatch(line):
        continue
      for name, pattern in patterns.items():
        if pattern.search(line):
          found.append(f"{path}:{number}: {name}")
  return found


def test_no_core_file_names_a_project():
  """A project is found by glob or by its registration, never by name: a
  core file that names one would break (or silently skip it) when the
  project's folder is deleted."""
  assert project_namings(REPO_ROOT) == [], (
      "core files naming a project (find it by glob or through its "
      "registration instead):\n" + "\n".join(project_namings(REPO_ROOT)))


def test_the_core_files_are_the_code_tests_and_build_files():
  files = core_files(REPO_ROOT)
  for path in ("Makefile", "setup.py", "pyproject.toml", "pytest.ini",
               os.path.join(".ci", "run"), REGISTRY,
               os.path.join("experiments", "evidence_tables.py"),
               os.path.join("tests", "test_scripts.py")):
    assert path in files, path
  assert not any(path.startswith(("projects" + os.sep, "data" + os.sep))
                 or path.endswith(".md") for path in files)


def test_the_check_catches_a_planted_project_name(tmp_path):
  """The checker itself, on a made-up garden with one project: its registry
  line passes; a path, a joined path, a module, a listed name and a
  Makefile line naming the project are each caught."""
  def write(path, text):
    (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / path).write_text(text, encoding="utf-8")
  write("projects/some_paper/__init__.py", "")
  write("projects/some_paper/README.md", "projects/some_paper/README.md\n")
  write("cmlm/registry_imports.py",
        "import cmlm.experiments.registry_imports  # noqa: F401\n"
        "import cmlm.projects.some_paper.registry_imports  # noqa: F401\n")
  write("docs/page.md", "See projects/some_paper/README.md.\n")
  assert project_namings(str(tmp_path)) == []

  write("experiments/tables.py", 'PAGES = ("projects/some_paper/README.md",)\n'
        'OTHER = os.path.join("projects", "some_paper", "README.md")\n'
        "from cmlm.projects.some_paper import loss\n")
  write("tests/test_scripts.py", 'for project in ("some_paper",):\n')
  write("Makefile", "evidence:\n\tpython projects/some_paper/evidence.py\n")
  write("cmlm/registry_imports.py",
        "import cmlm.projects.some_paper.registry_imports  # noqa: F401\n"
        "from cmlm.projects.some_paper import experiments\n")
  assert project_namings(str(tmp_path)) == [
      "Makefile:2: some_paper",
      os.path.join("cmlm", "registry_imports.py") + ":2: some_paper",
      os.path.join("experiments", "tables.py") + ":1: some_paper",
      os.path.join("experiments", "tables.py") + ":2: some_paper",
      os.path.join("experiments", "tables.py") + ":3: some_paper",
      os.path.join("tests", "test_scripts.py") + ":1: some_paper"]
