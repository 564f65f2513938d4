"""The documentation stays true to the code and within its bounds.

  * docs/reference/commands.md is what docs/generate_reference.py writes
    from the commands' flags and the registry today (never hand-edited);
  * `mkdocs build --strict` passes: no broken link or anchor, no page left
    out of the navigation (the README, BUILD.md and the projects' READMEs
    are pages too, through docs/hooks.py);
  * README.md stays under 200 lines and BUILD.md under 260;
  * every project's README has the sections a paper's place needs, and
    links its paper;
  * the user docs (README.md, docs/, the projects' READMEs, CHANGELOG.md)
    carry no process notes (issue numbers, sessions, lent machines, locks)
    and no path outside the repository; BUILD.md, the developer's guide,
    may name the tests' data folder;
  * no Markdown table is followed by a list without a blank line (the list
    would render as rows of the table);
  * every object of the Python API page (docs/api.md) has an `Examples:`
    section in its docstring;
  * LICENSE, pyproject.toml and CITATION.cff agree on the license, and
    CITATION.cff cites the five papers with a link each.

The reference and the site cover the core and every project, so they are
marked slow: tests/test_projects_removable.py runs the fast tests on a copy
of the tree without the projects, whose docs would name what is gone.
"""
import glob
import importlib
import importlib.util
import inspect
import os
import re
import subprocess
import sys
import tomllib

import pytest
import yaml

from tests import helpers

REPO_ROOT = helpers.REPO_ROOT
# How a project's README names its paper: an arXiv or DOI link, or the
# citing page (a paper whose text gives neither).
PAPER_LINK = re.compile(r"https://(arxiv\.org/abs/|doi\.org/)|docs/citing\.md")
# What a user's page must not carry: the garden's own process.
PROCESS_NOTES = re.compile(
    r"\bissues? #?\d+|\bsessions?\b|\blent\b|\bheavy lock\b|"
    r"\bthis task\b|cmlm-heavy|/work/", re.IGNORECASE)
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


def user_docs():
  """README.md, CHANGELOG.md, docs/*.md, the generated command reference
  and the projects' READMEs, relative to the repository."""
  pages = ["README.md", "CHANGELOG.md"] + sorted(
      os.path.relpath(path, REPO_ROOT) for path in
      glob.glob(os.path.join(REPO_ROOT, "docs", "*.md"))) + [
          os.path.join("docs", "reference", "commands.md")]
  return pages + [os.path.relpath(path, REPO_ROOT)
                  for path in project_readmes()]


def prose(markdown):
  """The text a reader reads as words: code blocks and inline code spans
  dropped (a `session.run` is code, not a note)."""
  without_blocks = re.sub(r"^```.*?^```", "", markdown,
                          flags=re.MULTILINE | re.DOTALL)
  return re.sub(r"`[^`\n]*`", "", without_blocks)


