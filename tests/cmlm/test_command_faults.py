"""Every command, walked through the faults a user meets: a full disk, a
read-only target, a truncated input of each kind it reads. Each must end
with status 2 and one line `cmlm COMMAND: error: ...`, no traceback, and
leave nothing behind (no file, no directory, no lock).

The disk is real where this process may mount one (root on Linux: a tmpfs,
filled for ENOSPC, remounted read-only for EROFS); elsewhere a file-size
limit of 0 bytes (EFBIG, the process's every writer: Python, NumPy,
pyarrow, TensorFlow, Beam) and a directory without write permission
(EACCES). The commands run in this process through `python -m cmlm`'s own
`main`. Not walked themselves: `demo` (it trains, then exports: both
walked here), MiSAD's `prepare_ngrams` (`prepare`'s Beam pipeline) and
`fetch` (tests/evaluation/test_benchmark_fetch_faults.py walks it).
"""
import contextlib
import errno
import gzip
import json
import logging
import os
import resource
import shutil
import signal
import subprocess
import tempfile

import numpy as np
import pytest
import yaml

from cmlm import __main__ as command_line
from cmlm.inference import layout
from cmlm.training import checkpoint_integrity
from cmlm.training import stop_signals
from tests import helpers
from tests.export import export_helpers
from tests.training import import_helpers

pytestmark = pytest.mark.slow

VOCAB = os.path.join(helpers.REPO_ROOT, "data", "vocab_en_uncased.txt")
TEXT = ("The cat sat on the mat. It was happy there. The dog ran fast.\n\n"
        "A man is playing a guitar. The sun is bright today.\n\n") * 40


class RefusingDisk:
  """A directory whose writes fail once `refuse()` is called."""

  def __init__(self, base: str, kind: str):
    self.path, self.kind = os.path.join(base, f"disk-{kind}"), kind
    self._mounted = self._undo = None

  def __enter__(self):
    os.makedirs(self.path)
    self._mounted = (os.geteuid() == 0 and
                     not os.environ.get("CMLM_TEST_NO_TMPFS") and
                     subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m",
                                     "tmpfs", self.path],
                                    capture_output=True).returncode == 0)
    if not self._mounted and self.kind == "read_only" and os.geteuid() == 0:
      pytest.skip("root writes through permissions, and cannot mount here")
    return self

  def refuse(self):
    if self._mounted and self.kind == "full":
      with open(os.path.join(self.path, "filler"), "wb", buffering=0) as f:
        with contextlib.suppress(OSError):
          while True:
            f.write(b"\0" * (1 << 16))
    elif self._mounted:
      subprocess.run(["mount", "-o", "remount,ro", self.path], check=True)
    elif self.kind == "full":
      # The limit holds for every file of the process: also for absl's log
      # file and AutoGraph's temporary modules, whose failures the logging
      # module would report with a traceback of its own.
      limit = resource.getrlimit(resource.RLIMIT_FSIZE)
      handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
      raise_exceptions, logging.raiseExceptions = logging.raiseExceptions, False
      resource.setrlimit(resource.RLIMIT_FSIZE, (0, limit[1]))
      self._undo = lambda: (resource.setrlimit(resource.RLIMIT_FSIZE, limit),
                            signal.signal(signal.SIGXFSZ, handler),
                            setattr(logging, "raiseExceptions",
                                    raise_exceptions))
    else:
      os.chmod(self.path, 0o555)
      self._undo = lambda: os.chmod(self.path, 0o755)

  def allow(self):
    if self._undo:
      self._undo()
      self._undo = None

  def files(self):
    return sorted(os.path.relpath(os.path.join(root, name), self.path)
                  for root, dirs, names in os.walk(self.path)
                  for name in dirs + names if name != "filler")

  def __exit__(self, *exc_info):
    self.allow()
    if self._mounted:
      subprocess.run(["umount", "-l", self.path], check=False)


