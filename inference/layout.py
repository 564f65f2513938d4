"""What an export looks like to a reader: its layout and its signatures.

The contract between the writers (`export.publish`, `export.serving`) and
the readers (`inference.embedders`, the packaging, `cmlm.mteb_model`):
the names of an export's parts, the `current` pointer a reader resolves
once, the `export_info.json` every SavedModel carries, and the serving
model's signature. `export.publish` describes the whole layout.
"""
import json
import os
from typing import Optional

VERSIONS_DIR = "versions"
CURRENT = "current"
PARTS = ("encoder", "preprocessor", "serving")
# Written only with `--formats` (export.artifacts,
# export.sentence_transformers_folder); not SavedModels.
ARTIFACT_PARTS = ("tflite", "onnx", "sentence_transformers")
ARTIFACT_INFO_FILE = "export_info.json"
CARD_FILE = "README.md"
INFO_FILE = os.path.join("assets.extra", "export_info.json")

# The text-to-embedding serving model (export/serving.py): its signature,
# its input and output, and the variable that records its normalisation.
SIGNATURE_NAME = "serving_default"
INPUT_NAME = "sentences"
OUTPUT_NAME = "embedding"
NORMALIZED_VARIABLE = "l2_normalized"


def resolve(export_dir: str) -> str:
  """The directory of the published export: `current`'s target, resolved
  once, or `export_dir` itself for an export of the older flat layout.

  Examples:
    >>> version_dir = resolve("exports/tiny")  # exports/tiny/versions/20
  """
  current = os.path.join(export_dir, CURRENT)
  return os.path.realpath(current) if os.path.islink(current) else export_dir


def read_json_object(path: str) -> Optional[dict]:
  """The JSON object in the file at `path`; None when it is missing,
  unreadable or not an object (a reader then goes on without it).

  Examples:
    >>> read_json_object("runs/tiny/import_info.json")  # None: not imported
  """
  try:
    with open(path, encoding="utf-8") as f:
      value = json.load(f)
  except (OSError, ValueError):
    return None
  return value if isinstance(value, dict) else None


def read_info(saved_model_dir: str) -> Optional[dict]:
  """The `export_info.json` of a SavedModel of an export, or None.

  Examples:
    >>> read_info(os.path.join(resolve("exports/tiny"), "encoder"))["step"]
  """
  try:
    with open(os.path.join(saved_model_dir, INFO_FILE)) as f:
      return json.load(f)
  except FileNotFoundError:
    return None
