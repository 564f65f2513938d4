"""Export and encode refuse bad input clearly and never leave half an output."""
import errno
import gc
import logging
import os
import shutil
import signal
import stat
import subprocess
import sys
import time

import numpy as np
import pytest

import cmlm.export  # noqa: F401  (Keras 2 before TensorFlow loads)
import tensorflow as tf

from cmlm.training import atomic
from cmlm.training import checkpoint_integrity
from cmlm.inference import embedders
from cmlm.export import exporter
from cmlm.export import preprocessor as preprocessor_lib
from cmlm.inference import text_inputs
from tests import helpers
from tests.export import export_helpers as export_helpers

pytestmark = pytest.mark.slow


def _copy_run(tiny, tmp_path, with_checkpoints=True):
  """A copy of the trained run's model_dir that a test may damage."""
  model_dir = tmp_path / "model"
  model_dir.mkdir()
  for name in os.listdir(tiny.model_dir):
    source = os.path.join(tiny.model_dir, name)
    if os.path.isfile(source) and (with_checkpoints or name == "params.yaml"):
      shutil.copy(source, model_dir / name)
  return str(model_dir)


def _leftovers(directory):
  return sorted(os.listdir(directory)) if os.path.exists(directory) else None


def test_missing_params_or_checkpoint_is_a_clear_error(tiny, tmp_path):
  export_dir = str(tmp_path / "export")
  with pytest.raises(FileNotFoundError, match="params.yaml does not exist"):
    exporter.export_run(str(tmp_path), export_dir)
  model_dir = _copy_run(tiny, tmp_path, with_checkpoints=False)
  with pytest.raises(FileNotFoundError, match="No checkpoint in"):
    exporter.export_run(model_dir, export_dir)
  with pytest.raises(FileNotFoundError, match="ckpt-999 does not exist"):
    exporter.export_run(model_dir, export_dir,
                        checkpoint=os.path.join(model_dir, "ckpt-999"))
  assert _leftovers(export_dir) is None


