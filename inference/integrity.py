"""An export's files checked before they are used, and named when they fail.

`export` records what it wrote: each artifact's `artifact.json` the size and
SHA-256 of its models and vocabulary (`export.artifacts`), and each version
`checksums.json`, those of every file of its SavedModels
(`export.publish`). A reader compares the files it is about to load with
that record, and turns a file that a runtime cannot load into the same
error: one line (`DamagedModel`, a ValueError) naming the file and the
`export` command that writes it again.

    check_saved_model("exports/tiny/encoder")     # the files of one part
    with loading("exports/tiny/encoder"):         # a load error, in words
      tf.saved_model.load("exports/tiny/encoder")

An export written before these records is loaded unchecked; its load
errors are still named. Plain Python (the artifacts' runtime imports it
without TensorFlow).
"""
import contextlib
import json
import os
from typing import Dict, Iterator, Optional, Sequence

from cmlm.data_pipelines import file_digests
from cmlm.inference import layout

CHECKSUMS_FILE = "checksums.json"


class DamagedModel(ValueError):
  """A file of an export does not read as it was written, or does not load."""

  def __init__(self, path: str, reason: str, version_dir: Optional[str]):
    again = (f"; write it again: {export_command(version_dir)}"
             if version_dir else "")
    super().__init__(f"{path} is damaged: {reason}{again}")
    self.path = path


def version_of(path: str) -> Optional[str]:
  """The export version directory (`versions/<name>`) holding the part or
  artifact at `path`, or None when `path` is not in one."""
  parent = os.path.dirname(os.path.realpath(path.rstrip("/")))
  if os.path.basename(os.path.dirname(parent)) == layout.VERSIONS_DIR:
    return parent
  return None


def export_command(version_dir: str) -> str:
  """The `export` command that writes `version_dir` again (its checkpoint
  from `export_info.json`, the formats it holds; RUN is the training run
  it came from, which an export does not record)."""
  info = {}
  for part in layout.PARTS + layout.ARTIFACT_PARTS:
    info = layout.read_info(os.path.join(version_dir, part)) or layout.read_json_object(
        os.path.join(version_dir, part, layout.ARTIFACT_INFO_FILE)) or {}
    if info:
      break
  export_dir = os.path.dirname(os.path.dirname(version_dir))
  formats = ["saved_model"] + [part for part in layout.ARTIFACT_PARTS
                               if os.path.isdir(os.path.join(version_dir,
                                                             part))]
  checkpoint = info.get("checkpoint", "ckpt-N")
  return (f"python -m cmlm export --model_dir=RUN --checkpoint=RUN/"
          f"{checkpoint} --export_dir={export_dir} --formats="
          f"{','.join(formats)} --overwrite (RUN: the training run it was "
          "exported from)")


def write_checksums(version_dir: str) -> Dict[str, dict]:
  """Writes `version_dir/checksums.json`: the size and SHA-256 of every
  file under it (before it is published). Returns the record.

  Examples:
    >>> write_checksums("exports/tiny/versions/.tmp-4-x")["encoder/saved_model.pb"]
    {'bytes': 80211, 'sha256': '...'}
  """
  names = [os.path.relpath(os.path.join(root, name), version_dir)
           for root, _, files in os.walk(version_dir) for name in files
           if not (root == version_dir and name == CHECKSUMS_FILE)]
  record = file_digests.digests(version_dir, names)
  with open(os.path.join(version_dir, CHECKSUMS_FILE), "w",
            encoding="utf-8") as f:
    json.dump({"files": record}, f, indent=1)
  return record


def check_saved_model(path: str) -> None:
  """`DamagedModel` when a file of the SavedModel at `path` (a part of an
  export version: `encoder/`, `preprocessor/`, `serving/`) differs from its
  version's `checksums.json`; nothing to check outside an export.

  Examples:
    >>> check_saved_model("exports/tiny/encoder")
  """
  version_dir = version_of(path)
  if version_dir is None:
    return
  record = layout.read_json_object(os.path.join(version_dir, CHECKSUMS_FILE))
  if not record or not isinstance(record.get("files"), dict):
    return
  part = os.path.basename(os.path.realpath(path.rstrip("/")))
  files = {name[len(part) + 1:]: digest
           for name, digest in record["files"].items()
           if name.startswith(part + "/")}
  difference = file_digests.first_difference(
      os.path.join(version_dir, part), files)
  if difference:
    raise DamagedModel(os.path.join(path, _first_word(difference)),
                       difference, version_dir)


def check_artifact(directory: str, manifest: dict,
                   precisions: Sequence[str]) -> None:
  """`DamagedModel` when the model files of `precisions` (float32, int8)
  or the vocabulary of the artifact in `directory` differ from what its
  `artifact.json` (`manifest`) records: the size always, the SHA-256 when
  recorded.

  Examples:
    >>> check_artifact("exports/tiny/onnx", manifest, ["int8"])
  """
  sizes = manifest.get("bytes") or {}
  hashes = manifest.get("sha256") or {}
  recorded = {}
  for precision in precisions:
    name = manifest["files"][precision]
    recorded[name] = dict(bytes=sizes.get(precision), sha256=hashes.get(name))
  vocab = manifest.get("vocab_file")
  if vocab and hashes.get(vocab):
    recorded[vocab] = dict(sha256=hashes[vocab])
  recorded = {name: {key: value for key, value in digest.items()
                     if value is not None}
              for name, digest in recorded.items()}
  difference = file_digests.first_difference(directory, recorded)
  if difference:
    raise DamagedModel(os.path.join(directory, _first_word(difference)),
                       difference, version_of(directory))


def _first_word(difference: str) -> str:
  return difference.split(" ", 1)[0]


@contextlib.contextmanager
def loading(path: str, what: str = "SavedModel") -> Iterator[None]:
  """Turns an error of the body (loading `path`) into `DamagedModel`.

  Any error: a runtime that cannot read a file raises its own kinds
  (protobuf's DecodeError, onnxruntime's InvalidProtobuf, TensorFlow's
  DataLossError, TFLite's ValueError), all of which mean the file does
  not load. A missing runtime (ImportError) passes through.

  Examples:
    >>> with loading("exports/tiny/onnx/model.onnx", "ONNX model"):
    ...   session = onnxruntime.InferenceSession("exports/tiny/onnx/model.onnx")
  """
  try:
    yield
  except (ImportError, DamagedModel):
    raise
  except Exception as error:  # pylint: disable=broad-except
    text = str(getattr(error, "message", "") or error).strip()
    reason = (text.splitlines() or [type(error).__name__])[0][:300]
    raise DamagedModel(path, f"the {what} does not load ({reason})",
                       version_of(path)) from None