def test_readme_and_build_guide_stay_short():
  assert line_count("README.md") <= 200, (
      "README.md is the front page: at most 200 lines; move details to "
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
  assert PAPER_LINK.search(matched["paper"]), (
      "the Paper section links the paper: arXiv, DOI, or docs/citing.md")
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
  with open(tmp_path / "site" / "api" / "index.html", encoding="utf-8") as f:
    api = f.read()
  for name in api_page_objects():  # each rendered, with its examples
    assert name.rsplit(".", 1)[1] in api, name
  assert api.count("Examples") >= len(api_page_objects())
  for page in ("index.html", "build/index.html", "architecture/index.html",
               "reference/commands/index.html", "api/index.html",
               "benchmarks/index.html", "citing/index.html",
               "changelog/index.html"):
    assert (tmp_path / "site" / page).is_file(), page
  for readme in project_readmes():
    name = os.path.basename(os.path.dirname(readme))
    assert (tmp_path / "site" / "projects" / name / "index.html").is_file()


@pytest.mark.parametrize("page", user_docs())
def test_user_docs_carry_no_process_notes_nor_outside_paths(page):
  with open(os.path.join(REPO_ROOT, page), encoding="utf-8") as f:
    text = f.read()
  notes = [m.group(0) for m in PROCESS_NOTES.finditer(prose(text))]
  assert not notes, f"{page} carries process notes: {notes}"
  folder = os.path.dirname(os.path.join(REPO_ROOT, page))
  # A relative path that leaves the repository from the page's folder, or
  # that names the developers' shared folder beside it from the root.
  outside = []
  for path in re.findall(r"(?<![\w.])((?:\.\./)+[\w./*-]*)", text):
    target = os.path.normpath(os.path.join(folder, path.split("#")[0]))
    if (os.path.relpath(target, REPO_ROOT).startswith("..")
        or re.match(r"(\.\./)+shared\b", path)):
      outside.append(path)
  assert not outside, f"{page} names paths outside the repository: {outside}"


def test_the_build_guide_carries_no_process_notes():
  """BUILD.md may name the tests' data folder, not the garden's process
  (pytest's session fixtures are its own words)."""
  with open(os.path.join(REPO_ROOT, "BUILD.md"), encoding="utf-8") as f:
    text = prose(f.read()).replace("session fixtures", "")
  assert not PROCESS_NOTES.search(text), PROCESS_NOTES.search(text).group(0)


@pytest.mark.parametrize("page", user_docs() + ["BUILD.md"])
def test_no_table_runs_into_a_list(page):
  with open(os.path.join(REPO_ROOT, page), encoding="utf-8") as f:
    lines = f.read().splitlines()
  fenced, previous = False, ""
  for number, line in enumerate(lines, start=1):
    if line.lstrip().startswith("```"):
      fenced = not fenced
    if not fenced:
      assert not (previous.startswith("|") and
                  re.match(r"\s*([-*+]|\d+\.)\s", line)), (
          f"{page}:{number}: a list right after a table renders as its "
          "rows; put a blank line between them")
    previous = line


def api_page_objects():
  with open(os.path.join(REPO_ROOT, "docs", "api.md"), encoding="utf-8") as f:
    return re.findall(r"^::: ([\w.]+)$", f.read(), re.M)


def test_every_object_of_the_api_page_has_examples():
  """The page renders each object's docstring; each shows how it is
  called."""
  names = api_page_objects()
  for public in ("SentenceEncoder", "mteb_model", "load_embedder",
                 "export_run", "read_run", "prepare", "build_params",
                 "train.run", "Objective"):
    assert any(name.endswith(public) for name in names), public
  missing = []
  for name in names:
    module_name, attribute = name.rsplit(".", 1)
    documented = getattr(importlib.import_module(module_name), attribute)
    docstring = inspect.getdoc(documented) or ""
    if not re.search(r"^Examples:$", docstring, re.M):
      missing.append(name)
  assert not missing, f"docstrings without an Examples: section: {missing}"


def test_the_license_and_the_citations_agree():
  with open(os.path.join(REPO_ROOT, "LICENSE"), encoding="utf-8") as f:
    assert "Apache License" in f.read(2000)
  with open(os.path.join(REPO_ROOT, "pyproject.toml"), "rb") as f:
    project = tomllib.load(f)["project"]
  assert project["license"] == {"text": "Apache-2.0"}
  with open(os.path.join(REPO_ROOT, "CITATION.cff"), encoding="utf-8") as f:
    citation = yaml.safe_load(f)
  assert citation["license"] == "Apache-2.0"
  references = citation["references"]
  assert len(references) == 5
  for reference in references[:4]:
    assert reference.get("url") or reference.get("doi"), reference["title"]
  with open(os.path.join(REPO_ROOT, "docs", "citing.md"),
            encoding="utf-8") as f:
    citing = f.read()
  for reference in references:
    title = reference["title"].split(":")[0].replace("{", "")
    assert title.split()[0].lower() in citing.lower(), reference["title"]
