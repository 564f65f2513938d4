"""One writer per run directory, and a disk-full save that leaves nothing.

- A second trainer on a directory in use fails at once, in one line naming
  the holder's pid and host, having written nothing; the `train` command
  prints that line and exits 2.
- A lock file left by a killed process is taken over, with a note.
- A save that fails with a full disk removes its temporary files, ends the
  run with one line (exit 2), and the same run then resumes from the last
  complete checkpoint.
- A vocabulary of the wrong casing is refused before anything is written;
  an unknown experiment names the registered ones.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading

import pytest
import tensorflow as tf

from tests import helpers
from cmlm.training import fault_tolerance
from cmlm.training import run_lock
from cmlm.training import run_config
from cmlm.training import stop_signals
from cmlm.training import train

HOLDER = """
import sys, time
sys.path.insert(0, {repo!r})
from cmlm.training import run_lock
with run_lock.hold({model_dir!r}, command="python -m cmlm train (holder)"):
  print("held", flush=True)
  time.sleep(120)
"""


@pytest.fixture
def lock_holder(tmp_path):
  """A separate process holding the lock of `tmp_path/run`."""
  model_dir = str(tmp_path / "run")
  process = subprocess.Popen(
      [sys.executable, "-c", HOLDER.format(repo=helpers.REPO_ROOT,
                                           model_dir=model_dir)],
      stdout=subprocess.PIPE, text=True)
  assert process.stdout.readline().strip() == "held"
  yield model_dir, process
  process.kill()
  process.wait()


def test_a_second_trainer_fails_at_once_naming_the_holder(lock_holder):
  model_dir, holder = lock_holder
  with pytest.raises(run_lock.RunDirectoryInUse) as raised:
    train.run(helpers.tiny_run_params(2), model_dir)
  message = str(raised.value)
  assert "\n" not in message
  assert f"pid {holder.pid} on host {socket.gethostname()}" in message
  assert "(holder)" in message  # its command
  # Nothing of the second run was written.
  assert os.listdir(model_dir) == [run_lock.LOCK_FILE_NAME]


def test_the_train_command_prints_one_line_and_exits_2(lock_holder, capsys):
  """Through the command line's own `main`, in this process: the lock is
  taken before any TensorFlow work, so no fresh process is needed."""
  model_dir, holder = lock_holder
  status, stderr = helpers.run_command(
      ["train", "--experiment=cmlm/tiny", f"--model_dir={model_dir}"], capsys)
  assert status == 2, stderr
  errors = [line for line in stderr if line.startswith("cmlm train:")]
  assert len(errors) == 1 and f"pid {holder.pid}" in errors[0]
  assert not any("Traceback" in line for line in stderr)
  assert os.listdir(model_dir) == [run_lock.LOCK_FILE_NAME]


def test_a_lock_left_by_a_killed_process_is_taken_over(tmp_path, capsys):
  dead = subprocess.Popen([sys.executable, "-c", "pass"])
  dead.wait()
  model_dir = str(tmp_path / "run")
  os.makedirs(model_dir)
  with open(run_lock.lock_path(model_dir), "w") as f:
    json.dump(dict(pid=dead.pid, host=socket.gethostname(),
                   started="2020-01-01T00:00:00", command="killed"), f)
  with run_lock.hold(model_dir):
    with open(run_lock.lock_path(model_dir)) as f:
      assert json.load(f)["pid"] == os.getpid()
    # While held, a second taker is refused.
    with pytest.raises(run_lock.RunDirectoryInUse):
      run_lock.acquire(model_dir)
  assert f"pid {dead.pid}" in capsys.readouterr().out  # the take-over note
  assert not os.path.exists(run_lock.lock_path(model_dir))  # released


def test_only_the_chief_of_tf_config_locks(monkeypatch):
  cluster = {"worker": ["a:1", "b:1"]}
  for index, chief in ((0, True), (1, False)):
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": cluster, "task": {"type": "worker", "index": index}}))
    assert run_lock.is_chief_from_tf_config() is chief
  monkeypatch.setenv("TF_CONFIG", json.dumps(
      {"cluster": dict(cluster, chief=["c:1"]),
       "task": {"type": "worker", "index": 0}}))
  assert not run_lock.is_chief_from_tf_config()
  monkeypatch.delenv("TF_CONFIG")
  assert run_lock.is_chief_from_tf_config()


def _full_disk_at(step, model_dir):
  """A `Checkpoint._write` that, for `ckpt-<step>`, writes part of its
  shards into `ckpt-<step>_temp/` as TensorFlow does, then hits a full disk."""
  write = tf.train.Checkpoint._write  # pylint: disable=protected-access

  def failing_write(self, file_prefix, *args, **kwargs):
    if os.path.basename(file_prefix) != f"ckpt-{step}":
      return write(self, file_prefix, *args, **kwargs)
    # The lock is held by this process while it trains.
    with open(run_lock.lock_path(model_dir)) as f:
      assert json.load(f)["pid"] == os.getpid()
    temporary = file_prefix + "_temp"
    os.makedirs(temporary)
    with open(os.path.join(temporary, "part-00000-of-00001.data-00000-of-"
                           "00001"), "wb") as f:
      f.write(b"\0" * 4096)
    raise tf.errors.ResourceExhaustedError(
        None, None, f"{temporary}/part-00000-of-00001.data-00000-of-00001; "
        "No space left on device")
  return failing_write


@pytest.mark.slow
def test_a_disk_full_save_leaves_no_temporary_files_and_resumes(
    tmp_path, monkeypatch, capsys):
  model_dir = str(tmp_path / "run")
  monkeypatch.setattr(tf.train.Checkpoint, "_write",
                      _full_disk_at(4, model_dir))
  with pytest.raises(fault_tolerance.CheckpointSaveError) as raised:
    train.run(helpers.tiny_run_params(4), model_dir)
  message = str(raised.value)
  assert "\n" not in message and "disk is full" in message
  assert "resumes from ckpt-2" in message
  names = os.listdir(model_dir)
  assert not [n for n in names if "_temp" in n or n.startswith("ckpt-4")]
  assert run_lock.LOCK_FILE_NAME not in names  # released on the error
  assert tf.train.latest_checkpoint(model_dir).endswith("ckpt-2")
  assert fault_tolerance.checkpoint_is_complete(
      os.path.join(model_dir, "ckpt-2"))

  monkeypatch.undo()
  capsys.readouterr()
  result = train.run(helpers.tiny_run_params(4), model_dir)
  assert int(result.trainer.global_step.numpy()) == 4
  progress = capsys.readouterr().out
  assert "step 4/4" in progress and "step 2/4" not in progress  # resumed
  assert tf.train.latest_checkpoint(model_dir).endswith("ckpt-4")


def test_the_train_command_reports_a_full_disk_in_one_line(monkeypatch,
                                                           capsys):
  from cmlm.commands import train as train_command  # pylint: disable=g-import-not-at-top

  def full_disk(*args, **kwargs):
    raise fault_tolerance.CheckpointSaveError("runs/x", "runs/x/ckpt-2",
                                              "No space left on device")
  monkeypatch.setattr(train, "run", full_disk)
  with pytest.raises(SystemExit) as exited:
    train_command.main(["--experiment=cmlm/tiny", "--model_dir=runs/x"])
  assert exited.value.code == 2
  error = capsys.readouterr().err.strip()
  assert len(error.splitlines()) == 1
  assert error.startswith("cmlm train: error: Saving a checkpoint in runs/x")


def test_a_vocabulary_of_the_wrong_casing_is_refused_before_training(
    tmp_path, capsys):
  params = helpers.tiny_run_params(2)
  # (a lower limit than the default 5%: the embedded corpus gives ~6%.)
  params.override({"task": {"tokenization": {"lower_case": False,
                                            "max_unk_rate": 0.02}}})
  model_dir = str(tmp_path / "run")
  with pytest.raises(ValueError) as raised:
    train.run(params, model_dir)
  message = str(raised.value)
  assert "\n" not in message
  assert message.endswith("set task.tokenization.lower_case=true.")
  assert "[UNK] tokens:" in capsys.readouterr().out
  assert not os.path.exists(model_dir)  # nothing written, no lock left


def test_an_unknown_experiment_names_the_registered_ones():
  with pytest.raises(ValueError) as raised:
    run_config.build_params("nope")
  assert "cmlm/tiny" in str(raised.value)
  assert "cmlm/en_base" in str(raised.value)


def test_a_summary_interval_off_the_loop_is_refused_before_writing(tmp_path):
  """orbit refuses it only when the controller is built, after params.yaml
  is written; `prepare` says so first."""
  params = helpers.tiny_run_params(4)
  params.override({"trainer": {"steps_per_loop": 3, "summary_interval": 2}})
  with pytest.raises(ValueError, match=r"trainer.summary_interval \(2\) must "
                     r"be a multiple of trainer.steps_per_loop \(3\)"):
    train.run(params, str(tmp_path / "run"))
  assert not (tmp_path / "run").exists()


def test_a_checkpoint_interval_off_the_loop_is_refused_before_writing(
    tmp_path):
  """orbit saves only at the end of a loop: `checkpoint_interval=10` on
  cmlm/tiny (loops of 100) would have saved at 100, 200, ... silently.
  The one line names both values and the loop to set."""
  built = run_config.build_config(
      "cmlm/tiny", params_override="trainer.train_steps=20,"
      "trainer.checkpoint_interval=10", quiet=True)
  with pytest.raises(ValueError) as raised:
    train.run(built, str(tmp_path / "run"))
  message = str(raised.value)
  assert "\n" not in message
  assert ("trainer.checkpoint_interval (10) must be a multiple of "
          "trainer.steps_per_loop (100)") in message
  assert "set trainer.steps_per_loop=10" in message
  assert not (tmp_path / "run").exists()


def test_every_registered_experiment_has_intervals_its_loop_honours():
  from cmlm import registry_imports  # noqa: F401  pylint: disable=g-import-not-at-top
  from cmlm.training import prepared_run  # pylint: disable=g-import-not-at-top
  from official.core import exp_factory  # pylint: disable=g-import-not-at-top
  # Every project's experiments too (`cmlm.registry_imports`).
  names = run_config.registered_experiments()
  assert "cmlm/tiny" in names
  for name in names:
    prepared_run.check_trainer(exp_factory.get_exp_config(name).trainer,
                               "train_and_eval")


def test_train_and_eval_checks_the_intervals_against_validation_too():
  """Loops restart at each validation: with loops of 100 and a validation
  every 30 steps, loops end at 30, 60, 90, 120, ... and a checkpoint every
  100 steps would fall at 120."""
  from cmlm.training import prepared_run  # pylint: disable=g-import-not-at-top
  trainer = helpers.tiny_run_params(1000).trainer
  trainer.override({"steps_per_loop": 100, "summary_interval": 100,
                    "checkpoint_interval": 100, "validation_interval": 30})
  prepared_run.check_trainer(trainer, "train")
  with pytest.raises(ValueError, match=r"trainer.summary_interval \(100\) "
                     r"does not fall at the end of a loop.*set "
                     r"trainer.validation_interval to a multiple of 100"):
    prepared_run.check_trainer(trainer, "train_and_eval")
  trainer.override({"validation_interval": 200})
  prepared_run.check_trainer(trainer, "train_and_eval")


def test_a_run_of_another_model_or_objectives_is_refused_before_writing(
    tiny_run, tmp_path):
  """Resuming a run with a config of another shape overwrote its
  params.yaml, then failed restoring the checkpoint (the run could no
  longer be exported); another experiment's objectives failed after ~100
  lines of warnings. Both are one line now, and the run is left as it was."""
  model_dir = str(tmp_path / "run")
  shutil.copytree(tiny_run[0], model_dir)
  with open(os.path.join(model_dir, "params.yaml"), encoding="utf-8") as f:
    saved = f.read()
  wider = helpers.tiny_run_params(8)
  wider.override({"task": {"model": {"encoder": {"hidden_size": 32}}}})
  with pytest.raises(ValueError) as raised:
    train.run(wider, model_dir)
  assert str(raised.value) == (
      f"--model_dir={model_dir} holds a run of another model "
      "(task.model.encoder.hidden_size: 16 there, 32 in this config), which "
      "it cannot resume or read; give a new --model_dir, or the run's own "
      "config.")
  other = helpers.tiny_run_params(8)
  other.override({"task": {"objectives": {"bitext_retrieval": {
      "weight": 1.0}}}})
  with pytest.raises(ValueError, match=r"holds a run that trained cmlm "
                     r"\(cmlm\); this config trains bitext_retrieval "
                     r"\(bitext_retrieval\), cmlm \(cmlm\)"):
    train.check_run_fits(other, model_dir, "train")
  with open(os.path.join(model_dir, "params.yaml"), encoding="utf-8") as f:
    assert f.read() == saved
  train.check_run_fits(helpers.tiny_run_params(8), model_dir, "train")


def test_keeping_no_checkpoint_is_refused_before_writing(tmp_path):
  """orbit's checkpoint manager refused it after params.yaml was written,
  naming `max_to_keep` alone."""
  params = helpers.tiny_run_params(4)
  params.override({"trainer": {"max_to_keep": 0}})
  with pytest.raises(ValueError, match=r"trainer.max_to_keep must be 1 or "
                     r"more \(or null: keep every checkpoint\), got 0."):
    train.run(params, str(tmp_path / "run"))
  assert not (tmp_path / "run").exists()


def test_eval_of_a_directory_without_a_checkpoint_is_refused(tmp_path):
  """It scored the random initial weights and exited 0."""
  with pytest.raises(FileNotFoundError, match="--mode=eval scores the latest "
                     "checkpoint of --model_dir=.*, which holds none"):
    train.run(helpers.tiny_run_params(4), str(tmp_path / "run"), mode="eval")
  assert not (tmp_path / "run").exists()


def test_sigterm_stops_an_evaluation_waiting_for_a_checkpoint(tmp_path,
                                                               monkeypatch):
  """`--mode=continuous_eval` on a directory with no checkpoint yet waits
  for one; SIGTERM (or Ctrl-C) stops it at once, as it stops every command
  (it used to say "saving a checkpoint" and keep waiting). Without the
  fix, this run ends by itself when `continuous_eval_timeout` passes."""
  monkeypatch.setattr(stop_signals, "_received", [])  # this process's own
  params = helpers.tiny_run_params(0)
  params.override({"trainer": {"continuous_eval_timeout": 8}})
  timer = threading.Timer(2, os.kill, (os.getpid(), signal.SIGTERM))
  with stop_signals.raising_interrupted():
    timer.start()
    with pytest.raises(stop_signals.Interrupted):
      train.run(params, str(tmp_path / "run"), mode="continuous_eval")
  timer.join()
