"""`python -m cmlm`: each command has its own flags, and only those.

`--help` of a command lists exactly its flags; a flag it does not define is
a one-line error (status 2); Model Garden's flags of `train` behave as Model
Garden defines them. `--help` and flag errors come before TensorFlow is
imported, so these subprocesses take a fraction of a second.
"""
import json
import os
import re
import subprocess
import sys

import pytest

from cmlm.commands import CORE_COMMANDS
from cmlm.commands import flag_parsing
from cmlm.commands import train as train_command
from cmlm.inference import input_paths
from tests import helpers

REPO_ROOT = helpers.REPO_ROOT
MODEL_GARDEN = {"experiment", "config_file", "params_override", "mode",
                "model_dir", "tpu"}
# Every command's flags (each also takes --verbosity).
FLAGS_OF = {
    "train": MODEL_GARDEN | {"strategy", "eval_data_dir"},
    "stages": {"config_file", "params_override", "model_dir", "tpu",
               "schedule", "stage_steps", "strategy"},
    "demo": {"model_dir", "train_steps", "seed", "stsb_dev"},
    "vocab": {"input", "output", "vocab_size", "lower_case",
              "smoothing_exponent", "skip_invalid_lines", "overwrite"},
    "pcr": {"model_dir", "input", "sample_size", "checkpoint"},
    "export": {"model_dir", "export_dir", "checkpoint", "version",
               "overwrite", "normalize", "export_mlm", "eval_report",
               "model_card", "package_dir", "model_name", "dataset_name",
               "license", "language", "formats"},
    "encode": {"model", "checkpoint", "input", "input_format", "text_field",
               "column", "header", "output", "output_format", "batch_size",
               "normalize", "truncate_dim", "precision", "calibration",
               "overwrite", "backend", "quantized"},
    "import": {"source", "format", "vocab_file", "seq_length", "lower_case",
               "overwrite", "model_dir", "source_name", "source_license"},
    "eval": {"model", "checkpoint", "tasks", "mteb_tasks", "batch_size",
             "data_dir", "task_data", "report_dir", "max_examples",
             "bitext_dir",
             "mining_source", "mining_target", "mining_gold",
             "mining_threshold", "tatoeba_languages", "tatoeba_pcr",
             "langdist_pool", "langdist_size", "binary_threshold", "backend",
             "quantized"},
    "fetch": {"benchmarks", "data_dir", "source_url", "list", "progress"},
    "prepare": {"data", "input", "output", "pair_unit", "vocab_file",
                "seq_length", "lower_case", "text_normalization",
                "document_unit", "split", "heldout_percent", "num_shards",
                "seed", "runner", "direct_num_workers", "dask_workers",
                "overwrite"},
    "mine": {"source", "target", "source_embeddings", "target_embeddings",
             "model", "batch_size", "output", "overwrite", "k", "margin",
             "mode", "threshold", "index", "nlist", "nprobe", "hnsw_m",
             "ef_search", "recall_sample", "shard_size", "index_shard_size",
             "dask_workers", "dask_address", "encode_shard_size", "progress"},
}


def run_cli(*args):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  env.pop("CMLM_DEBUG", None)
  return subprocess.run([sys.executable, "-m", "cmlm", *args], cwd=REPO_ROOT,
                        env=env, capture_output=True, text=True, timeout=120)


def listed_flags(help_text):
  return set(re.findall(r"^\s+--(?:\[no\])?(\w+):", help_text, re.MULTILINE))


def test_every_command_has_its_flags_listed_here():
  assert set(FLAGS_OF) == set(CORE_COMMANDS)


@pytest.mark.parametrize("command", sorted(FLAGS_OF))
def test_help_lists_the_command_s_own_flags_only(command):
  result = run_cli(command, "--help")
  assert result.returncode == 0, result.stderr[-2000:]
  assert result.stdout.startswith(f"usage: python -m cmlm {command} ")
  assert listed_flags(result.stdout) == FLAGS_OF[command] | {"verbosity"}
  if command != "eval":
    assert "--tasks" not in result.stdout
  if command not in ("train", "stages"):
    assert "official.common.flags" not in result.stdout


def test_an_unknown_flag_is_a_one_line_error():
  result = run_cli("encode", "--tasks=x")
  assert result.returncode == 2
  assert result.stdout == ""
  assert result.stderr.strip().splitlines() == [
      "cmlm encode: error: Unknown command line flag 'tasks'; see "
      "`python -m cmlm encode --help`."]


