"""A damaged checkpoint costs one checkpoint interval, not the run.

- Every save is read back and gets a manifest (sizes, SHA-256) written last;
  a torn write is found at once, moved aside, and stops the run in one line.
- A run resumes from the newest checkpoint that reads: the damaged ones are
  moved into `damaged/` (byte for byte, never deleted), the state file names
  the one restored, one line says so; none readable is one line, exit 2.
- Readers (export, encode, a later stage's start) skip a damaged checkpoint
  with one line and move nothing; a damaged one named by the user is an
  error naming the newest that reads.
"""
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from cmlm.training import checkpoint_integrity
from cmlm.training import checkpoints
from cmlm.training import fault_tolerance
from tests import helpers


def _manager(model_dir, value=0.0, max_to_keep=5):
  checkpoint = tf.train.Checkpoint(v=tf.Variable(np.full([64], value,
                                                         np.float32)))
  return checkpoint, tf.train.CheckpointManager(checkpoint, model_dir,
                                                max_to_keep=max_to_keep)


def _save_steps(model_dir, steps, max_to_keep=5):
  """Saves ckpt-<step> holding the value `step`, for each step, verified."""
  checkpoint, manager = _manager(model_dir, max_to_keep=max_to_keep)
  manager = checkpoint_integrity.verified(manager)
  for step in steps:
    checkpoint.v.assign(np.full([64], step, np.float32))
    manager.save(checkpoint_number=step)
  return manager


def _data(prefix):
  return prefix + ".data-00000-of-00001"


