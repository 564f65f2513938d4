"""Two worker processes train together (MultiWorkerMirroredStrategy, TF_CONFIG).

The workers run `tests/train_worker.py` on 127.0.0.1 with free ports; the
reference is the same training in this process on one device. Both see the
same global batches (see train_worker.py for that test-only input path), so
the losses and the trained weights must agree to float rounding.
"""
import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from cmlm.training import train
from tests import helpers
from tests import train_worker

WORKER = os.path.join(helpers.REPO_ROOT, "tests", "train_worker.py")
TIMEOUT_S = 240


def free_ports(count):
  sockets = [socket.socket() for _ in range(count)]
  for s in sockets:
    s.bind(("127.0.0.1", 0))
  ports = [s.getsockname()[1] for s in sockets]
  for s in sockets:
    s.close()
  return ports


def start_workers(tmp_path, model_dir, train_steps):
  """Starts the two workers; returns their processes and result files."""
  cluster = {"worker": [f"127.0.0.1:{port}" for port in free_ports(2)]}
  scratch = tmp_path / "scratch"
  scratch.mkdir()
  processes, results = [], []
  for index in range(2):
    results.append(tmp_path / f"worker{index}.json")
    env = dict(os.environ, TMPDIR=str(scratch), TF_CPP_MIN_LOG_LEVEL="2",
               TF_CONFIG=json.dumps({"cluster": cluster, "task": {
                   "type": "worker", "index": index}}))
    processes.append(subprocess.Popen(
        [sys.executable, WORKER, f"--model_dir={model_dir}",
         f"--result={results[-1]}", "--strategy=multi_worker_mirrored",
         f"--train_steps={train_steps}"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
  return processes, results, scratch


def wait_all(processes):
  """Waits for every process; kills them all if one runs past the time."""
  outputs = []
  try:
    for process in processes:
      outputs.append(process.communicate(timeout=TIMEOUT_S)[0])
  except subprocess.TimeoutExpired:
    for process in processes:
      process.kill()
    pytest.fail(f"the workers ran past {TIMEOUT_S} s and were killed")
  for process, output in zip(processes, outputs):
    assert process.returncode == 0, output[-3000:]


def checkpoint_weights(model_dir):
  reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(model_dir))
  return {name: reader.get_tensor(name)
          for name, dtype in reader.get_variable_to_dtype_map().items()
          if dtype.is_floating and "OPTIMIZER_SLOT" not in name}


@pytest.mark.slow
def test_two_workers_train_as_one_process_on_the_same_global_batches(
    tmp_path):
  train_steps = 4
  model_dir = tmp_path / "two_workers"
  processes, results, scratch = start_workers(tmp_path, model_dir,
                                              train_steps)
  # The one-device reference trains here while the workers run.
  tf_keras.utils.set_random_seed(1)
  params = train_worker.experiment(train_steps)
  task = train_worker.GlobalBatchSliceConfig()
  task.override(params.task.as_dict())
  params.task = task
  params.runtime.distribution_strategy = "one_device"
  reference = train.run(params, str(tmp_path / "one_process"))
  wait_all(processes)

  workers = [json.loads(path.read_text()) for path in results]
  for worker in workers:
    assert worker["replicas"] == 2 and worker["step"] == train_steps
    assert worker["last_loss"] == pytest.approx(
        reference.progress.last_loss, rel=1e-5)
    assert worker["first_loss"] == pytest.approx(
        reference.progress.first_loss, rel=1e-5)
  assert reference.progress.last_loss < reference.progress.first_loss

  # One checkpoint series (read back, with its manifest) and one set of
  # summaries: the chief's only (checkpoint_interval = train_steps: one
  # save, at the end).
  assert tf.train.latest_checkpoint(str(model_dir)).endswith(
      f"ckpt-{train_steps}")
  assert sorted(os.listdir(model_dir)) == sorted(
      ["checkpoint", "params.yaml", "train", f"ckpt-{train_steps}.index",
       f"ckpt-{train_steps}.data-00000-of-00001",
       f"ckpt-{train_steps}.manifest.json"])
  assert len(os.listdir(model_dir / "train")) == 1
  assert not os.listdir(scratch), "the non-chief's save directory is removed"

  expected = checkpoint_weights(str(tmp_path / "one_process"))
  got = checkpoint_weights(str(model_dir))
  assert set(got) == set(expected)
  for name, value in expected.items():
    np.testing.assert_allclose(got[name], value, atol=1e-6, err_msg=name)