def test_fetch_refuses_bad_input_in_one_line_before_any_download(tmp_path):
  (tmp_path / "transfer" / "TREC").mkdir(parents=True)  # one's own copy
  (tmp_path / "afile").write_text("x")
  new = tmp_path / "new"
  for args, words in [
      (["--benchmarks=sts-b,stsx", f"--data_dir={new}"],
       "Unknown benchmark 'stsx'; known: sts12, "),
      (["--benchmarks=sts-b", f"--data_dir={new}",
        "--source_url=sts-b=ftp://mirror/sts"],
       "--source_url sts-b=ftp://mirror/sts: expected an http://, https:// "
       "or file:// URL"),
      (["--benchmarks=trec", f"--data_dir={new}",
        "--source_url=sts-b=https://mirror/sts"],
       "--source_url names sts-b, which this fetch does not fetch "
       "(--benchmarks=trec)"),
      (["--list", "--benchmarks=sts-b,bogus"], "Unknown benchmark 'bogus'"),
      (["--benchmarks=trec", f"--data_dir={tmp_path}"],
       f"{tmp_path}/transfer/TREC already exists and was not written by "
       "`cmlm fetch`"),
      (["--benchmarks=trec", f"--data_dir={tmp_path}/afile/x"],
       f"cannot make --data_dir {tmp_path}/afile/x: Not a directory")]:
    result = run_cli("fetch", *args)
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"cmlm fetch: error: {words}"), lines
  assert not new.exists()
  assert sorted(os.listdir(tmp_path / "transfer")) == ["TREC"]
  # --list lists what --benchmarks names (a group: each of its benchmarks).
  listed = run_cli("fetch", "--list", "--benchmarks=sts-b,transfer")
  assert listed.returncode == 0, listed.stderr[-2000:]
  names = [line.split()[0] for line in listed.stdout.splitlines()]
  assert names == ["sts-b", "mr", "cr", "subj", "mpqa", "sst2", "trec",
                   "mrpc"]


def test_demo_refuses_a_step_count_below_one_before_any_work():
  result = run_cli("demo", "--train_steps=0")
  assert result.returncode == 2
  assert result.stderr.strip().splitlines() == [
      "cmlm demo: error: --train_steps must be 1 or more, got 0."]


def test_without_a_known_command_the_commands_are_listed():
  for args in ((), ("--model_dir=x",), ("fit",)):
    result = run_cli(*args)
    assert result.returncode == 2
    assert result.stderr.startswith("cmlm: error: give a command among ")
    assert len(result.stderr.splitlines()) == 1
    for command in CORE_COMMANDS:
      assert f"\n  {command} " in result.stdout, (args, command)


def imported_modules(*args):
  """The modules `python -m cmlm ARGS` imported (`-X importtime`)."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  result = subprocess.run([sys.executable, "-X", "importtime", "-m", "cmlm",
                           *args], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
  return re.findall(r"^import time:.*\|\s*([\w.]+)$", result.stderr, re.M)


def test_the_listing_starts_without_tensorflow():
  """The projects' commands are listed from their `commands.py` alone
  (`cmlm.commands.register_project_commands`): no objective, so neither
  TensorFlow nor Model Garden, is imported to print the list."""
  imported = imported_modules("--help")
  assert "cmlm.commands" in imported  # the lines were read
  assert not [name for name in imported if name.split(".")[0] in (
      "tensorflow", "tf_keras", "official")]
  assert "cmlm.registry_imports" not in imported


# Each command given a path it cannot use: run by the command line's `main`
# in one fresh process, which then says whether TensorFlow loaded.
REFUSE_PATHS = """
import json, sys
from cmlm import __main__ as command_line
answers = []
for argv in json.loads(sys.argv[1]):
  try:
    command_line.main(["cmlm"] + argv)
    status = 0
  except SystemExit as exited:
    status = exited.code
  answers.append(status)
