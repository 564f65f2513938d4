"""This project's README recipe, run as written (tests/test_readme_recipes.py
runs the core's): its `simcse/tiny` line, with the tiny overrides appended."""
import os

import pytest
import yaml

from tests import helpers
from tests.test_readme_recipes import SENTENCES
from tests.test_readme_recipes import markdown_block
from tests.test_readme_recipes import run_as_written
from tests.test_readme_recipes import shell_commands
from tests.test_readme_recipes import tiny_config

README = os.path.relpath(
    os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                 "README.md"), helpers.REPO_ROOT)


@pytest.mark.slow
def test_a_project_recipe_runs_as_written(tiny_run, tmp_path):
  """SimCSE's `simcse/tiny` recipe line, from a cmlm/tiny run at
  runs/tiny, on the user's sentences."""
  (tmp_path / "runs").mkdir()
  os.symlink(tiny_run[0], tmp_path / "runs" / "tiny")
  (tmp_path / "sentences.txt").write_text("\n".join(SENTENCES * 4) + "\n")
  block = markdown_block(README, "Run", "sh")
  [argv] = [argv for argv in shell_commands(block)
            if "--experiment=simcse/tiny" in argv]
  output = run_as_written(argv, tmp_path,
                          tiny_config(tmp_path / "tiny.yaml", "simcse"))
  assert output.startswith("Strategy: one_device")
  with open(tmp_path / "runs" / "simcse" / "params.yaml") as f:
    params = yaml.safe_load(f)
  with open(os.path.join(tiny_run[0], "params.yaml")) as f:
    start = yaml.safe_load(f)
  # The encoder is the start run's, trained on for the recipe's objective.
  assert (params["task"]["model"]["encoder"]["hidden_size"] ==
          start["task"]["model"]["encoder"]["hidden_size"])
  assert list(params["task"]["objectives"]) == ["simcse"]
  assert (tmp_path / "runs" / "simcse" / "ckpt-2.index").is_file()
