"""What an evaluation report records so that its figures can be reproduced.

    environment()               tool and library versions, the garden's commit
    file_checksums(paths)       {path: {"sha256", "bytes"}} of the data read
    subsample(max_examples)     whether (and how) examples were subsampled

`evaluation/runner.py` puts these into `report.json` beside the command
line, so two reports can be compared knowing whether code, libraries or
data differed.
"""
import hashlib
import importlib.metadata
import os
import platform
import subprocess
import sys
from typing import Dict, Iterable, Optional

# Distributions whose versions change the figures.
LIBRARIES = ("tensorflow", "tf-keras", "tensorflow-text", "tensorflow-hub",
             "tf-models-official", "numpy", "scipy", "scikit-learn")
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GARDEN_DISTRIBUTION = "cmlm"
_CHUNK = 1 << 20


def _version(distribution: str) -> Optional[str]:
  try:
    return importlib.metadata.version(distribution)
  except importlib.metadata.PackageNotFoundError:
    return None


def _git(*args: str) -> Optional[str]:
  try:
    completed = subprocess.run(["git", *args], cwd=REPO_ROOT, text=True,
                               capture_output=True, timeout=10, check=False)
  except (OSError, subprocess.SubprocessError):
    return None
  return completed.stdout.strip() if completed.returncode == 0 else None


def environment() -> Dict:
  """The garden's version and commit, Python, platform, library versions."""
  commit = _git("rev-parse", "HEAD")
  dirty = None
  if commit:
    status = _git("status", "--porcelain", "--untracked-files=no")
    dirty = bool(status) if status is not None else None
  return {
      "cmlm": _version(GARDEN_DISTRIBUTION),
      "git_commit": commit,
      "git_dirty": dirty,
      "python": platform.python_version(),
      "platform": platform.platform(),
      "libraries": {name: _version(name) for name in LIBRARIES},
  }


def sha256_of(path: str) -> str:
  digest = hashlib.sha256()
  with open(path, "rb") as f:
    for chunk in iter(lambda: f.read(_CHUNK), b""):
      digest.update(chunk)
  return digest.hexdigest()


def file_checksums(paths: Iterable[str]) -> Dict[str, Dict]:
  """`{path: {"sha256": hex, "bytes": size}}` of each file (sorted, once)."""
  checksums = {}
  for path in sorted(set(paths)):
    if os.path.isfile(path):
      checksums[path] = {"sha256": sha256_of(path),
                         "bytes": os.path.getsize(path)}
  return checksums


def subsample(max_examples: Optional[int], seed: int = 0) -> Optional[Dict]:
  """None when every example was used, else how they were drawn
  (`evaluation.task_data.limit`: a fixed random subset per split)."""
  if not max_examples:
    return None
  return {"max_examples_per_split": max_examples, "seed": seed}


def command_line(argv=None) -> str:
  """The command that ran, as a shell line (`sys.argv` by default)."""
  import shlex  # pylint: disable=g-import-not-at-top
  return " ".join(shlex.quote(a) for a in (sys.argv if argv is None
                                           else argv))