def one_error_line(command, status, lines):
  """What is wrong with how `command` ended, or None: status 2 and exactly
  one line of it, an error, and no traceback."""
  own = [line for line in lines if line.startswith(f"cmlm {command}:")]
  if status != 2 or len(own) != 1 or not own[0].startswith(
      f"cmlm {command}: error: ") or any("Traceback" in l for l in lines):
    return f"status {status}, lines {lines[-4:]}"
  return None


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, tiny_run, tiny_export):
  """What the commands read: a tiny config, a corpus, sentences, an STS-B
  file, a Hugging Face BERT, TFRecord pairs, the tiny run and export."""
  from cmlm.data_pipelines import pair_tfrecords  # pylint: disable=g-import-not-at-top
  from cmlm.data_pipelines import tokenization  # pylint: disable=g-import-not-at-top
  root = tmp_path_factory.mktemp("inputs")
  paths = dict(run=tiny_run[0], export=tiny_export.export_dir)
  paths["config"] = str(root / "tiny.yaml")
  with open(paths["config"], "w") as f:
    yaml.safe_dump(helpers.tiny_run_overrides(2), f)
  paths["schedule"] = str(root / "schedule.yaml")
  with open(paths["schedule"], "w") as f:
    yaml.safe_dump({"experiment": "cmlm/tiny", "stages": [
        {"objectives": {"cmlm": 1.0}, "train_steps": 2}] * 2}, f)
  paths["corpus"] = str(root / "corpus.txt")
  (root / "corpus.txt").write_text(TEXT)
  paths["sentences"] = str(root / "sentences.txt")
  (root / "sentences.txt").write_text("\n".join(export_helpers.SENTENCES))
  paths["sts"] = str(root / "sts-dev.csv")
  (root / "sts-dev.csv").write_text("".join(
      f"main\tx\t2012\t{i:04d}\t{i % 6}.0\t{a}\t{b}\n" for i, (a, b) in
      enumerate(zip(export_helpers.SENTENCES, export_helpers.SENTENCES[1:]))))
  paths["bert"] = str(root / "bert")
  import_helpers.write_tiny_bert(paths["bert"])
  paths["pairs"] = str(root / "pairs" / "train")
  files, _ = pair_tfrecords.write_pair_tfrecords(
      paths["corpus"], paths["pairs"], 1, pair_unit="sequence",
      tokenization_config=tokenization.TokenizationConfig(
          vocab_file=VOCAB, seq_length=16))
  paths["shard"] = files[0]
  return paths


def writing_cases(paths):
  """(name, argv for a target directory D, what to put in D first)."""
  copy_run = lambda d: _copy_run(paths["run"], os.path.join(d, "run"))
  return [
      ("train", lambda d: ["train", "--experiment=cmlm/tiny",
                           f"--config_file={paths['config']}",
                           f"--model_dir={d}/run"], None),
      ("stages", lambda d: ["stages", f"--schedule={paths['schedule']}",
                            f"--config_file={paths['config']}",
                            f"--model_dir={d}/stages"], None),
      ("vocab", lambda d: ["vocab", f"--input={paths['corpus']}",
                           f"--output={d}/vocab.txt", "--vocab_size=60"],
       None),
      ("export", lambda d: ["export", f"--model_dir={paths['run']}",
                            f"--export_dir={d}/export"], None),
      ("encode", lambda d: ["encode", f"--model={paths['export']}",
                            f"--input={paths['sentences']}",
                            f"--output={d}/e.npy"], None),
      ("encode", lambda d: ["encode", f"--model={paths['export']}",
                            f"--input={paths['sentences']}",
                            f"--output={d}/e.parquet"], None),
      ("encode", lambda d: ["encode", f"--model={paths['export']}",
                            f"--input={paths['sentences']}",
                            f"--output={d}/e.jsonl"], None),
      ("eval", lambda d: ["eval", f"--model={paths['export']}",
                          "--tasks=sts-b", f"--task_data=sts-b={paths['sts']}",
                          f"--report_dir={d}/report"], None),
      ("pcr", lambda d: ["pcr", f"--model_dir={d}/run",
                         f"--input=en={paths['sentences']}"], copy_run),
      ("import", lambda d: ["import", f"--source={paths['bert']}",
                            f"--model_dir={d}/imported"], None),
      ("prepare", lambda d: ["prepare", f"--input={paths['corpus']}",
                             f"--output={d}/pairs/train",
                             f"--vocab_file={VOCAB}", "--seq_length=16",
                             "--num_shards=1", "--direct_num_workers=1"],
       None),
  ] + ([("ngrams", lambda d: ["ngrams", f"--input={paths['corpus']}",
                                f"--output={d}/ngrams.txt"], None)]
       if _registered("ngrams") else [])