print(json.dumps([answers, "tensorflow" in sys.modules]))
"""


def _assert_refused_before_tensorflow(cases):
  """Each (argv, line) case ends with status 2 and its one line, all run in
  one fresh process, which never loads TensorFlow."""
  result = subprocess.run(
      [sys.executable, "-c", REFUSE_PATHS,
       json.dumps([argv for argv, _ in cases])],
      cwd=helpers.REPO_ROOT, capture_output=True, text=True, timeout=120,
      check=True)
  statuses, tensorflow_loaded = json.loads(result.stdout.splitlines()[-1])
  command_lines = [f"cmlm {argv[0]}: error: {line}" for argv, line in cases]
  assert (statuses, result.stderr.splitlines()) == (
      [2] * len(cases), command_lines)
  assert not tensorflow_loaded


def test_an_output_that_is_a_file_or_under_one_is_refused_first(tmp_path):
  """`--model_dir`, `--export_dir`, `--output`: a file where a directory is
  named, a directory where a file is, or a file among the folders above,
  is one line naming the flag, before TensorFlow loads and any work."""
  taken = tmp_path / "notes.txt"
  taken.write_text("mine\n")
  under = f"is under {taken}, which is a file; name a path in a directory."
  model, text = str(tmp_path / "no_model"), str(taken)
  cases = [
      (["train", "--experiment=cmlm/tiny", f"--model_dir={taken}"],
       f"--model_dir={taken} is a file; name a directory."),
      (["train", "--experiment=cmlm/tiny", f"--model_dir={taken}/run"],
       f"--model_dir={taken}/run {under}"),
      (["stages", "--schedule=s1", f"--model_dir={taken}/run"],
       f"--model_dir={taken}/run {under}"),
      (["import", f"--source={model}", f"--model_dir={taken}/run"],
       f"--model_dir={taken}/run {under}"),
      (["export", f"--model_dir={model}", f"--export_dir={taken}/export"],
       f"--export_dir={taken}/export {under}"),
      (["encode", f"--model={model}", f"--input={text}",
        f"--output={tmp_path}"],
       f"--output={tmp_path} is a directory; name a file."),
      (["encode", f"--model={model}", f"--input={text}",
        f"--output={taken}/e.npy"], f"--output={taken}/e.npy {under}"),
      (["mine", f"--model={model}", f"--source={text}", f"--target={text}",
        f"--output={taken}/pairs.tsv"], f"--output={taken}/pairs.tsv {under}"),
      (["vocab", f"--input={text}", f"--output={taken}/vocab.txt"],
       f"--output={taken}/vocab.txt {under}"),
      (["prepare", f"--input={text}", f"--output={taken}/pairs",
        "--pair_unit=sentence"], f"--output={taken}/pairs {under}"),
  ]
  _assert_refused_before_tensorflow(cases)
  assert sorted(os.listdir(tmp_path)) == ["notes.txt"]
  assert taken.read_text() == "mine\n"


def test_a_model_or_input_that_is_not_there_is_refused_first(tmp_path):
  """A `--model` (or a part of `ENCODER_DIR,PREPROCESSOR_DIR`), a run's
  `--model_dir`, an `--input` or a `--calibration` that is not there is one
  line naming the flag, before TensorFlow loads and any work."""
  text = tmp_path / "sentences.txt"
  text.write_text("A sentence.\n")
  missing, output = str(tmp_path / "missing"), str(tmp_path / "out.npy")
  cases = [
      (["encode", f"--model={missing}", f"--input={text}",
        f"--output={output}"], f"--model={missing} does not exist."),
      (["encode", f"--model={tmp_path},{missing}", f"--input={text}",
        f"--output={output}"],
       f"--model={tmp_path},{missing}: {missing} does not exist."),
      (["encode", f"--model={tmp_path}", f"--input={missing}.txt",
        f"--output={output}"], f"--input={missing}.txt is not a file."),
      (["encode", f"--model={tmp_path}", f"--input={tmp_path}",
        f"--output={output}"], f"--input={tmp_path} is not a file."),
      (["encode", f"--model={tmp_path}", f"--input={text}",
        f"--output={output}", "--precision=int8",
        f"--calibration={missing}.npy"],
       f"--calibration={missing}.npy is not a file."),
      (["eval", f"--model={missing}", "--tasks=sts_b",
        f"--report_dir={tmp_path}/report"], f"--model={missing} does not exist."),
      (["export", f"--model_dir={missing}", f"--export_dir={tmp_path}/export"],
       f"--model_dir={missing} does not exist."),
      (["pcr", f"--model_dir={missing}", f"--input=en={text}"],
       f"--model_dir={missing} does not exist."),
      (["mine", f"--model={missing}", f"--source={text}", f"--target={text}",
        f"--output={tmp_path}/pairs.tsv"], f"--model={missing} does not exist."),
  ]
  _assert_refused_before_tensorflow(cases)
  assert sorted(os.listdir(tmp_path)) == ["sentences.txt"]


def test_what_a_command_cannot_run_without_is_refused_first(tmp_path):
  """A flag a command needs and was not given, a model that is a file, a
  --config_file, corpus, --stsb_dev or pcr input that is not there: one
  line naming the flag, before TensorFlow loads and any work (`import`
  without --source used to fail with a TypeError's traceback)."""
  notes = tmp_path / "notes.txt"
  notes.write_text("mine\n")
  run, missing = str(tmp_path / "run"), str(tmp_path / "missing")
  training_dir = ("--model_dir is required: checkpoints and summaries go "
                  "there, and a run resumes from it.")
  source = ("a Hugging Face model directory, a Model Garden checkpoint or a "
            "TF-Hub encoder (ENCODER_DIR[,PREPROCESSOR_DIR]).")
  output, model = f"--output={tmp_path}/e.npy", f"--model={tmp_path}"
  cases = [
      (["train"], "--experiment is required: a registered experiment, e.g. "
       "--experiment=cmlm/tiny."),
      (["train", "--experiment=cmlm/tiny"], training_dir),
      (["train", "--experiment=cmlm/tiny", f"--model_dir={run}",
        f"--config_file={missing}.yaml"],
       f"--config_file={missing}.yaml is not a file."),
      (["train", "--experiment=cmlm/tiny", f"--model_dir={run}",
        "--mode=train_and_validate"], "--mode=train_and_validate is not "
       "implemented by Model Garden's open-source trainer; give train, eval, "
       "train_and_eval, continuous_eval, train_and_post_eval."),
      (["stages", "--schedule=s1"], training_dir),
      (["import", f"--model_dir={run}"], f"--source is required: {source}"),
      (["import", f"--source={missing}", f"--model_dir={run}"],
       f"--source={missing} does not exist."),
      (["import", f"--source={notes}", f"--model_dir={run}"],
       f"--source={notes} is not a directory."),
      (["export", f"--model_dir={tmp_path}"],
       "--export_dir is required: where the SavedModels go."),
      (["export", f"--model_dir={tmp_path}", f"--export_dir={tmp_path}/"],
       "--export_dir is the run's own directory (--model_dir); give "
       f"another, such as --export_dir={tmp_path}/export."),
      (["export", f"--export_dir={tmp_path}/export"],
       "--model_dir is required: the training run to export (or its "
       "--checkpoint)."),
      (["encode", model, f"--input={notes}"], "--output is required: the "
       ".npy, .jsonl or .parquet file to write."),
      (["encode", model, f"--input={notes}", f"--output={tmp_path}/e.txt"],
       f"--output={tmp_path}/e.txt: name a .npy, .jsonl or .parquet file, or "
       "set --output_format."),
      (["encode", f"--input={notes}", output],
       f"--model is required: {input_paths.MODEL_KINDS}."),
      (["encode", f"--model={notes}", f"--input={notes}", output],
       f"--model={notes} is not a directory."),
      (["encode", model, output], "--input is required: a .txt (one "
       "sentence a line), .jsonl, .csv or .tsv file, or - for standard "
       "input."),
      (["eval", "--tasks=sts-b"],
       f"--model is required: {input_paths.MODEL_KINDS}."),
      (["pcr", f"--input=en={notes}"], "--model_dir is required: the "
       "training run whose components are fitted (they are saved there)."),
      (["pcr", f"--model_dir={tmp_path}"], "--input is required: "
       "LANG=FILE,LANG=FILE, the sentences of each language, one a line."),
      (["pcr", f"--model_dir={tmp_path}", f"--input=en={notes},de={missing}"],
       f"--input={missing} is not a file."),
      (["vocab", f"--input={missing}", f"--output={tmp_path}/vocab.txt"],
       f"The corpus path {missing!r} does not exist."),
      (["vocab", f"--input=en={notes},de={missing}",
        f"--output={tmp_path}/vocab.txt"],
       f"The corpus path {missing!r} does not exist."),
      (["demo", f"--model_dir={notes}"],
       f"--model_dir={notes} is a file; name a directory."),
      (["demo", f"--model_dir={run}", f"--stsb_dev={missing}.csv"],
       f"--stsb_dev={missing}.csv is not a file."),
  ]
  _assert_refused_before_tensorflow(cases)
  assert sorted(os.listdir(tmp_path)) == ["notes.txt"]


def test_model_garden_flags_of_train_parse_as_in_model_garden():
  flag_parsing.parse("train", "", train_command.FLAGS, [
      "--experiment=cmlm/tiny", "--config_file=a.yaml",
      "--config_file=b.yaml", "--params_override=trainer.train_steps=5",
      "--mode=train_and_eval", "--model_dir=runs/x", "--tpu=local",
      "--strategy=tpu"])
  flags = train_command.FLAGS
  assert (flags.experiment, flags.config_file, flags.params_override,
          flags.mode, flags.model_dir, flags.tpu, flags.strategy) == (
              "cmlm/tiny", ["a.yaml", "b.yaml"], "trainer.train_steps=5",
              "train_and_eval", "runs/x", "local", "tpu")
  # A second parse starts from the defaults, not from the first's values.
  flag_parsing.parse("train", "", flags, ["--experiment=cmlm/tiny"])
  assert (flags.config_file, flags.mode, flags.model_dir, flags.strategy) == (
      None, None, None, None)
  with pytest.raises(flag_parsing.UsageError, match="--mode"):
    flag_parsing.parse("train", "", flags, ["--mode=fit"])
  with pytest.raises(flag_parsing.UsageError, match="gin_file"):
    flag_parsing.parse("train", "", flags, ["--gin_file=x"])


def test_library_packages_read_no_flags_object():
  """Commands read flags; the library takes typed arguments."""
  offenders = []
  for package in ("data_pipelines", "modeling", "objectives", "training",
                  "export", "evaluation"):
    for path in helpers.walk_sources(os.path.join(REPO_ROOT, package)):
      with open(path, encoding="utf-8") as f:
        text = f.read()
      if re.search(r"\bFLAGS\b|\bflags_obj\b|from absl import flags", text):
        offenders.append(os.path.relpath(path, REPO_ROOT))
  assert not offenders


def test_a_user_error_raised_inside_gin_prints_without_gin_s_note():
  """Model Garden's `create_trainer` is a gin configurable: gin appends
  "In call to configurable ..." to an error raised inside it; the command's
  line is the error alone."""
  import gin  # pylint: disable=g-import-not-at-top
  from cmlm import __main__ as command_line  # pylint: disable=g-import-not-at-top

  @gin.configurable
  def create_something():
    raise ValueError("data.txt holds no sentence.")
  with pytest.raises(ValueError) as raised:
    create_something()
  assert "In call to configurable" in str(raised.value)
  assert command_line.error_line(raised.value) == "data.txt holds no sentence."
  assert command_line.error_line(KeyError("x")) == "'x'"


def test_a_stop_that_lands_inside_a_c_extension_is_still_the_stop(
    monkeypatch, capsys):
  """A SIGINT that arrives while TensorFlow's C++ runs comes out of pybind11
  as that call's own error (a TypeError), not as `Interrupted`: the command
  still ends as stopped (status 130, the stop's one line), not with a
  traceback."""
  import signal  # pylint: disable=g-import-not-at-top
  import types  # pylint: disable=g-import-not-at-top
  from cmlm import __main__ as command_line  # pylint: disable=g-import-not-at-top
  from cmlm.training import stop_signals  # pylint: disable=g-import-not-at-top
  monkeypatch.setattr(stop_signals, "watch_for_second_interrupt",
                      lambda label: None)  # not this test process's business
  monkeypatch.setattr(stop_signals, "_received", [])
  command = types.ModuleType("stopped_in_c")
  signals = [signal.SIGINT]

  def main(argv):
    del argv
    for signum in signals:
      stop_signals.note(signum)  # the handler ran, inside C code
    raise TypeError()  # what pybind11 made of its exception
  command.main = main
  monkeypatch.setitem(sys.modules, "stopped_in_c", command)
  monkeypatch.setitem(command_line.COMMANDS, "vocab", "stopped_in_c")
  monkeypatch.delenv("CMLM_DEBUG", raising=False)
  with pytest.raises(SystemExit) as exit_info:
    command_line.main(["cmlm", "vocab"])
  assert exit_info.value.code == 130
  assert capsys.readouterr().err.strip().splitlines() == [
      "cmlm vocab: stopped by SIGINT (Ctrl-C); what it was writing was "
      "removed."]
  # Without a stop signal the same error is a bug, and shows as one.
  monkeypatch.setattr(stop_signals, "_received", [])
  signals.clear()
  with pytest.raises(TypeError):
    command_line.main(["cmlm", "vocab"])
