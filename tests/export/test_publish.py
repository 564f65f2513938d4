"""An export is published whole: readers never see a mix of two or a gap.

Reader threads load the export directory in a loop (resolving `current`
once, as `encode` and `eval` do) while `--overwrite` exports run into it:
every load must find the encoder, the preprocessor and the serving model of
one and the same export (their `export_info.json` ids agree) and
`EXPORT_DIR/encoder` must never be missing. First with `publish_export`
writing small stand-in directories, hundreds of times; then with real
exports of two checkpoints, where each load's embedding must be its
checkpoint's. A killed export's hidden leftovers are removed by the next.
"""
import json
import os
import threading

import numpy as np
import pytest

import cmlm.export  # noqa: F401  (Keras 2 before TensorFlow loads)
import tensorflow as tf

from cmlm.export import exporter
from cmlm.export import publish
from cmlm.inference import embedders
from cmlm.inference import layout

SENTENCE = ["The whole export changes at once."]


def _read_loop(export_dir, stop, seen, errors):
  """Loads the export until `stop`; records (step, embedding) per load."""
  while not stop.is_set():
    try:
      if not os.path.isfile(os.path.join(export_dir, "encoder",
                                         "saved_model.pb")):
        errors.append("EXPORT_DIR/encoder was missing")
      version = layout.resolve(export_dir)
      infos = [layout.read_info(os.path.join(version, part))
               for part in layout.PARTS]
      if None in infos or len({info["id"] for info in infos}) != 1:
        errors.append(f"a mix of exports in {version}: {infos}")
        continue
      embedding = embedders.load_embedder(export_dir)(SENTENCE)
      seen.append((infos[0]["step"], infos[0]["id"], embedding))
    except Exception as error:  # pylint: disable=broad-except
      errors.append(f"{type(error).__name__}: {error}")


def _stand_in(directory):
  """Writes what an export writes, as small files (one per part)."""
  for part in layout.PARTS:
    os.makedirs(os.path.join(directory, part))
    with open(os.path.join(directory, part, "saved_model.pb"), "wb") as f:
      f.write(os.urandom(4096))


def _check_loop(export_dir, stop, errors, loads):
  while not stop.is_set():
    if not os.path.isfile(os.path.join(export_dir, "encoder",
                                       "saved_model.pb")):
      errors.append("EXPORT_DIR/encoder was missing")
    version = layout.resolve(export_dir)
    try:
      infos = [layout.read_info(os.path.join(version, part))
               for part in layout.PARTS]
      serving = layout.read_info(os.path.join(export_dir, "serving", "1"))
    except (OSError, ValueError) as error:
      errors.append(f"{type(error).__name__}: {error}")
      continue
    if None in infos or len({info["id"] for info in infos}) != 1:
      errors.append(f"a mix of exports in {version}: {infos}")
    if serving is None:
      errors.append("serving/1 was missing")
    loads.append(1)


def test_publish_export_is_seen_whole_by_readers_in_a_loop(tmp_path):
  export_dir = str(tmp_path / "export")
  publish.publish_export(export_dir, 1, False, _stand_in, {"id": "first"})
  killed = [os.path.join(export_dir, "versions", ".tmp-1-killed"),
            os.path.join(export_dir, ".tmp-encoder-killed")]
  for path in killed:  # what a killed export leaves
    os.makedirs(path)
  stop, errors, loads = threading.Event(), [], []
  readers = [threading.Thread(target=_check_loop,
                              args=(export_dir, stop, errors, loads))
             for _ in range(2)]
  for reader in readers:
    reader.start()
  try:
    for round_ in range(150):
      publish.publish_export(
          export_dir, 1, True, _stand_in, {"id": f"round {round_}"},
          [os.path.join(export_dir, "encoder")])
  finally:
    stop.set()
    for reader in readers:
      reader.join()
  assert not errors, errors[:3]
  assert len(loads) > 100
  assert not any(os.path.exists(path) for path in killed)
  info = layout.read_info(os.path.join(export_dir, "encoder"))
  assert info["id"] == "round 149" and info["version_name"] == "1.150"
  # Replaced versions are kept for readers still loading them, then pruned.
  assert len(os.listdir(os.path.join(export_dir, "versions"))) == 151
  publish.prune(export_dir, after_s=0)
  assert os.listdir(os.path.join(export_dir, "versions")) == ["1.150"]
  # Without --overwrite, a published export is refused and left as it was.
  with pytest.raises(FileExistsError, match="--overwrite"):
    publish.publish_export(export_dir, 1, False, _stand_in, {"id": "x"},
                           [os.path.join(export_dir, "encoder")])
  assert layout.read_info(os.path.join(export_dir, "encoder"))["id"] == (
      "round 149")