def _registered(command):
  """Whether a project (here MiSAD, which may be removed) adds `command`."""
  from cmlm import registry_imports  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  from cmlm.commands import COMMANDS  # pylint: disable=g-import-not-at-top
  return command in COMMANDS


def _copy_run(source, target):
  """The run's params and its newest checkpoint (what pcr reads)."""
  os.makedirs(target)
  newest = os.path.basename(checkpoint_integrity.candidates(source)[0])
  for name in os.listdir(source):
    if name == "params.yaml" or name.startswith(newest + "."):
      shutil.copy(os.path.join(source, name), target)
  with open(os.path.join(target, "checkpoint"), "w") as f:
    f.write(f'model_checkpoint_path: "{newest}"\n')


@pytest.fixture(autouse=True)
def _no_second_interrupt_watcher(monkeypatch):
  monkeypatch.setattr(stop_signals, "watch_for_second_interrupt",
                      lambda label: None)  # not this test process's business


@pytest.mark.parametrize("kind", ["full", "read_only"])
def test_every_command_on_a_full_or_read_only_disk(inputs, tmp_path, capsys,
                                                   monkeypatch, kind):
  system_tmp = tmp_path / "system_tmp"  # the system's temporary directory
  system_tmp.mkdir()
  monkeypatch.setattr(tempfile, "tempdir", str(system_tmp))
  monkeypatch.setenv("TMPDIR", str(system_tmp))
  problems = []
  for index, (command, argv, setup) in enumerate(writing_cases(inputs)):
    with RefusingDisk(str(tmp_path / str(index)), kind) as disk:
      if setup:
        setup(disk.path)
      before = disk.files()
      disk.refuse()
      try:
        status, lines = helpers.run_command(argv(disk.path), capsys)
      finally:
        disk.allow()
      problem = one_error_line(command, status, lines)
      if not problem and disk.files() != before:
        problem = f"left {sorted(set(disk.files()) - set(before))}"
      left = [name for name in os.listdir(system_tmp)  # autograph's go at
              if not name.startswith("__autograph_generated_")]  # exit
      if not problem and left:
        problem = f"left {sorted(left)} in {system_tmp}"
      if problem:
        problems.append(f"{' '.join(argv(disk.path)[:1])}: {problem}")
  assert not problems, "\n".join(problems)


def _cut(path, keep=0.5):
  with open(path, "r+b") as f:
    f.truncate(int(os.path.getsize(path) * keep))