def _damage(prefix, damage):
  if damage == "truncated data":
    path = prefix + ".data-00000-of-00001"
    with open(path, "r+b") as f:
      f.truncate(os.path.getsize(path) // 2)
  else:
    with open(prefix + ".index", "wb") as f:
      f.write(b"not a checkpoint index" * 10)


@pytest.mark.parametrize("damage", ["truncated data", "garbage index"])
def test_a_damaged_checkpoint_is_skipped_and_none_readable_writes_nothing(
    tiny, tmp_path, capsys, damage):
  """The newest checkpoint damaged: export reads the older one, saying so in
  one line, and moves nothing (a reader does not own the run). All of them
  damaged: one clear error, nothing written."""
  model_dir = _copy_run(tiny, tmp_path)
  newest = tf.train.latest_checkpoint(model_dir)
  older = checkpoint_integrity.candidates(model_dir)[1]
  assert older != newest
  _damage(newest, damage)
  files = sorted(os.listdir(model_dir))
  export_dir = str(tmp_path / "export")
  if damage == "truncated data":
    result = exporter.export_run(model_dir, export_dir, write_card=False)
    assert result.checkpoint_path == older
    skipped = [line for line in capsys.readouterr().err.splitlines()
               if line.startswith("Skipping the damaged checkpoint")]
    assert len(skipped) == 1
    assert os.path.basename(newest) in skipped[0]
    assert f"reading {os.path.basename(older)}" in skipped[0]
    assert sorted(os.listdir(model_dir)) == files
    return
  for prefix in checkpoint_integrity.candidates(model_dir):
    _damage(prefix, damage)
  with pytest.raises(checkpoint_integrity.NoReadableCheckpoint,
                     match=f"No checkpoint of {model_dir} reads: "):
    exporter.export_run(model_dir, export_dir)
  assert _leftovers(export_dir) is None
  assert sorted(os.listdir(model_dir)) == files


def test_checkpoint_of_another_model_is_refused(tiny, tmp_path):
  model_dir = _copy_run(tiny, tmp_path)
  params_path = os.path.join(model_dir, "params.yaml")
  with open(params_path) as f:
    params = f.read()
  with open(params_path, "w") as f:
    f.write(params.replace("intermediate_size: 32", "intermediate_size: 48"))
  warnings = []
  logger = logging.getLogger("tensorflow")
  handler = logging.Handler(logging.WARNING)
  handler.emit = warnings.append
  logger.addHandler(handler)
  try:
    with pytest.raises(ValueError,
                       match="cannot be read as this run.s encoder"):
      exporter.export_run(model_dir, str(tmp_path / "export"))
    # The restore it stopped in is dropped with the error (at exit, after
    # the error line, in a command) without TensorFlow's ~100 lines
    # naming each value it left unread.
    gc.collect()
  finally:
    logger.removeHandler(handler)
  assert not [r.getMessage() for r in warnings
              if "could not be found" in r.getMessage()]


def test_a_failure_while_writing_leaves_nothing_behind(
    tiny, tmp_path, monkeypatch):
  def fail(*args, **kwargs):
    raise RuntimeError("disk full")
  # The encoder is written by then; it must go too.
  monkeypatch.setattr(preprocessor_lib, "save_preprocessor", fail)
  export_dir = str(tmp_path / "export")
  with pytest.raises(RuntimeError, match="disk full"):
    exporter.export_run(tiny.model_dir, export_dir)
  assert _leftovers(export_dir) is None
  assert os.listdir(tmp_path) == []


def test_existing_versions_are_kept_unless_overwrite(tiny, tmp_path):
  export_dir = str(tmp_path / "export")
  shutil.copytree(tiny.result.export_dir, export_dir)
  first = tiny.result
  saved = os.path.join(export_dir, "encoder", "saved_model.pb")
  stamp = os.stat(saved).st_mtime_ns
  with pytest.raises(FileExistsError, match="--overwrite"):
    exporter.export_run(tiny.model_dir, export_dir)
  assert os.stat(saved).st_mtime_ns == stamp
  second = exporter.export_run(tiny.model_dir, export_dir, version=7,
                               checkpoint=first.checkpoint_path,
                               overwrite=True, normalize=False)
  assert os.stat(saved).st_mtime_ns != stamp
  assert sorted(os.listdir(export_dir)) == ["README.md", "current",
                                            "encoder", "preprocessor",
                                            "serving", "versions"]
  assert sorted(os.listdir(os.path.join(export_dir, "serving"))) == [
      str(first.step), "7"]
  # The highest version wins, and it is not normalised.
  embeddings = embedders.load_embedder(os.path.join(export_dir, "serving"))(
      export_helpers.SENTENCES)
  np.testing.assert_allclose(
      embeddings, tiny.in_memory_embeddings(export_helpers.SENTENCES),
      atol=1e-5, rtol=0)
  assert second.serving_dir.endswith(os.path.join("serving", "7"))


def test_atomic_directory_refuses_to_replace_a_file(tmp_path):
  (tmp_path / "taken").write_text("x")
  with pytest.raises(FileExistsError, match="not a directory"):
    with atomic.atomic_directory(str(tmp_path / "taken"), overwrite=True):
      pass


@pytest.mark.parametrize("umask,mode", [(0o022, 0o755), (0o077, 0o700)])
def test_atomic_directory_gets_the_mode_the_umask_gives(tmp_path, umask,
                                                        mode):
  # mkdtemp makes 0700; a published version must be readable by a server
  # running as another user when the umask allows it.
  previous = os.umask(umask)
  try:
    with atomic.atomic_directory(str(tmp_path / "models" / "1")) as temporary:
      open(os.path.join(temporary, "saved_model.pb"), "wb").close()
  finally:
    os.umask(previous)
  assert stat.S_IMODE(os.stat(tmp_path / "models" / "1").st_mode) == mode


@pytest.mark.parametrize("content, fault", [
    ("task:\n  model: [1, 2\n  seed: 3\n", "is not valid YAML at line 3, "
     "column 7: expected ',' or ']', but got ':'."),
    ("", "is empty: it holds no config (train writes the run's whole config "
     "there)."),
])
def test_cli_reports_a_params_yaml_that_does_not_read_in_one_line(
    tmp_path, capsys, content, fault):
  params_path = tmp_path / "params.yaml"
  params_path.write_text(content)
  status, stderr = helpers.run_command(
      ["export", f"--model_dir={tmp_path}",
       f"--export_dir={tmp_path / 'export'}"], capsys)
  assert (status, stderr) == (2, [f"cmlm export: error: {params_path} {fault}"])
  assert not (tmp_path / "export").exists()


def test_cli_reports_a_missing_checkpoint_in_one_line(tmp_path, capsys):
  (tmp_path / "params.yaml").write_text("task: {}\n")
  status, stderr = helpers.run_command(
      ["export", f"--model_dir={tmp_path}",
       f"--export_dir={tmp_path / 'export'}"], capsys)
  assert status == 2
  errors = [line for line in stderr
            if line.startswith("cmlm export: error:")]
  assert errors == [f"cmlm export: error: No checkpoint in {tmp_path}: train "
                    "first, or name one with --checkpoint=PATH/ckpt-N."]
  assert not (tmp_path / "export").exists()


def test_encode_rejects_what_is_not_a_model_or_a_text_file(tiny, tmp_path):
  with pytest.raises(FileNotFoundError, match="holds no SavedModel"):
    embedders.load_embedder(str(tmp_path))
  (tmp_path / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
  with pytest.raises(ValueError, match="not UTF-8 text \\(line 1\\)"):
    text_inputs.read_input(str(tmp_path / "latin1.txt"))
  (tmp_path / "empty.txt").write_text("")
  with pytest.raises(ValueError, match="holds no sentence"):
    text_inputs.read_input(str(tmp_path / "empty.txt"))


def test_an_export_dir_that_is_a_file_and_an_output_that_is_a_directory(
    tiny, tmp_path, monkeypatch):
  """Refused first, in words that fit: a regular file is no export
  directory (before the checkpoint is even read), a directory is no
  --output (not "pass --overwrite", which would not replace it)."""
  from cmlm.inference import embedding_outputs  # pylint: disable=g-import-not-at-top
  target = tmp_path / "a_file"
  target.write_text("mine")

  def no_work(*args, **kwargs):
    raise AssertionError("the run was read before the target was checked")
  monkeypatch.setattr(exporter.run_dir, "load_params", no_work)
  with pytest.raises(FileExistsError, match=r"--export_dir=.*a_file is a "
                     "file, not a directory"):
    exporter.export_run(tiny.model_dir, str(target))
  assert target.read_text() == "mine"
  (tmp_path / "e.npy").mkdir()
  for directory in (tmp_path, tmp_path / "e.npy"):
    for overwrite in (False, True):
      with pytest.raises(ValueError, match=r"--output=.* is a directory; "
                         "name a file"):
        embedding_outputs.check_output(str(directory), overwrite=overwrite)


def test_ctrl_c_during_an_export_removes_it_publishes_nothing_exits_130(
    tiny, tmp_path):
  """SIGINT while the SavedModels are written: the temporary version is
  removed, nothing is published, one line, status 130 (SIGTERM's twin)."""
  export_dir = tmp_path / "export"
  process = subprocess.Popen(
      [sys.executable, "-m", "cmlm", "export", f"--model_dir={tiny.model_dir}",
       f"--export_dir={export_dir}"], cwd=export_helpers.REPO_ROOT,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), stdout=subprocess.PIPE,
      stderr=subprocess.PIPE, text=True)
  versions = export_dir / "versions"
  deadline = time.time() + 120
  while not (versions.is_dir() and any(name.startswith(".tmp-")
                                       for name in os.listdir(versions))):
    assert process.poll() is None and time.time() < deadline, (
        process.communicate()[1][-2000:])
    time.sleep(0.005)
  process.send_signal(signal.SIGINT)
  _, errors = process.communicate(timeout=120)
  assert process.returncode == 130, errors[-2000:]
  assert "Traceback" not in errors
  assert errors.strip().splitlines()[-1] == (
      "cmlm export: stopped by SIGINT (Ctrl-C); what it was writing was "
      "removed.")
  left = os.listdir(export_dir) if export_dir.exists() else []
  assert [name for name in left if name != ".cmlm-export.lock"] == []


@pytest.mark.parametrize("failure", [errno.ENOSPC, errno.EROFS])
def test_a_full_or_read_only_disk_is_one_line_and_publishes_nothing(
    tiny, tmp_path, monkeypatch, capsys, failure):
  """The disk refuses a write in the middle of an export's SavedModels and of
  encode's --output: one line, status 2, nothing half-written or
  published (the commands through `python -m cmlm`'s own `main`)."""
  from cmlm import __main__ as command_line  # pylint: disable=g-import-not-at-top
  from cmlm.inference import embedding_outputs  # pylint: disable=g-import-not-at-top
  from cmlm.export import serving  # pylint: disable=g-import-not-at-top
  from cmlm.training import stop_signals  # pylint: disable=g-import-not-at-top
  monkeypatch.setattr(stop_signals, "watch_for_second_interrupt",
                      lambda label: None)  # not this test process's business

  def refuse(path, *args, **kwargs):
    del args, kwargs
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "saved_model.pb"), "wb") as f:
      f.write(b"half")
    raise OSError(failure, os.strerror(failure), path)
  monkeypatch.setattr(serving, "export_text_embedding", refuse)
  export_dir = tmp_path / "export"
  with pytest.raises(SystemExit) as exited:
    command_line.main(["cmlm", "export", f"--model_dir={tiny.model_dir}",
                       f"--export_dir={export_dir}"])
  assert exited.value.code == 2
  line = capsys.readouterr().err.strip().splitlines()[-1]
  assert line.startswith("cmlm export: error: cannot write ")
  assert line.endswith(f": {os.strerror(failure)}. Nothing was published: "
                       "what was being written was removed.")
  left = [os.path.join(root, name) for root, _, names in os.walk(export_dir)
          for name in names if name != ".cmlm-export.lock"]
  assert left == []

  write_rows = embedding_outputs._NpyWriter._append  # pylint: disable=protected-access

  def write_half_then_refuse(writer, embeddings, sentences):
    write_rows(writer, embeddings[:1], sentences[:1])
    raise OSError(failure, os.strerror(failure), writer.path)
  monkeypatch.setattr(embedding_outputs._NpyWriter, "_append",  # pylint: disable=protected-access
                      write_half_then_refuse)
  source = tmp_path / "in.txt"
  source.write_text("\n".join(export_helpers.SENTENCES), encoding="utf-8")
  out = tmp_path / "out"
  out.mkdir()
  with pytest.raises(SystemExit) as exited:
    command_line.main(["cmlm", "encode", f"--model={tiny.model_dir}",
                       f"--input={source}", f"--output={out / 'e.npy'}"])
  assert exited.value.code == 2
  line = capsys.readouterr().err.strip().splitlines()[-1]
  assert line.startswith("cmlm encode: error: cannot write ")
  assert os.listdir(out) == []
