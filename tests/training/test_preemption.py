"""Preemption and crashes with real processes: SIGKILL, SIGTERM, resume.

A `python -m cmlm train` process is killed with SIGKILL while it writes a
checkpoint; the latest checkpoint must still be complete, and training
resumed from it (at its step, the input pipeline continuing where the
checkpoint was taken) must end with the weights of a run never interrupted.
SIGTERM must make the process save a checkpoint and exit with status 143.
"""
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import tensorflow as tf

from cmlm.training import fault_tolerance
from cmlm.training import train
from official.modeling.hyperparams import params_dict
from tests import train_worker
from tests import helpers

REPO = helpers.REPO_ROOT
TIMEOUT_S = 180


def experiment(train_steps, **trainer):
  """The tiny deterministic experiment, checkpointing every step."""
  params = train_worker.experiment(train_steps)
  params.override({"trainer": dict(dict(
      steps_per_loop=1, summary_interval=1, checkpoint_interval=1,
      max_to_keep=3), **trainer)})
  return params


def start_training(tmp_path, params, model_dir):
  """`python -m cmlm train` of `params` in a new process, killed at timeout."""
  config = tmp_path / "config.yaml"
  params_dict.save_params_dict_to_yaml(params, str(config))
  process = subprocess.Popen(
      [sys.executable, "-m", "cmlm", "train", "--experiment=cmlm/tiny",
       f"--config_file={config}", f"--model_dir={model_dir}"],
      cwd=REPO, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
  timer = threading.Timer(TIMEOUT_S, process.kill)
  timer.daemon = True
  timer.start()
  return process


def latest_step(model_dir):
  latest = tf.train.latest_checkpoint(str(model_dir))
  return int(latest.rsplit("-", 1)[1]) if latest else 0


def all_weights(model_dir):
  reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(str(model_dir)))
  return {name: reader.get_tensor(name)  # reads every tensor: none is torn
          for name, dtype in reader.get_variable_to_dtype_map().items()
          if dtype.is_floating}


def kill_during_a_save(process, model_dir):
  """SIGKILL while a checkpoint after ckpt-2 is written (its _temp shards)."""
  while process.poll() is None:
    names = os.listdir(model_dir)
    if latest_step(model_dir) >= 2 and any(n.endswith("_temp")
                                           for n in names):
      process.send_signal(signal.SIGKILL)
      return
    time.sleep(0.002)


@pytest.mark.slow
def test_sigkill_during_a_save_then_resume_equals_an_uninterrupted_run(
    tmp_path):
  # No global seed, as in the new training process: the input's shuffle
  # seeds include it (an earlier test may have set one in this process).
  tf.random.set_seed(None)
  params = experiment(train_steps=12)
  model_dir = tmp_path / "killed"
  train_worker.write_initial_checkpoint(
      params, str(model_dir), str(tmp_path / "uninterrupted"))
  process = start_training(tmp_path, params, model_dir)
  killer = threading.Thread(target=kill_during_a_save, args=(process,
                                                              model_dir))
  killer.start()
  uninterrupted = train.run(params, str(tmp_path / "uninterrupted"))
  killer.join()
  output = process.communicate()[0]
  assert process.returncode == -signal.SIGKILL, output[-2000:]
  step = latest_step(model_dir)
  assert 2 <= step < 12
  assert fault_tolerance.checkpoint_is_complete(
      tf.train.latest_checkpoint(str(model_dir)))
  all_weights(model_dir)

  resumed = train.run(params, str(model_dir))
  assert resumed.trainer.first_step_of_run == step
  assert resumed.trainer.input_in_checkpoint
  assert not [n for n in os.listdir(model_dir) if n.endswith("_temp")]
  # The final weights are the whole state: equal weights mean the resumed
  # run took the same steps on the same batches. (The last loop's mean loss
  # is not compared: a resume at an odd step shifts the loop boundaries.)
  expected = all_weights(tmp_path / "uninterrupted")
  got = all_weights(model_dir)
  for name, value in expected.items():
    np.testing.assert_allclose(got[name], value, atol=1e-6, err_msg=name)


@pytest.mark.slow
def test_sigterm_saves_a_checkpoint_then_exits_with_status_143(tmp_path):
  # Only the first loop and SIGTERM can write checkpoints here.
  params = experiment(train_steps=200, checkpoint_interval=1000)
  model_dir = tmp_path / "stopped"
  process = start_training(tmp_path, params, model_dir)
  lines = []
  for line in process.stdout:
    lines.append(line)
    if line.startswith("step 3/200"):
      process.send_signal(signal.SIGTERM)
      break
  output = "".join(lines) + process.communicate()[0]
  assert process.returncode == 143, output[-2000:]
  message = [line for line in output.splitlines() if "SIGTERM" in line][-1]
  step = latest_step(model_dir)
  assert f"Stopped by SIGTERM at step {step} after saving" in message
  assert 3 <= step < 200
  reader = tf.train.load_checkpoint(str(model_dir / f"ckpt-{step}"))
  assert reader.get_tensor("global_step/.ATTRIBUTES/VARIABLE_VALUE") == step


