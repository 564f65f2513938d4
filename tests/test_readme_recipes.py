"""The README's road, run as written.

The commands are read from the Markdown (README.md's quickstart and its
"Your own corpus" recipe: cmlm/en_workstation's road, and its `train`
with cmlm/en_base as the README says), run as a user runs them from a checkout, with only tiny overrides
appended (`--config_file=tiny.yaml`: a small encoder, batches of 4, 2
steps), on a part of the shipped corpus. A documented command that stops
working, or a page that drifts from the flags, fails here; so does a recipe
that meets a missing corpus, an empty one or a missing vocabulary with more
than one line and status 2, or leaves a run directory behind. A project's recipe is run by a test beside it
(`projects/<name>/tests/`), with the helpers below.
"""
import contextlib
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import numpy as np
import pytest
import yaml

from tests import helpers
from tests.cmlm.test_installed_package import STS_PAIRS

REPO_ROOT = helpers.REPO_ROOT
SENTENCES = ["It is a truth universally acknowledged.",
             "She was the youngest of the five sisters.",
             "The ball was held at Netherfield.",
             "Fellow citizens, I am again called upon."]


def markdown_section(path: str, heading: str) -> str:
  """The text under the `## heading` of a Markdown file."""
  with open(os.path.join(REPO_ROOT, path), encoding="utf-8") as f:
    text = f.read()
  section = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text,
                      re.M | re.S)
  assert section, f"{path} has no '## {heading}' section"
  return section.group(1)


def markdown_block(path: str, heading: str, language: str) -> str:
  """The first ```language block under the `## heading` of a Markdown
  file."""
  block = re.search(rf"^```{language}\n(.*?)^```",
                    markdown_section(path, heading), re.M | re.S)
  assert block, f"'## {heading}' of {path} has no {language} block"
  return block.group(1)


def first_block(path: str, language: str) -> str:
  with open(os.path.join(REPO_ROOT, path), encoding="utf-8") as f:
    block = re.search(rf"^```{language}\n(.*?)^```", f.read(), re.M | re.S)
  assert block, f"{path} has no {language} block"
  return block.group(1)


def shell_commands(block: str):
  """The commands of a shell block: continuation lines joined, comments
  dropped, split as a shell would."""
  joined = re.sub(r"\\\n\s*", " ", block)
  commands = []
  for line in joined.splitlines():
    argv = shlex.split(line, comments=True)
    if argv:
      commands.append(argv)
  return commands


def run_as_written(argv, cwd, *appended):
  """One documented command, its interpreter this one, from `cwd`."""
  assert os.path.basename(argv[0]) == "python", argv
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=REPO_ROOT)
  env.pop("CMLM_DEBUG", None)
  completed = subprocess.run([sys.executable, *argv[1:], *appended], cwd=cwd,
                             env=env, capture_output=True, text=True,
                             timeout=600)
  assert completed.returncode == 0, (argv, completed.stdout[-2000:],
                                     completed.stderr[-3000:])
  return completed.stdout


def tiny_config(path, objective: str, **data) -> str:
  """What the tests append to a documented `train`: a small encoder,
  batches of 4, 2 steps."""
  tiny = {
      "task": {"objectives": {objective: {"train_data": dict(
          global_batch_size=4, **data)}}},
      "trainer": {"train_steps": 2, "steps_per_loop": 1,
                  "checkpoint_interval": 2, "summary_interval": 1}}
  if objective == "cmlm":
    tiny["task"]["model"] = {"encoder": {
        "hidden_size": 16, "num_layers": 1, "num_attention_heads": 2,
        "intermediate_size": 32}}
    tiny["task"]["tokenization"] = {"seq_length": 16}
  with open(path, "w", encoding="utf-8") as f:
    yaml.safe_dump(tiny, f)
  return f"--config_file={path}"