def test_every_command_with_a_truncated_input(inputs, tmp_path, capsys,
                                              tiny_artifacts_export):
  """A truncated file of each kind a command reads: a .gz corpus (train,
  vocab, ngrams, prepare), TFRecord pairs (train), a schedule (stages), the
  checkpoints of a run (export, pcr), an ONNX model, a SavedModel and a
  .jsonl input (encode, eval), a safetensors file (import)."""
  root = str(tmp_path)
  out = os.path.join(root, "out")
  os.makedirs(out)
  gz = os.path.join(root, "corpus.txt.gz")
  words = np.random.default_rng(0).choice(TEXT.split(), 5000)
  with gzip.open(gz, "wt") as f:  # one long document, cut inside it:
    f.write(" ".join(words) + "\n\n" + TEXT)  # nothing for prepare either
  _cut(gz, 0.05)
  shard = os.path.join(root, os.path.basename(inputs["shard"]))
  for name in os.listdir(os.path.dirname(inputs["shard"])):
    shutil.copy(os.path.join(os.path.dirname(inputs["shard"]), name), root)
  _cut(shard)
  schedule = os.path.join(root, "schedule.yaml")
  with open(inputs["schedule"]) as f:
    open(schedule, "w").write(f.read()[:40])
  run = os.path.join(root, "run")
  _copy_run(inputs["run"], run)
  for name in os.listdir(run):
    if ".data-" in name:
      _cut(os.path.join(run, name))
  artifacts = os.path.join(root, "artifacts")
  shutil.copytree(tiny_artifacts_export.export_dir, artifacts, symlinks=True)
  _cut(os.path.join(layout.resolve(artifacts), "onnx", "model_int8.onnx"))
  export = os.path.join(root, "export")
  shutil.copytree(inputs["export"], export, symlinks=True)
  variables = os.path.join(layout.resolve(export), "encoder", "variables")
  _cut(os.path.join(variables, [n for n in os.listdir(variables)
                                if ".data-" in n][0]))
  jsonl = os.path.join(root, "in.jsonl")
  with open(jsonl, "w") as f:
    f.write("\n".join(json.dumps({"text": s})
                      for s in export_helpers.SENTENCES))
  _cut(jsonl, 0.9)
  bert = os.path.join(root, "bert")
  shutil.copytree(inputs["bert"], bert)
  _cut(os.path.join(bert, "model.safetensors"))
  tiny = f"--config_file={inputs['config']}"
  data = "task.objectives.cmlm.train_data."
  cases = [
      ("train", ["--experiment=cmlm/tiny", tiny, f"--model_dir={out}/a",
                 f"--params_override={data}input_path={gz}"],
       "is a truncated or damaged gzip"),
      ("train", ["--experiment=cmlm/tiny", tiny, f"--model_dir={out}/b",
                 f"--params_override={data}input_path={shard},"
                 f"{data}split=all"], "were written (truncated or damaged)"),
      ("stages", [f"--schedule={schedule}", f"--model_dir={out}/c"],
       "(is the file complete?)"),
      ("vocab", [f"--input={gz}", f"--output={out}/v.txt"],
       "is a truncated or damaged gzip"),
      ("prepare", [f"--input={gz}", f"--output={out}/p/train",
                   f"--vocab_file={VOCAB}", "--seq_length=16",
                   "--num_shards=1", "--direct_num_workers=1"],
       "gave no sentence pairs"),
      ("export", [f"--model_dir={run}", f"--export_dir={out}/e"],
       f"No checkpoint of {run} reads: "),
      ("pcr", [f"--model_dir={run}", f"--input=en={inputs['sentences']}"],
       f"No checkpoint of {run} reads: "),
      ("encode", [f"--model={artifacts}", "--backend=onnx", "--quantized",
                  f"--input={inputs['sentences']}", f"--output={out}/x.npy"],
       "model_int8.onnx is damaged: "),
      ("encode", [f"--model={inputs['export']}", f"--input={jsonl}",
                  f"--output={out}/y.npy"], "not JSON"),
      ("eval", [f"--model={export}", "--tasks=sts-b",
                f"--task_data=sts-b={inputs['sts']}",
                f"--report_dir={out}/r"], "variables.data-00000-of-00001 is "
                                          "damaged: "),
      ("import", [f"--source={bert}", f"--model_dir={out}/i"],
       "model.safetensors is truncated"),
  ]
  if _registered("ngrams"):
    cases.append(("ngrams", [f"--input={gz}", f"--output={out}/n.txt"],
                  "is a truncated or damaged gzip"))
  run_files = sorted(os.listdir(run))
  problems = []
  for command, argv, words in cases:
    status, lines = helpers.run_command([command] + argv, capsys)
    problem = one_error_line(command, status, lines)
    if not problem and not any(words in line for line in lines):
      problem = f"no {words!r} in {lines[-1:]}"
    if problem:
      problems.append(f"{command} {argv[-1]}: {problem}")
  assert not problems, "\n".join(problems)
  assert os.listdir(out) == []
  assert sorted(os.listdir(run)) == run_files  # readers move nothing


def test_every_writer_s_refusal_is_one_line():
  """The words each writer uses for a refused write: NumPy's short write
  (no errno), Beam's RuntimeError around a step's OSError, TensorFlow's
  message; and Beam's error of a step that is not the disk's."""
  line = command_line.disk_error_line
  assert line(OSError("1152000 requested and 262112 written")) == (
      "cannot write: the file system took 262112 of 1152000 bytes (the disk "
      "is full, or a quota or size limit was hit). Nothing was published: "
      "what was being written was removed.")
  beam = RuntimeError("OSError: [Errno 28] No space left on device: "
                      "'/d/x' [while running 'WriteShards/WriteShard']")
  assert line(beam).startswith("cannot write: No space left on device.")
  assert line(OSError(errno.EFBIG, "File too large", "/d/x")).startswith(
      "cannot write /d/x: File too large.")
  assert line(RuntimeError("a bug")) is None
  assert line(OSError("something else")) is None
  failed = RuntimeError("KeyError: 'x' [while running 'Pairs/Pack']")
  assert command_line.pipeline_error_line(failed) == (
      "the pipeline stopped in its step 'Pairs/Pack': KeyError: 'x'. Nothing "
      "was published (CMLM_DEBUG=1 shows the traceback).")
  assert command_line.pipeline_error_line(RuntimeError("a bug")) is None