def test_a_save_interrupted_at_any_point_leaves_a_resumable_model_dir(
    tmp_path):
  # What a crash during the save of ckpt-3 can leave beside ckpt-2.
  model_dir = str(tmp_path)
  checkpoint = tf.train.Checkpoint(v=tf.Variable([1.0, 2.0]))
  manager = tf.train.CheckpointManager(checkpoint, model_dir, max_to_keep=3)
  manager.save(checkpoint_number=2)
  os.makedirs(os.path.join(model_dir, "ckpt-3_temp"))
  for name in ("ckpt-3_temp/part-00000-of-00001.data-00000-of-00001",
               "ckpt-3.data-00000-of-00001", "ckpt-3.index.tempstate123",
               "checkpoint.tmp0123abcd"):
    with open(os.path.join(model_dir, name), "wb") as f:
      f.write(b"\0partial")
  fault_tolerance.repair_checkpoint_state(model_dir)
  assert sorted(os.listdir(model_dir)) == [
      "checkpoint", "ckpt-2.data-00000-of-00001", "ckpt-2.index",
      "ckpt-3.data-00000-of-00001"]
  assert manager.save(checkpoint_number=3).endswith("ckpt-3")

  # A state file naming a checkpoint whose index is gone, or unreadable.
  os.remove(os.path.join(model_dir, "ckpt-3.index"))
  fault_tolerance.repair_checkpoint_state(model_dir)
  assert tf.train.latest_checkpoint(model_dir).endswith("ckpt-2")
  with open(os.path.join(model_dir, "checkpoint"), "w") as f:
    f.write("model_checkpoint_path: \"ckpt-")
  fault_tolerance.repair_checkpoint_state(model_dir)
  assert tf.train.latest_checkpoint(model_dir).endswith("ckpt-2")


@pytest.mark.slow
def test_ctrl_c_saves_after_the_current_step_and_exits_with_status_130(
    tmp_path):
  """SIGINT is SIGTERM's twin, and takes effect between two steps: in the
  middle of a loop of 100 000 steps the run saves the step it reached and
  exits 130 with one line, not at the end of the loop nor in a
  KeyboardInterrupt traceback; the same command resumes from there."""
  params = experiment(train_steps=200_000, steps_per_loop=100_000,
                      summary_interval=100_000, checkpoint_interval=100_000)
  # The loop runs for as many steps as 3 s allow (~250 on a fast CPU). The
  # tiny experiment's SGD at 1.0 diverges after 60-140 steps from one random
  # start in six; at 0.1 none of six diverged in 1,500 steps.
  params.override({"trainer": {"optimizer_config": {"learning_rate": {
      "constant": {"learning_rate": 0.1}}}}})
  model_dir = tmp_path / "interrupted"
  process = start_training(tmp_path, params, model_dir)
  lines = []
  for line in process.stdout:
    lines.append(line)
    if "training until step" in line:  # orbit's line as the loop starts
      break
  time.sleep(3)  # some steps of the first loop
  process.send_signal(signal.SIGINT)
  signalled = time.perf_counter()
  output = "".join(lines) + process.communicate()[0]
  assert process.returncode == 130, output[-2000:]
  assert time.perf_counter() - signalled < 60
  assert "Traceback" not in output and "KeyboardInterrupt" not in output
  stopped = [line for line in output.splitlines()
             if line.startswith("cmlm train: Stopped by SIGINT (Ctrl-C)")]
  step = latest_step(model_dir)
  assert len(stopped) == 1 and f"at step {step} after saving" in stopped[0]
  assert 1 <= step < 100_000
  assert fault_tolerance.checkpoint_is_complete(
      tf.train.latest_checkpoint(str(model_dir)))
  reader = tf.train.load_checkpoint(str(model_dir / f"ckpt-{step}"))
  assert reader.get_tensor("global_step/.ATTRIBUTES/VARIABLE_VALUE") == step


