"""The documentation stays true to the code and within its bounds.

  * docs/reference/commands.md is what docs/generate_reference.py writes
    from the commands' flags and the registry today (never hand-edited);
  * `mkdocs build --strict` passes: no broken link or anchor, no page left
    out of the navigation (the README, BUILD.md and the projects' READMEs
    are pages too, through docs/hooks.py);
  * README.md stays under 150 lines and BUILD.md under 260;
  * every project's README has the sections a paper's place needs.

The reference and the site cover the core and every project, so they are
marked slow: tests/test_projects_removable.py runs the fast tests on a copy
of the tree without the projects, whose docs would name what is gone.
"""
import importlib.util
import os
import re
import subprocess
import sys

import pytest

from tests import helpers

REPO_ROOT = helpers.REPO_ROOT
PAPERS = os.path.join(os.path.dirname(REPO_ROOT), "shared", "papers")
# The sections of a project's README (Model Garden's official/projects/),
# as `## ` headings: a name, and the pattern its heading must match.
PROJECT_SECTIONS = {
    "paper": r"Paper",
    "implemented": r"What is implemented",
    "departures": r"Departures from the paper",
    "recipe": r"Recipe",
    "run": r"(How to )?[Rr]un",
    "results": r"Results",
}


def project_readmes():
  projects = os.path.join(REPO_ROOT, "projects")
  return sorted(
      os.path.join(projects, name, "README.md")
      for name in os.listdir(projects)
      if os.path.isdir(os.path.join(projects, name))
      and not name.startswith(("_", ".")))


def line_count(name):
  with open(os.path.join(REPO_ROOT, name), encoding="utf-8") as f:
    return len(f.read().splitlines())


def sections(markdown):
  """{`## ` heading: its text up to the next `## ` heading}, outside code
  blocks."""
  found, heading, fenced = {}, None, False
  for line in markdown.splitlines():
    if line.lstrip().startswith("```"):
      fenced = not fenced
    if not fenced and line.startswith("## "):
      heading = line[3:].strip()
      found[heading] = []
    elif heading is not None:
      found[heading].append(line)
  return {name: "\n".join(lines) for name, lines in found.items()}


def test_readme_and_build_guide_stay_short():
  assert line_count("README.md") <= 150, (
      "README.md is the front page: at most 150 lines; move details to "
      "docs/.")
  assert line_count("BUILD.md") <= 260, (
      "BUILD.md keeps install, test and benchmarks: at most ~250 lines; "
      "move details to docs/ or a project's README.")


@pytest.mark.parametrize("readme", project_readmes(),
                         ids=lambda path: os.path.basename(os.path.dirname(path)))
def test_each_project_readme_has_the_sections_of_a_paper(readme):
  assert os.path.isfile(readme), f"{readme} is missing"
  with open(readme, encoding="utf-8") as f:
    text = f.read()
  found = sections(text)
  matched = {}
  for name, pattern in PROJECT_SECTIONS.items():
    headings = [h for h in found if re.fullmatch(pattern, h)]
    assert headings, (f"{readme} has no '## {pattern}' section; it needs "
                      f"{', '.join(PROJECT_SECTIONS)}.")
    matched[name] = found[headings[0]]
  papers = re.findall(r"\.\./shared/papers/([\w.-]+\.txt)", matched["paper"])
  assert papers, "the Paper section names its file under ../shared/papers/"
  if os.path.isdir(PAPERS):
    for paper in papers:
      assert os.path.isfile(os.path.join(PAPERS, paper)), paper
  assert re.search(r"^\|[-:| ]+\|$", matched["results"], re.M), (
      "the Results section holds a table")
  assert re.search(r"\bseeds?\b", matched["results"]), (
      "the Results section says how many seeds")
  assert "python " in matched["results"], (
      "the Results section gives the command that produced it")
  assert "python -m cmlm" in matched["run"], "the Run section has commands"
  assert re.search(r"`\w+/\w+`", matched["recipe"]), (
      "the Recipe section names the registered experiments")


def _hooks():
  pytest.importorskip("mkdocs", reason="mkdocs is in requirements-test.txt")
  spec = importlib.util.spec_from_file_location(
      "docs_hooks", os.path.join(REPO_ROOT, "docs", "hooks.py"))
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


@pytest.mark.parametrize("page, site, target, expected", [
    ("README.md", "index.md", "docs/training.md", "training.md"),
    ("README.md", "index.md", "BUILD.md", "build.md"),
    ("BUILD.md", "build.md", "docs/export.md#tf-serving",
     "export.md#tf-serving"),
    ("docs/export.md", "export.md", "../README.md#export-serve-encode",
     "index.md#export-serve-encode"),
    ("docs/reference/commands.md", "reference/commands.md", "../training.md",
     "../training.md"),
    ("docs/data.md", "data.md", "#nli", "#nli"),
    ("docs/data.md", "data.md", "https://example.org/x.md",
     "https://example.org/x.md"),
    ("docs/data.md", "data.md", "../modeling/vectors.py",
     "../modeling/vectors.py"),  # no page: left for --strict to report
])
def test_links_written_for_the_repository_resolve_in_the_site(
    page, site, target, expected):
  assert _hooks().rewrite_link(target, page, site) == expected


@pytest.mark.slow
def test_the_command_reference_is_generated_from_the_code():
  """A fresh generation equals the committed file: a flag's help changed
  without `make docs` fails here."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  completed = subprocess.run(
      [sys.executable, os.path.join("docs", "generate_reference.py"),
       "--check"], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
      timeout=600)
  assert completed.returncode == 0, (completed.stdout + completed.stderr)[-3000:]


@pytest.mark.slow
def test_the_documentation_site_builds_strictly(tmp_path):
  """Every link and anchor resolves and every page is in the navigation."""
  pytest.importorskip("mkdocs", reason="mkdocs is in requirements-test.txt")
  pytest.importorskip("material", reason="mkdocs-material is in "
                      "requirements-test.txt")
  env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
  completed = subprocess.run(
      [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
       str(tmp_path / "site")], cwd=REPO_ROOT, env=env, capture_output=True,
      text=True, timeout=600)
  output = completed.stdout + completed.stderr
  assert completed.returncode == 0, output[-3000:]
  assert "WARNING" not in output, output[-3000:]
  for page in ("index.html", "build/index.html", "architecture/index.html",
               "reference/commands/index.html"):
    assert (tmp_path / "site" / page).is_file(), page
  for readme in project_readmes():
    name = os.path.basename(os.path.dirname(readme))
    assert (tmp_path / "site" / "projects" / name / "index.html").is_file()