def test_the_readme_quickstart_runs_as_written(tiny_export, tmp_path,
                                               monkeypatch):
  """The five lines at the top of the README, on an export laid where
  `make demo` leaves its own."""
  code = first_block("README.md", "python")
  assert len(code.strip().splitlines()) <= 5
  (tmp_path / "runs" / "demo").mkdir(parents=True)
  os.symlink(tiny_export.export_dir, tmp_path / "runs" / "demo" / "export")
  monkeypatch.chdir(tmp_path)
  printed = io.StringIO()
  with contextlib.redirect_stdout(printed):
    exec(compile(code, "README.md", "exec"), {})  # pylint: disable=exec-used
  printed_line = re.fullmatch(r"\((\d+), (\d+)\) (\S+)\n",
                              printed.getvalue())
  assert printed_line, printed.getvalue()
  rows, dimension, cosine = printed_line.groups()
  hidden = helpers.tiny_run_overrides(4)["task"]["model"]["encoder"][
      "hidden_size"]
  assert (int(rows), int(dimension)) == (2, hidden)
  assert -1.0001 <= float(cosine) <= 1.0001


def user_folder(tmp_path):
  """A user's folder beside the checkout's experiments/: my_corpus/ (a part
  of the shipped corpus), sentences.txt and my_benchmarks/ (STS-B dev)."""
  user = tmp_path / "user"
  (user / "my_corpus").mkdir(parents=True)
  os.symlink(os.path.join(REPO_ROOT, "experiments"), user / "experiments")
  with open(os.path.join(REPO_ROOT, "data", "corpus_en",
                         "pride_and_prejudice.txt"), encoding="utf-8") as f:
    (user / "my_corpus" / "chapters.txt").write_text(f.read()[20_000:60_000])
  (user / "sentences.txt").write_text("\n".join(SENTENCES) + "\n")
  sts = user / "my_benchmarks" / "sts" / "STSBenchmark"
  sts.mkdir(parents=True)
  sts.joinpath("sts-dev.csv").write_text("".join(
      f"main-captions\tMSRvid\t2012test\t{i:04d}\t{score:.3f}\t{a}\t{b}\n"
      for i, (score, a, b) in enumerate(STS_PAIRS)))
  return user


def own_corpus_commands():
  """The commands of the README's "Your own corpus" block: the workstation
  road."""
  return shell_commands(markdown_block("README.md", "Your own corpus", "sh"))


def en_base_train():
  """The README's sentence on cmlm/en_base: the road's `train` with the
  flags it names in place of the workstation's."""
  said = re.search(r"the same `train` with `(--experiment=cmlm/en_base)\s+"
                   r"(--config_file=\S+)`",
                   markdown_section("README.md", "Your own corpus"))
  assert said, "the README no longer says how to train cmlm/en_base"
  flags = {flag.split("=")[0]: flag for flag in said.groups()}
  return [flags.get(arg.split("=")[0], arg)
          for arg in own_corpus_commands()[1]]


@pytest.mark.slow
def test_the_readme_own_corpus_recipe_runs_as_written(tmp_path):
  """vocab -> train (cmlm/en_workstation, its YAML, no --strategy, no
  vocab_size) -> export -> encode -> eval, from a user's folder beside the
  checkout's experiments/."""
  user = user_folder(tmp_path)
  commands = own_corpus_commands()
  assert [argv[3] for argv in commands] == ["vocab", "train", "export",
                                            "encode", "eval"]
  assert "--experiment=cmlm/en_workstation" in commands[1]
  outputs = {}
  for argv in commands:
    appended = ()
    if argv[3] == "train":
      appended = (tiny_config(tmp_path / "tiny.yaml", "cmlm",
                              max_predictions_per_seq=5),)
    outputs[argv[3]] = run_as_written(argv, user, *appended)

  vocab_size = len((user / "my_vocab.txt").read_text().splitlines())
  with open(user / "runs" / "my_model" / "params.yaml") as f:
    params = yaml.safe_load(f)
  # The encoder took the vocabulary's size, and the strategy the machine's.
  assert params["task"]["model"]["encoder"]["vocab_size"] == vocab_size
  assert vocab_size != 30522
  assert params["runtime"]["distribution_strategy"] == "one_device"
  # en_workstation's schedule (the tiny override shortens the run only).
  optimizer = params["trainer"]["optimizer_config"]
  assert optimizer["optimizer"]["type"] == "adamw"
  assert optimizer["learning_rate"]["polynomial"]["decay_steps"] == 4_000
  assert outputs["train"].splitlines()[0].startswith(
      "Strategy: one_device")
  assert (user / "runs" / "my_model" / "ckpt-2.index").is_file()
  embeddings = np.load(user / "embeddings.npy")
  assert embeddings.shape == (len(SENTENCES), 16)
  with open(user / "runs" / "eval" / "report.json") as f:
    report = json.load(f)
  assert -100 <= report["tasks"]["sts-b"]["main_score"] <= 100


