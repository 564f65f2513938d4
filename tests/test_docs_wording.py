"""A newcomer's guide speaks of the garden, not of where it was written.

  * The pages (README.md, BUILD.md, CHANGELOG.md, docs/, each project's
    README.md), pyproject.toml and every command's help carry none of the
    wording of the machine the garden was built on ("not run here", "this
    machine", "offline here", "its former place", ...): what no test runs is
    said once, in docs/architecture.md's "What is and is not tested".
  * No file outside the tests (code, docstrings, results JSON, pages,
    configs, data notes) names a path outside the repository: the
    developers' data folder beside the checkout, `../shared`, or an
    absolute `/work/` path. The tests may read that folder
    (`tests/helpers.SHARED_DATA`); the code takes data folders by flag.

Each check is shown to catch a planted phrase or path.
"""
import glob
import os
import re

import pytest

from tests import helpers

REPO_ROOT = helpers.REPO_ROOT
# Process wording: phrases that speak of the machine or the history of the
# work rather than of the garden, and "here" meaning a machine.
PROCESS_PHRASES = (
    "not run here", "this machine", "offline here", "its former place",
    "first round", "a driver kept outside the repository", "a lever's before",
    "the design card's top-level folders", "tested here", "not tested here",
    "reachable from here", "the issue asks")
MACHINE_HERE = re.compile(
    r"\b(?:not (?:run|tested|installed|reachable|available)|offline|"
    r"untested|absent|measured|installed|run)\s+here\b|"
    r"\bhere\s+\((?:no network|no cluster|no gpu|no tpu|offline)",
    re.IGNORECASE)
# A path outside the repository: the data folder beside the checkout, by a
# relative path or by joining its parts, or the absolute place of a checkout.
OUTSIDE_PATH = re.compile(
    r"\.\./shared\b|(?<![\w.])/work/|"
    r"""["']shared["']\s*,\s*["']data["']""")
# Folders that are not the garden's files: build outputs, environments, runs.
SKIPPED = helpers.SKIPPED_FOLDERS | {"runs", "node_modules"}
TEXT_SUFFIXES = (".py", ".md", ".json", ".yaml", ".yml", ".toml", ".cfg",
                 ".ini", ".txt", ".cff", ".sh", ".in")
# The embedded corpora are books and speeches, not the garden's words.
CORPUS_FOLDERS = (os.path.join("data", "corpus_en"),)


def pages():
  """The pages a newcomer reads, relative to the repository."""
  found = ["README.md", "BUILD.md", "CHANGELOG.md", "pyproject.toml"]
  found += sorted(
      os.path.relpath(path, REPO_ROOT) for path in
      glob.glob(os.path.join(REPO_ROOT, "docs", "**", "*.md"),
                recursive=True))
  found += sorted(
      os.path.relpath(path, REPO_ROOT) for path in
      glob.glob(os.path.join(REPO_ROOT, "projects", "*", "README.md")))
  return found


def process_wording(text):
  """The process phrases in `text` (lower-cased matches)."""
  lowered = " ".join(text.lower().split())  # phrases across line breaks
  found = [phrase for phrase in PROCESS_PHRASES if phrase in lowered]
  return found + [m.group(0) for m in MACHINE_HERE.finditer(lowered)]


def command_help():
  """The sources of every command's help: the `python -m cmlm` overview and
  each command module's docstring and flags (docs/reference/commands.md,
  one of the pages, is the same help as printed, the projects' included)."""
  paths = [os.path.join(REPO_ROOT, "cmlm", "__main__.py")] + sorted(
      glob.glob(os.path.join(REPO_ROOT, "cmlm", "commands", "*.py")))
  texts = {}
  for path in paths:
    with open(path, encoding="utf-8") as f:
      texts[os.path.relpath(path, REPO_ROOT)] = f.read()
  return texts


def garden_files():
  """Every text file of the garden outside the tests (and the corpora),
  relative to the repository."""
  for folder, dirs, files in os.walk(REPO_ROOT):
    relative = os.path.relpath(folder, REPO_ROOT)
    dirs[:] = sorted(
        d for d in dirs if d != ".git" and d not in SKIPPED
        and not d.endswith(".egg-info")
        and os.path.normpath(os.path.join(relative, d)) not in CORPUS_FOLDERS
        and not (d == "tests" and (relative == "."
                                   or relative.startswith("projects"))))
    for name in sorted(files):
      if (name.endswith(TEXT_SUFFIXES) or name in ("Makefile", "run")) and (
          name != "conftest.py"):
        yield os.path.normpath(os.path.join(relative, name))


def outside_paths(text):
  return [m.group(0) for m in OUTSIDE_PATH.finditer(text)]


@pytest.mark.parametrize("page", pages())
def test_pages_carry_no_process_wording(page):
  with open(os.path.join(REPO_ROOT, page), encoding="utf-8") as f:
    found = process_wording(f.read())
  assert not found, f"{page} carries process wording: {found}"


def test_command_help_carries_no_process_wording():
  found = {name: process_wording(text)
           for name, text in command_help().items()}
  assert not any(found.values()), {k: v for k, v in found.items() if v}


def test_one_section_says_what_is_and_is_not_tested():
  with open(os.path.join(REPO_ROOT, "docs", "architecture.md"),
            encoding="utf-8") as f:
    text = f.read()
  assert "\n## What is and is not tested\n" in text
  section = text.split("\n## What is and is not tested\n")[1]
  section = section.split("\n## ")[0]
  for what in ("GPU", "TPU", "TF Serving", "Dataflow", "Dask"):
    assert what in section, what


@pytest.mark.parametrize("phrase", PROCESS_PHRASES + (
    "The tests were not run here (no cluster).",
    "all the NLI data that is offline here",
    "Not tested\nhere: no server."))
def test_the_wording_check_catches_a_planted_phrase(phrase):
  with open(os.path.join(REPO_ROOT, "docs", "export.md"),
            encoding="utf-8") as f:
    page = f.read()
  planted = page + "\nA sentence, then " + phrase.upper() + " and more.\n"
  assert process_wording(planted), phrase
  assert not process_wording(page)


def test_no_file_outside_the_tests_names_a_path_outside_the_repository():
  """Code defaults, docstrings, results files, pages and configs: none
  names `../shared`, joins "shared", "data", or names `/work/`."""
  files = list(garden_files())
  assert os.path.join("evaluation", "runner.py") in files
  assert os.path.join("docs", "results", "prepare_on_dask.json") in files
  assert not any(f.startswith("tests" + os.sep) or f"{os.sep}tests{os.sep}"
                 in f for f in files)
  found = {}
  for name in files:
    with open(os.path.join(REPO_ROOT, name), encoding="utf-8",
              errors="replace") as f:
      hits = outside_paths(f.read())
    if hits:
      found[name] = hits
  assert not found, f"paths outside the repository: {found}"


@pytest.mark.parametrize("planted", [
    'DATA = os.path.join(REPO_ROOT, "..", "shared", "data", "eval")',
    '"""Reads ../shared/papers/cmlm_yang2021.txt."""',
    '{"sources": "data/corpus_en,../shared/data/corpora/en"}',
    "cd /work/main && make demo",
    "SHARED = os.path.join(os.path.dirname(ROOT), 'shared', 'data')"])
def test_the_path_check_catches_a_planted_path(planted):
  with open(os.path.join(REPO_ROOT, "evaluation", "runner.py"),
            encoding="utf-8") as f:
    code = f.read()
  assert outside_paths(code + "\n" + planted + "\n")
  assert not outside_paths(code)
