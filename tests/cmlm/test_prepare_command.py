"""`python -m cmlm prepare`: Beam's options pass through after `--`, the
table ends the run, errors are one line, and without Beam one line says how
to install it."""
import errno
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from cmlm.commands import prepare
from tests import helpers
from tests.data_pipelines import data_helpers


def run_prepare(*args, tmpdir=None):
  """`python -m cmlm prepare ARGS`; `tmpdir`: its system temporary
  directory (`TMPDIR`), made empty."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  env.pop("CMLM_DEBUG", None)
  if tmpdir is not None:
    os.makedirs(tmpdir)
    env["TMPDIR"] = str(tmpdir)
  return subprocess.run([sys.executable, "-m", "cmlm", "prepare", *args],
                        cwd=helpers.REPO_ROOT, env=env, capture_output=True,
                        text=True, timeout=300)


def test_the_local_cluster_line_counts_its_worker_processes():
  assert prepare.local_cluster_line(1, "tcp://127.0.0.1:1") == (
      "prepare: a local Dask cluster of 1 worker process at tcp://127.0.0.1:1")
  assert prepare.local_cluster_line(2, "tcp://127.0.0.1:1").startswith(
      "prepare: a local Dask cluster of 2 worker processes at ")


def test_pipeline_args_put_the_users_beam_options_last():
  args = prepare.pipeline_args("DirectRunner", 0, ["--direct_num_workers=3"])
  assert args[0] == "--runner=DirectRunner"
  assert args[1] == f"--direct_num_workers={os.cpu_count()}"
  assert args[-1] == "--direct_num_workers=3"  # Beam: the last one wins
  assert prepare.pipeline_args("DirectRunner", 1, []) == [
      "--runner=DirectRunner", "--direct_num_workers=1"]
  assert prepare.pipeline_args("DataflowRunner", 4, ["--project=p"]) == [
      "--runner=DataflowRunner", "--project=p"]
  assert prepare.split_beam_arguments(["--input=a", "--", "--project=p"]) == (
      ["--input=a"], ["--project=p"])


def test_without_beam_one_line_says_how_to_install_it(monkeypatch, capsys,
                                                      tmp_path):
  monkeypatch.setitem(sys.modules, "apache_beam", None)
  with pytest.raises(SystemExit) as stopped:
    prepare.main([f"--input={tmp_path}", f"--output={tmp_path}/p",
                  "--pair_unit=sentence"])
  assert stopped.value.code == 2
  line, = capsys.readouterr().err.strip().splitlines()
  assert line.startswith("cmlm prepare: error: prepare needs Apache Beam")
  assert "pip install -r requirements-beam.txt" in line
  assert not list(tmp_path.iterdir())


def test_a_negative_direct_num_workers_is_refused_before_beam_loads(
    monkeypatch, tmp_path):
  """Beam stopped on it with an IndexError's traceback; 0 is Beam's one
  process per core, so only a negative count is refused."""
  monkeypatch.setitem(sys.modules, "apache_beam", None)  # not loaded first
  with pytest.raises(ValueError, match=r"^--direct_num_workers must be 0 "
                     r"\(one process per CPU core\) or more, got -1\.$"):
    prepare.main([f"--input={tmp_path}", f"--output={tmp_path}/p",
                  "--pair_unit=sentence", "--direct_num_workers=-1"])
  assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_prepare_writes_records_a_manifest_and_the_table(tmp_path, capsys):
  pytest.importorskip("apache_beam", reason="Apache Beam is an extra: pip "
                      "install -r requirements-beam.txt")
  text = data_helpers.write_numbered_corpus(tmp_path / "corpus", 12)
  vocab = data_helpers.write_tiny_vocab(tmp_path)
  prefix = tmp_path / "out" / "pairs"
  result = run_prepare(f"--input=en={text}", f"--output={prefix}",
                       f"--vocab_file={vocab}", "--seq_length=16",
                       "--num_shards=2", "--", "--direct_num_workers=1",
                       tmpdir=tmp_path / "system_tmp")
  assert result.returncode == 0, result.stderr[-3000:]
  # Beam's runner left its beam-temp*/tmp* there before: now nothing.
  assert os.listdir(tmp_path / "system_tmp") == []
  assert "|  | en | total |" in result.stdout
  assert "| pairs | 12 | 12 |" in result.stdout
  manifest = json.loads((tmp_path / "out" / "pairs.pairs.json").read_text())
  assert manifest["pair_unit"] == "sequence" and manifest["max_tokens"] == 14
  assert manifest["languages"] == {"en": 12}
  assert sorted(os.listdir(tmp_path / "out")) == [
      "pairs.pairs.json", "pairs.tfrecord-00000-of-00002",
      "pairs.tfrecord-00001-of-00002"]
  missing_vocab = run_prepare(f"--input={text}", f"--output={prefix}2")
  assert missing_vocab.returncode == 2
  assert missing_vocab.stderr.strip().splitlines() == [
      "cmlm prepare: error: --pair_unit=sequence packs sentences to the "
      "run's token budget: give the run's --vocab_file (and --seq_length, "
      "--lower_case)."]
  exists = helpers.run_command_here(  # the command's main, in this process
      ["prepare", f"--input={text}", f"--output={prefix}",
       "--pair_unit=sentence", "--direct_num_workers=1"], capsys)
  assert exists.returncode == 2 and "--overwrite" in exists.stderr


@pytest.mark.slow
def test_ctrl_c_stops_prepare_with_130_and_publishes_nothing(tmp_path):
  """SIGINT in the middle of the Beam job (its workers running): one line,
  status 130, the temporary shards removed, no manifest (issue 26, item 4)."""
  pytest.importorskip("apache_beam", reason="Apache Beam is an extra: pip "
                      "install -r requirements-beam.txt")
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  novel = os.path.join(helpers.REPO_ROOT, "data", "corpus_en",
                       "pride_and_prejudice.txt")
  for copy in range(5):  # ~3.5 MB: the job runs well past the signal
    (corpus / f"{copy}.txt").write_bytes(open(novel, "rb").read())
  out = tmp_path / "out"
  system_tmp = tmp_path / "system_tmp"
  system_tmp.mkdir()
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TMPDIR=str(system_tmp))
  env.pop("CMLM_DEBUG", None)
  child = subprocess.Popen(
      [sys.executable, "-m", "cmlm", "prepare", f"--input={corpus}/*",
       f"--output={out / 'p'}", "--pair_unit=sentence",
       "--direct_num_workers=2"],
      cwd=helpers.REPO_ROOT, env=env, stdout=subprocess.PIPE,
      stderr=subprocess.PIPE, text=True)
  try:
    deadline = time.monotonic() + 240
    while not (out.is_dir() and any(n.startswith(".tmp-") and n.endswith("-p")
                                    for n in os.listdir(out))):
      assert child.poll() is None, child.communicate()[1][-2000:]
      assert time.monotonic() < deadline, "the job never started writing"
      time.sleep(0.1)
    time.sleep(1.0)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=120)
  finally:
    if child.poll() is None:
      child.kill()
  assert child.returncode == 130, err[-2000:]
  assert err.strip().splitlines()[-1] == (
      "cmlm prepare: stopped by SIGINT (Ctrl-C); what it was writing was "
      "removed.")
  assert not out.exists()  # nor the directory made for the output
  assert os.listdir(system_tmp) == []  # nor Beam's temporaries


# A job stopped by SIGINT while Beam's `run_worker` threads are still
# starting their worker processes (one starts after the stop, as on a busy
# machine), and Beam's control thread raises once its worker is gone.
LATE_WORKER_JOB = """
import os, signal, subprocess, threading, time
from cmlm.data_pipelines import beam_runners

