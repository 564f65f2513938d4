"""The garden as a user installs it: the wheel (conftest.py's
`installed_garden`) used from the user's own folder, which holds packages
named like the garden's layers. Every command works from there, writes
under the working directory, and never inside the installed package."""
import json
import os
import subprocess
import sys

import pytest
import yaml

from tests import helpers

# The user's evaluation data: STS Benchmark's format (genre, file, year, id,
# score, sentence 1, sentence 2), pairs made up for the test.
STS_PAIRS = [
    (5.0, "a man is playing a guitar .", "a man plays the guitar ."),
    (4.2, "a woman is slicing an onion .", "a woman cuts an onion ."),
    (3.6, "the cat sleeps on the sofa .", "a cat is asleep on a couch ."),
    (2.8, "two dogs run in the park .", "dogs are playing outside ."),
    (1.6, "a child reads a book .", "a man is reading a newspaper ."),
    (0.8, "the sun is setting .", "a boy rides a bicycle ."),
    (0.2, "she sings a song .", "the train leaves the station ."),
    (4.8, "the house is very large .", "the house is huge ."),
]
EXTRA_TOKENS = ("mytoken", "anothertoken", "##suffixtoken")


def write_user_data(user: str) -> None:
  """The user's corpus (a part of Pride and Prejudice), vocabulary (the
  garden's plus tokens of their own: another size) and STS file."""
  with open(os.path.join(helpers.REPO_ROOT, "data", "corpus_en",
                         "pride_and_prejudice.txt"), encoding="utf-8") as f:
    novel = f.read()
  os.makedirs(os.path.join(user, "corpus"))
  with open(os.path.join(user, "corpus", "chapter.txt"), "w",
            encoding="utf-8") as f:
    f.write(novel[20_000:80_000])
  with open(os.path.join(helpers.REPO_ROOT, "data", "vocab_en_uncased.txt"),
            encoding="utf-8") as f:
    vocabulary = f.read().splitlines() + list(EXTRA_TOKENS)
  with open(os.path.join(user, "my_vocab.txt"), "w", encoding="utf-8") as f:
    f.write("\n".join(vocabulary) + "\n")
  sts = os.path.join(user, "evaldata", "sts", "STSBenchmark")
  os.makedirs(sts)
  with open(os.path.join(sts, "sts-dev.csv"), "w", encoding="utf-8") as f:
    for i, (score, first, second) in enumerate(STS_PAIRS):
      f.write(f"main-captions\tMSRvid\t2012test\t{i:04d}\t{score:.3f}\t"
              f"{first}\t{second}\n")
  overrides = helpers.tiny_run_overrides(2)
  overrides["task"]["tokenization"]["vocab_file"] = "my_vocab.txt"
  overrides["task"]["model"]["encoder"]["vocab_size"] = len(vocabulary)
  for split in ("train_data", "validation_data"):
    overrides["task"]["objectives"]["cmlm"][split]["input_path"] = "corpus"
  with open(os.path.join(user, "tiny.yaml"), "w", encoding="utf-8") as f:
    yaml.safe_dump(overrides, f)


def run_cli(site: str, user: str, *args: str):
  """`python -m cmlm ARGS` with the installed wheel, from `user`."""
  completed = subprocess.run([sys.executable, "-m", "cmlm", *args],
                             cwd=user, env=helpers.installed_env(site),
                             capture_output=True, text=True, timeout=600)
  assert completed.returncode == 0, (args, completed.stdout[-2000:],
                                     completed.stderr[-3000:])
  return completed


@pytest.mark.slow
def test_installed_garden_trains_exports_and_evaluates_in_a_user_folder(
    installed_garden, tmp_path):
  """`train --experiment=cmlm/tiny` on the user's corpus and vocabulary,
  then `export` and `eval`, all with paths relative to the user's folder."""
  site = installed_garden
  installed = helpers.files_under(site)
  user = helpers.user_project(str(tmp_path))
  write_user_data(user)

  run_cli(site, user, "train", "--experiment=cmlm/tiny",
          "--config_file=tiny.yaml", "--model_dir=runs/tiny")
  with open(os.path.join(user, "runs", "tiny", "params.yaml")) as f:
    params = yaml.safe_load(f)
  assert params["task"]["tokenization"]["vocab_file"] == "my_vocab.txt"
  assert params["task"]["objectives"]["cmlm"]["train_data"][
      "input_path"] == "corpus"
  assert os.path.isfile(os.path.join(user, "runs", "tiny", "ckpt-2.index"))

  run_cli(site, user, "export", "--model_dir=runs/tiny",
          "--export_dir=exports/tiny")
  assert os.path.isfile(os.path.join(user, "exports", "tiny", "serving", "2",
                                     "saved_model.pb"))
  run_cli(site, user, "eval", "--model=exports/tiny", "--tasks=sts-b",
          "--data_dir=evaldata")  # the report goes to runs/eval, by default
  with open(os.path.join(user, "runs", "eval", "report.json")) as f:
    report = json.load(f)
  assert -100 <= report["tasks"]["sts-b"]["main_score"] <= 100
  # Nothing was written inside the installed package.
  assert helpers.files_under(site) == installed



@pytest.mark.slow
def test_setuptools_without_pkg_resources_is_one_line_saying_what_to_run(
    installed_garden, tmp_path):
  """tensorflow-hub 0.16.1 imports pkg_resources, gone from setuptools 81+.
  The wheel pins setuptools<81 where pip honours it (its dependencies); when
  a later install upgrades setuptools anyway (torch does), `import
  tensorflow_hub` after `cmlm` and the commands that need it say in one
  line what to run, before any work."""
  [dist_info] = [n for n in os.listdir(installed_garden)
                 if n.endswith(".dist-info")]
  with open(os.path.join(installed_garden, dist_info, "METADATA")) as f:
    metadata = f.read().splitlines()
  assert "Requires-Dist: setuptools<81" in metadata
  # The license travels with the package: its name and its text.
  assert "License: Apache-2.0" in metadata
  assert any(files and "LICENSE" in files for _, _, files in
             os.walk(os.path.join(installed_garden, dist_info)))
  model_dir = tmp_path / "demo"
  script = (
      "import sys\n"
      "sys.modules['pkg_resources'] = None  # as under setuptools 81+\n"
      "import cmlm\n"
      "try:\n"
      "  import tensorflow_hub\n"
      "except cmlm.MissingPkgResources as error:\n"
      "  print('import:', error)\n"
      "sys.argv = ['cmlm', 'demo', '--train_steps=1', sys.argv[1]]\n"
      "from cmlm.__main__ import run\n"
      "run()\n")
  completed = subprocess.run(
      [sys.executable, "-c", script, f"--model_dir={model_dir}"],
      cwd=helpers.REPO_ROOT, capture_output=True, text=True, timeout=300,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  assert completed.returncode == 2, completed.stderr[-3000:]
  assert "import: " in completed.stdout
  assert "pip install 'setuptools<81'" in completed.stdout
  errors = [line for line in completed.stderr.splitlines()
            if line.startswith("cmlm demo: error:")]
  assert len(errors) == 1 and "pip install 'setuptools<81'" in errors[0]
  assert "Traceback" not in completed.stderr
  assert not model_dir.exists()