SECOND_CTRL_C = """
import os, signal, sys, time
sys.path.insert(0, {repo!r})
from cmlm.data_pipelines import atomic_file
from cmlm.training import stop_signals
stop_signals.watch_for_second_interrupt("cmlm test")
with atomic_file.atomic_file({output!r}) as temporary:
  with open(temporary, "w") as f:
    f.write("half of it")
  # The first Ctrl-C asked for a clean stop that has not come yet, as when
  # the main thread is inside a long TensorFlow call (a step, a save),
  # where Python runs no signal handler.
  signal.signal(signal.SIGINT, lambda signum, frame: None)
  print(temporary, flush=True)
  time.sleep(120)
"""


def test_a_second_ctrl_c_ends_the_process_at_once_removing_its_temporaries(
    tmp_path):
  output = tmp_path / "embeddings.npy"
  process = subprocess.Popen(
      [sys.executable, "-c", SECOND_CTRL_C.format(repo=REPO,
                                                  output=str(output))],
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
  temporary = process.stdout.readline().strip()
  assert os.path.exists(temporary)
  process.send_signal(signal.SIGINT)
  time.sleep(0.5)
  assert process.poll() is None  # one Ctrl-C waits for the clean stop
  process.send_signal(signal.SIGINT)
  _, errors = process.communicate(timeout=10)
  assert process.returncode == 130
  assert errors.strip().startswith("cmlm test: stopped at once by a second "
                                   "Ctrl-C")
  assert os.listdir(tmp_path) == []


STOP_WHILE_CPP_PRINTS = """
import os, signal, sys
sys.path.insert(0, {repo!r})
from cmlm.training import stop_signals
try:
  with stop_signals.raising_interrupted():
    try:
      os.kill(os.getpid(), signal.SIGINT)
      os.write(2, b"before the handler\\n")  # the handler raises here
    except stop_signals.Interrupted:
      # What TensorFlow's C++ prints when the stop lands inside its call
      # (the interrupted call's traceback), as it unwinds.
      os.write(2, b"Traceback (most recent call last): SystemError\\n")
      raise
except stop_signals.Interrupted as stopped:
  print("cmlm test: " + str(stopped), file=sys.stderr)
  sys.exit(stop_signals.exit_status(stopped.signum))
"""


@pytest.mark.parametrize("debug", [False, True])
def test_after_a_stop_the_command_s_line_is_all_stderr_shows(debug):
  """From the stop signal to the command's line, file descriptor 2 is
  silenced (C++ tracebacks of the interrupted call), then given back;
  CMLM_DEBUG=1 keeps everything."""
  env = dict(os.environ)
  env.pop("CMLM_DEBUG", None)
  if debug:
    env["CMLM_DEBUG"] = "1"
  result = subprocess.run(
      [sys.executable, "-c", STOP_WHILE_CPP_PRINTS.format(repo=REPO)],
      env=env, capture_output=True, text=True, timeout=60)
  assert result.returncode == 130
  lines = result.stderr.strip().splitlines()
  assert lines[-1] == ("cmlm test: stopped by SIGINT (Ctrl-C); what it was "
                       "writing was removed.")
  assert ("Traceback (most recent call last): SystemError" in lines) == debug


def test_a_stop_a_library_swallowed_still_publishes_nothing(tmp_path,
                                                            monkeypatch):
  """A stop that lands inside a C extension can come back as the
  extension's own error, which a library may catch and go on (TensorFlow
  does): the garden's atomic writers still raise `Interrupted` before a
  temporary becomes its target, and publish nothing."""
  from cmlm.data_pipelines import atomic_file  # pylint: disable=g-import-not-at-top
  from cmlm.training import atomic  # pylint: disable=g-import-not-at-top
  from cmlm.training import stop_signals  # pylint: disable=g-import-not-at-top
  monkeypatch.setattr(stop_signals, "_received", [])  # this process's own
  monkeypatch.setenv("CMLM_DEBUG", "1")  # pytest's stderr stays as it is
  target_file, target_dir = tmp_path / "vectors.npy", tmp_path / "export"
  with stop_signals.raising_interrupted():
    try:
      os.kill(os.getpid(), signal.SIGTERM)
      time.sleep(10)  # the handler raises here
    except stop_signals.Interrupted:
      pass  # what a library that caught the converted error does
    with pytest.raises(stop_signals.Interrupted):
      with atomic_file.atomic_file(str(target_file)) as temporary:
        with open(temporary, "w") as f:
          f.write("complete, but stopped")
    with pytest.raises(stop_signals.Interrupted):
      with atomic.atomic_directory(str(target_dir)) as temporary:
        with open(os.path.join(temporary, "saved_model.pb"), "w") as f:
          f.write("complete, but stopped")
  assert os.listdir(tmp_path) == []
  # Outside the command's context the stop is the caller's: writers write.
  with atomic_file.atomic_file(str(target_file)) as temporary:
    with open(temporary, "w") as f:
      f.write("after")
  assert target_file.read_text() == "after"