def test_export_info_names_the_checkpoint_in_the_run_not_its_path(tmp_path):
  """export_info.json travels inside every SavedModel and package: it names
  the checkpoint as the run does (`ckpt-N`), never by this machine's path."""
  info = publish.new_info(str(tmp_path / "runs" / "tiny" / "ckpt-20"), 20,
                          model_name="tiny", license="mit")
  assert (info["checkpoint"], info["step"], info["model_name"],
          info["license"]) == ("ckpt-20", 20, "tiny", "mit")
  assert str(tmp_path) not in json.dumps(info)
  export_dir = str(tmp_path / "export")
  publish.publish_export(export_dir, 20, False, _stand_in, info)
  for part in layout.PARTS:
    written = layout.read_info(os.path.join(export_dir, "current", part))
    assert written == dict(info, version_name="20")


@pytest.mark.slow
def test_overwrite_exports_are_seen_whole_by_a_reader_in_a_loop(
    tiny_run, tmp_path):
  model_dir = tiny_run[0]
  checkpoints = [os.path.join(model_dir, "ckpt-2"),
                 os.path.join(model_dir, "ckpt-4")]
  export_dir = str(tmp_path / "export")
  first = exporter.export_run(model_dir, export_dir, checkpoint=checkpoints[0],
                              version=1)
  # What a killed export leaves: hidden temporary directories.
  leftovers = [os.path.join(export_dir, "versions", ".tmp-1-killed"),
               os.path.join(export_dir, ".tmp-encoder-killed")]
  for path in leftovers:
    os.makedirs(path)
    with open(os.path.join(path, "variables.data"), "wb") as f:
      f.write(b"\0" * 1024)

  stop, seen, errors = threading.Event(), [], []
  reader = threading.Thread(target=_read_loop,
                            args=(export_dir, stop, seen, errors))
  reader.start()
  try:
    exporter.export_run(model_dir, export_dir, checkpoint=checkpoints[1],
                        version=1, overwrite=True)
  finally:
    stop.set()
    reader.join()
  assert not errors, errors[:3]
  assert seen
  # Each load's embedding is its export's checkpoint's, and the two differ.
  by_step = {}
  for step, _, embedding in seen:
    by_step.setdefault(step, []).append(embedding)
  for step, embeddings in by_step.items():
    for embedding in embeddings[1:]:
      np.testing.assert_allclose(embedding, embeddings[0], atol=1e-6)
  if len(by_step) == 2:  # the checkpoints' embeddings tell them apart
    assert not np.allclose(by_step[2][0], by_step[4][0], atol=1e-6)
  assert not any(os.path.exists(path) for path in leftovers)
  # The layout: symlinks through `current` into the published version,
  # TF Serving's base path with one version; the replaced version is kept
  # for readers still loading it.
  assert os.path.realpath(os.path.join(export_dir, "encoder")) == (
      os.path.join(layout.resolve(export_dir), "encoder"))
  assert os.listdir(os.path.join(export_dir, "serving")) == ["1"]
  assert sorted(os.listdir(os.path.join(export_dir, "versions"))) == [
      "1", "1.1"]
  assert not os.path.exists(os.path.join(export_dir, publish.LOCK_FILE_NAME))
  loaded = tf.saved_model.load(os.path.join(export_dir, "serving", "1"))
  assert "serving_default" in loaded.signatures
  assert first.version_dir.endswith(os.path.join("versions", "1"))