# As in a terminal: Python leaves SIGINT ignored when it starts so (pytest
# run as a background job of a non-interactive shell), and then no
# KeyboardInterrupt would come.
signal.signal(signal.SIGINT, signal.default_int_handler)

def watch_late_worker():
  time.sleep(0.5)
  worker = subprocess.Popen(["sleep", "120"])
  worker.wait()
  raise RuntimeError(f"Worker subprocess exited with code {worker.returncode}")

def read_control():
  time.sleep(1.0)
  raise ConnectionError("the control stream ended")

class Job:
  def run(self):
    return self
  def wait_until_finish(self):
    threading.Thread(target=watch_late_worker, name="run_worker").start()
    threading.Thread(target=read_control, name="beam_control_read").start()
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(120)

try:
  beam_runners.run_to_end(Job())
except KeyboardInterrupt:
  print("stopped")
"""


def test_a_worker_started_after_the_stop_is_ended_too():
  """The stop's sweep of worker processes goes on until Beam's threads that
  watch them are done: a worker process started just after the signal
  would otherwise keep its thread, and the interpreter's exit, waiting
  (Ctrl-C on a busy machine hung so). Beam's threads that raise because their
  worker was ended print nothing."""
  pytest.importorskip("apache_beam", reason="Apache Beam is an extra: pip "
                      "install -r requirements-beam.txt")
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  start = time.monotonic()
  done = subprocess.run([sys.executable, "-c", LATE_WORKER_JOB],
                        cwd=helpers.REPO_ROOT, env=env, capture_output=True,
                        text=True, timeout=90)
  assert done.returncode == 0, done.stderr[-2000:]
  assert done.stdout.split() == ["stopped"]
  assert "Traceback" not in done.stderr, done.stderr[-2000:]
  assert time.monotonic() - start < 60  # not the late worker's 120 s


@pytest.mark.slow
@pytest.mark.parametrize("failure", [errno.ENOSPC, errno.EROFS])
def test_a_full_or_read_only_disk_stops_prepare_in_one_line(
    tmp_path, monkeypatch, capsys, failure):
  """The disk refuses the publishing of the shards: one line, status 2, no
  shard, manifest or temporary directory left (issue 26, item 6)."""
  pytest.importorskip("apache_beam", reason="Apache Beam is an extra: pip "
                      "install -r requirements-beam.txt")
  from cmlm import __main__ as command_line  # pylint: disable=g-import-not-at-top
  from cmlm.data_pipelines import beam_shards  # pylint: disable=g-import-not-at-top
  from cmlm.training import stop_signals  # pylint: disable=g-import-not-at-top
  monkeypatch.setattr(stop_signals, "watch_for_second_interrupt",
                      lambda label: None)  # not this test process's business
  renames = []

  def rename_then_refuse(source, target, overwrite=False):
    if renames:  # the first shard lands, the second is refused
      raise OSError(failure, os.strerror(failure), str(target))
    renames.append(target)
    os.replace(source, target)
  monkeypatch.setattr(beam_shards.tf.io.gfile, "rename", rename_then_refuse)
  text = data_helpers.write_numbered_corpus(tmp_path / "corpus", 12)
  out = tmp_path / "out"
  with pytest.raises(SystemExit) as exited:
    command_line.main(["cmlm", "prepare", f"--input={text}",
                       f"--output={out / 'p'}", "--pair_unit=sentence",
                       "--num_shards=2", "--direct_num_workers=1"])
  assert exited.value.code == 2
  line = capsys.readouterr().err.strip().splitlines()[-1]
  assert line.startswith("cmlm prepare: error: cannot write ")
  assert line.endswith(f": {os.strerror(failure)}. Nothing was published: "
                       "what was being written was removed.")
  assert renames and not out.exists()  # nor the directory made for it


def test_a_job_the_cluster_lost_is_one_line_and_status_1(
    tmp_path, monkeypatch, capsys):
  """`beam_runners.JobFailed` (on Dask: every worker that ran a task died)
  ends `prepare` with its one line, status 1."""
  beam_runners = pytest.importorskip(
      "cmlm.data_pipelines.beam_runners", reason="Apache Beam is an extra: "
      "pip install -r requirements-beam.txt")
  from cmlm import __main__ as command_line  # pylint: disable=g-import-not-at-top
  from cmlm.data_pipelines import beam_pairs  # pylint: disable=g-import-not-at-top
  from cmlm.training import stop_signals  # pylint: disable=g-import-not-at-top
  monkeypatch.setattr(stop_signals, "watch_for_second_interrupt",
                      lambda label: None)  # not this test process's business

  def lost(*args, **kwargs):
    raise beam_runners.JobFailed("The cluster lost the job (KilledWorker: "
                                 "...); nothing was published.")
  monkeypatch.setattr(beam_pairs, "prepare_pairs", lost)
  text = data_helpers.write_numbered_corpus(tmp_path / "corpus", 4)
  with pytest.raises(SystemExit) as exited:
    command_line.main(["cmlm", "prepare", f"--input={text}",
                       f"--output={tmp_path / 'out' / 'p'}",
                       "--pair_unit=sentence", "--direct_num_workers=1"])
  assert exited.value.code == 1
  assert capsys.readouterr().err.strip().splitlines() == [
      "cmlm prepare: error: The cluster lost the job (KilledWorker: ...); "
      "nothing was published."]
  assert prepare.pipeline_args("DaskRunner", 4, ["--dask_npartitions=2"]) == [
      "--runner=DaskRunner", "--dask_npartitions=2"]


@pytest.mark.slow
def test_prepare_on_a_local_dask_cluster_writes_the_direct_runners_bytes(
    tmp_path):
  """`--runner=DaskRunner --dask_workers=2`: prepare starts a Dask cluster
  of two worker processes on 127.0.0.1, runs the job on it, stops it."""
  pytest.importorskip("distributed", reason="dask and distributed are in "
                      "the Beam extra: pip install -r requirements-beam.txt")
  from cmlm.data_pipelines import beam_pairs  # pylint: disable=g-import-not-at-top
  text = data_helpers.write_numbered_corpus(tmp_path / "corpus", 24,
                                            num_files=3)
  result = run_prepare(f"--input=en={text}", f"--output={tmp_path / 'dask'}",
                       "--pair_unit=sentence", "--num_shards=2",
                       "--runner=DaskRunner", "--dask_workers=2",
                       tmpdir=tmp_path / "system_tmp")
  assert result.returncode == 0, result.stderr[-3000:]
  assert os.listdir(tmp_path / "system_tmp") == []  # nor dask-scratch-space
  assert ("prepare: a local Dask cluster of 2 worker processes at "
          "tcp://127.0.0.1:") in result.stderr
  assert "| pairs | 48 | 48 |" in result.stdout
  assert "| files read | 3 | 3 |" in result.stdout
  direct = beam_pairs.prepare_pairs(
      f"en={text}", str(tmp_path / "direct"),
      beam_pairs.PairsConfig(pair_unit="sentence", num_shards=2),
      ["--direct_num_workers=1"], stream=open(os.devnull, "w"))
  for path in direct.shard_paths + [direct.manifest_path]:
    dask_path = path.replace(str(tmp_path / "direct"), str(tmp_path / "dask"))
    with open(path, "rb") as ours, open(dask_path, "rb") as theirs:
      # The manifest names its own shards: equal but for the output's name.
      assert ours.read().replace(b"direct", b"dask") == theirs.read()