@pytest.mark.slow
def test_the_readme_en_base_train_runs_as_written(tmp_path):
  """The paper's recipe as the README gives it: the road's `train` with
  cmlm/en_base and its YAML, on the same folder and vocabulary, with the
  same tiny override."""
  user = user_folder(tmp_path)
  shutil.copy(os.path.join(REPO_ROOT, "data", "vocab_en_uncased.txt"),
              user / "my_vocab.txt")
  argv = en_base_train()
  assert argv[3] == "train" and "--experiment=cmlm/en_base" in argv
  assert ("--config_file=experiments/configs/cmlm_en_base.yaml") in argv
  run_as_written(argv, user, tiny_config(tmp_path / "tiny.yaml", "cmlm",
                                         max_predictions_per_seq=5))
  with open(user / "runs" / "my_model" / "params.yaml") as f:
    params = yaml.safe_load(f)
  optimizer = params["trainer"]["optimizer_config"]
  assert optimizer["optimizer"]["type"] == "lamb"
  assert optimizer["learning_rate"]["polynomial"]["decay_steps"] == 1_000_000
  assert (user / "runs" / "my_model" / "ckpt-2.index").is_file()


@pytest.mark.parametrize("fault,named", [
    ("no_corpus", "my_corpus/"), ("empty_folder", "my_corpus/"),
    ("no_text", "my_corpus/"), ("no_vocab", "my_vocab.txt")])
def test_the_workstation_recipe_refuses_bad_input_in_one_line(
    fault, named, tmp_path, monkeypatch, capsys):
  """The README's workstation `train` on a corpus folder that is missing,
  one with no text file, one whose files hold no text, or a vocabulary that does not exist: one
  line naming it, status 2, and no run directory."""
  from cmlm import __main__ as command_line  # pylint: disable=g-import-not-at-top
  from cmlm.training import stop_signals  # pylint: disable=g-import-not-at-top
  monkeypatch.setattr(stop_signals, "watch_for_second_interrupt",
                      lambda label: None)  # not this test process's business
  user = user_folder(tmp_path)
  shutil.copy(os.path.join(REPO_ROOT, "data", "vocab_en_uncased.txt"),
              user / "my_vocab.txt")
  if fault == "no_corpus":
    shutil.rmtree(user / "my_corpus")
  elif fault == "empty_folder":
    os.remove(user / "my_corpus" / "chapters.txt")
  elif fault == "no_text":
    (user / "my_corpus" / "chapters.txt").write_text("\n\n  \n")
  else:
    os.remove(user / "my_vocab.txt")
  train = own_corpus_commands()[1]
  assert train[3] == "train"
  monkeypatch.chdir(user)
  capsys.readouterr()
  with pytest.raises(SystemExit) as exited:
    command_line.main(["cmlm", *train[3:]])
  errors = [line for line in capsys.readouterr().err.splitlines()
            if line.strip()]
  assert exited.value.code == 2
  assert len(errors) == 1 and errors[0].startswith("cmlm train: error: ")
  assert named in errors[0]
  assert not (user / "runs").exists()
