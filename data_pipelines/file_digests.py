"""Files checked against what was written: each one's size and SHA-256.

    recorded = digests("exports/tiny/versions/4", ["encoder/saved_model.pb"])
    first_difference("exports/tiny/versions/4", recorded)  # None: as written

A writer records `{name: {"bytes": size, "sha256": hex}}` of what it wrote
(a checkpoint's manifest, `training/checkpoint_integrity.py`; an artifact's
`artifact.json`, an export's `checksums.json`, `export/`); a reader compares
before it trusts the files: a truncated, altered or missing file is named
in words. Plain Python (no TensorFlow: the artifacts' runtime uses it);
`opener` and `size_of` reach other file systems (`tf.io.gfile`).
"""
import hashlib
import os
from typing import Callable, Dict, Iterable, Optional

_CHUNK = 1 << 20


def file_digest(path: str, opener: Callable = open) -> dict:
  """`{"bytes": size, "sha256": hex}` of the file at `path`.

  Examples:
    >>> file_digest("vocab.txt")
    {'bytes': 213, 'sha256': '9f86d0...'}
  """
  digest, size = hashlib.sha256(), 0
  with opener(path, "rb") as f:
    while True:
      chunk = f.read(_CHUNK)
      if not chunk:
        break
      digest.update(chunk)
      size += len(chunk)
  return {"bytes": size, "sha256": digest.hexdigest()}


def digests(directory: str, names: Iterable[str],
            opener: Callable = open) -> Dict[str, dict]:
  """`{name: file_digest}` of the files `names` (paths under `directory`).

  Examples:
    >>> digests("exports/tiny/tflite", ["model.tflite", "vocab.txt"])
  """
  return {name: file_digest(os.path.join(directory, name), opener)
          for name in sorted(names)}


def first_difference(directory: str, recorded: Dict[str, dict],
                     opener: Callable = open,
                     size_of: Callable[[str], int] = os.path.getsize
                     ) -> Optional[str]:
  """The first file under `directory` that differs from `recorded` (missing,
  another size, another SHA-256; a record without "sha256" is checked by
  size alone), said in words; None when all are as written.

  Examples:
    >>> first_difference("exports/tiny/onnx", {"model.onnx": {"bytes": 9}})
    'model.onnx holds 4 bytes where 9 were written'
  """
  for name, expected in sorted(recorded.items()):
    path = os.path.join(directory, name)
    try:
      size = size_of(path)
    except OSError:
      return f"{name} is missing"
    if size != expected.get("bytes", size):
      return f"{name} holds {size} bytes where {expected['bytes']} were written"
    if expected.get("sha256") and (
        file_digest(path, opener)["sha256"] != expected["sha256"]):
      return (f"{name} is altered (its SHA-256 is not the one recorded when "
              "it was written)")
  return None