def _truncate(path):
  with open(path, "r+b") as f:
    f.truncate(os.path.getsize(path) // 2)


def _flip_a_value(prefix):
  """Changes one float of the tensor data, the file's size unchanged."""
  step = float(prefix.rsplit("-", 1)[1])
  with open(_data(prefix), "r+b") as f:
    at = f.read().index(np.full([64], step, np.float32).tobytes())
    f.seek(at)
    f.write(np.float32(-1).tobytes())


def test_each_save_gets_a_manifest_written_last_and_kept_with_its_checkpoint(
    tmp_path):
  model_dir = str(tmp_path)
  _save_steps(model_dir, [1, 2, 3], max_to_keep=2)
  names = sorted(os.listdir(model_dir))
  # max_to_keep removed ckpt-1 and, with it, its manifest.
  assert [n for n in names if n.endswith(".manifest.json")] == [
      "ckpt-2.manifest.json", "ckpt-3.manifest.json"]
  assert not [n for n in names if n.startswith("ckpt-1.")]
  for prefix in checkpoint_integrity.candidates(model_dir):
    manifest = checkpoint_integrity.read_manifest(prefix)
    assert sorted(manifest["files"]) == checkpoint_integrity.checkpoint_files(
        prefix)
    checkpoint_integrity.check(prefix)


@pytest.mark.parametrize("manifest", [True, False])
def test_a_truncated_or_altered_checkpoint_is_found_with_or_without_manifest(
    tmp_path, manifest):
  """With a manifest: by size and SHA-256; without (an older run's): every
  tensor is read, each checked against its CRC32C."""
  model_dir = str(tmp_path)
  _save_steps(model_dir, [1, 2])
  prefixes = {int(p.rsplit("-", 1)[1]): p
              for p in checkpoint_integrity.candidates(model_dir)}
  if not manifest:
    for prefix in prefixes.values():
      os.remove(prefix + checkpoint_integrity.MANIFEST_SUFFIX)
  _truncate(_data(prefixes[2]))
  _flip_a_value(prefixes[1])
  for prefix in prefixes.values():
    with pytest.raises(checkpoint_integrity.DamagedCheckpoint) as raised:
      checkpoint_integrity.check(prefix)
    assert "\n" not in str(raised.value)
  if manifest:
    assert "holds" in str(pytest.raises(
        checkpoint_integrity.DamagedCheckpoint, checkpoint_integrity.check,
        prefixes[2]).value)


def test_a_run_resumes_from_the_newest_checkpoint_that_reads(tmp_path):
  model_dir = str(tmp_path)
  _save_steps(model_dir, [1, 2, 3])
  ckpt = lambda n: os.path.join(model_dir, f"ckpt-{n}")
  _truncate(_data(ckpt(3)))
  _flip_a_value(ckpt(2))
  damaged = {name: open(os.path.join(model_dir, name), "rb").read()
             for name in os.listdir(model_dir)
             if name.startswith(("ckpt-2.", "ckpt-3."))}
  checkpoint, manager = _manager(model_dir)
  lines = []
  restored = checkpoint_integrity.verified(manager, lines.append
                                           ).restore_or_initialize()
  assert restored == ckpt(1)
  np.testing.assert_array_equal(checkpoint.v.numpy(), np.full([64], 1.0))
  assert len(lines) == 1
  assert lines[0].startswith("Moved the damaged checkpoints ckpt-3 (")
  assert "ckpt-2 (ckpt-2.data-00000-of-00001 is altered" in lines[0]
  assert lines[0].endswith(f" of {model_dir} into {model_dir}/damaged/; "
                           "resuming from ckpt-1 (the steps after it are "
                           "trained again).")
  # Moved, byte for byte; the state file names ckpt-1, as does the manager.
  for name, data in damaged.items():
    assert open(os.path.join(model_dir, "damaged", name), "rb").read() == data
  assert tf.train.latest_checkpoint(model_dir) == ckpt(1)
  assert manager.latest_checkpoint == ckpt(1)
  assert manager.save(checkpoint_number=2) == ckpt(2)  # and training goes on

  # None that reads: one error; the files moved (ckpt-2's into damaged/2:
  # its names are taken in damaged/); the next run starts over.
  for n in (1, 2):
    _truncate(_data(ckpt(n)))
  _, manager = _manager(model_dir)
  with pytest.raises(checkpoint_integrity.NoReadableCheckpoint) as raised:
    checkpoint_integrity.verified(manager, lines.append
                                  ).restore_or_initialize()
  message = str(raised.value)
  assert "\n" not in message
  assert message.startswith(f"No checkpoint of {model_dir} reads: ckpt-2 (")
  assert message.endswith(f"; moved into {model_dir}/damaged/. Run the same "
                          "command again to start over from step 0.")
  assert sorted(os.listdir(os.path.join(model_dir, "damaged", "2"))) == [
      "ckpt-2.data-00000-of-00001", "ckpt-2.index", "ckpt-2.manifest.json"]
  assert "ckpt-1.index" in os.listdir(os.path.join(model_dir, "damaged"))
  assert tf.train.latest_checkpoint(model_dir) is None


def test_a_torn_write_is_found_at_once_and_the_previous_checkpoint_kept(
    tmp_path):
  model_dir = str(tmp_path)
  checkpoint, manager = _manager(model_dir)
  save = manager.save

  def torn_save(*args, **kwargs):  # a write the disk did not keep whole
    path = save(*args, **kwargs)
    if path.endswith("ckpt-2"):
      _truncate(_data(path))
    return path
  manager.save = torn_save
  manager = checkpoint_integrity.verified(manager)
  manager.save(checkpoint_number=1)
  with pytest.raises(fault_tolerance.CheckpointSaveError) as raised:
    manager.save(checkpoint_number=2)
  message = str(raised.value)
  assert "\n" not in message
  assert message.startswith(f"Saving a checkpoint in {model_dir} failed: "
                            "ckpt-2 did not read back as written (")
  assert message.endswith(f"it was moved into {model_dir}/damaged/. Check "
                          "the disk, then run the same command: it resumes "
                          "from ckpt-1.")
  assert tf.train.latest_checkpoint(model_dir).endswith("ckpt-1")
  assert sorted(os.listdir(os.path.join(model_dir, "damaged"))) == [
      "ckpt-2.data-00000-of-00001", "ckpt-2.index"]
  del checkpoint


def test_readers_skip_a_damaged_checkpoint_in_one_line_and_move_nothing(
    tmp_path, capsys):
  model_dir = str(tmp_path / "run")
  _save_steps(model_dir, [1, 2])
  _truncate(_data(os.path.join(model_dir, "ckpt-2")))
  names = sorted(os.listdir(model_dir))
  assert checkpoints.resolve(model_dir).endswith("ckpt-1")
  errors = capsys.readouterr().err.strip().splitlines()
  assert len(errors) == 1 and errors[0].startswith(
      "Skipping the damaged checkpoint ckpt-2 (ckpt-2.data-00000-of-00001 "
      f"holds ") and errors[0].endswith(
          f"of {model_dir}: reading ckpt-1, the newest checkpoint that reads.")
  assert sorted(os.listdir(model_dir)) == names
  # Named by the user: an error naming the newest that reads.
  with pytest.raises(checkpoint_integrity.DamagedCheckpoint) as raised:
    checkpoints.resolve(os.path.join(model_dir, "ckpt-2"), "--checkpoint")
  assert str(raised.value).endswith(
      "; the newest one of its directory that reads: "
      f"--checkpoint={model_dir}/ckpt-1.")


@pytest.mark.slow
def test_train_resumes_past_a_damaged_checkpoint_and_none_readable_exits_2(
    tiny_run, tmp_path, capsys, monkeypatch):
  """The fault tester's probe: the newest checkpoint's data cut in half, the
  same `train` again goes on from the one before; with every checkpoint
  damaged the command prints one line and exits 2."""
  from cmlm import __main__ as command_line  # pylint: disable=g-import-not-at-top
  from cmlm.training import stop_signals  # pylint: disable=g-import-not-at-top
  from cmlm.training import train  # pylint: disable=g-import-not-at-top
  model_dir = str(tmp_path / "run")
  shutil.copytree(tiny_run[0], model_dir)
  newest, older = checkpoint_integrity.candidates(model_dir)[:2]
  _truncate(_data(newest))
  result = train.run(helpers.tiny_run_params(4), model_dir)
  assert result.trainer.first_step_of_run == int(older.rsplit("-", 1)[1])
  assert "Moved the damaged checkpoint" in capsys.readouterr().err
  assert os.path.exists(os.path.join(model_dir, "damaged",
                                     os.path.basename(_data(newest))))
  checkpoint_integrity.check(tf.train.latest_checkpoint(model_dir))

  for prefix in checkpoint_integrity.candidates(model_dir):
    _truncate(_data(prefix))
  monkeypatch.setattr(stop_signals, "watch_for_second_interrupt",
                      lambda label: None)
  with pytest.raises(SystemExit) as exited:
    command_line.main(["cmlm", "train", "--experiment=cmlm/tiny",
                       f"--config_file={model_dir}/params.yaml",
                       f"--model_dir={model_dir}"])
  assert exited.value.code == 2
  errors = capsys.readouterr().err.strip().splitlines()
  assert [line for line in errors if line.startswith("cmlm train:")] == [
      errors[-1]]
  assert errors[-1].startswith(f"cmlm train: error: No checkpoint of "
                               f"{model_dir} reads: ")


def test_a_relative_run_directory_names_its_checkpoints_once(
    tmp_path, monkeypatch):
  """`--model_dir=runs/tiny` from the working directory (the README's
  road): the latest checkpoint is `runs/tiny/ckpt-N`, not the directory
  joined twice (which named no file, and export refused a good run)."""
  monkeypatch.chdir(tmp_path)
  os.makedirs(os.path.join("runs", "x"))
  manager = tf.train.CheckpointManager(
      tf.train.Checkpoint(v=tf.Variable(1.0)), os.path.join("runs", "x"),
      max_to_keep=3)
  manager.save()
  expected = os.path.join("runs", "x", "ckpt-1")
  assert checkpoint_integrity.candidates(os.path.join("runs", "x")) == [
      expected]
  assert checkpoint_integrity.newest_readable(
      os.path.join("runs", "x")) == expected
