"""Options shared by the tasks, and locating and trimming their data."""
import dataclasses
import glob
import os
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from cmlm.evaluation import text_files

# SentEval's pairs of class files: (label 1, label 0), as SentEval labels them.
POLARITY_PATTERNS = (("*.pos", "*.neg"), ("*.objective", "*.subjective"))


@dataclasses.dataclass
class EvalOptions:
  """What `python -m cmlm eval` passes to every task (see its flags)."""
  model: str = ""
  report_dir: str = "runs/eval"
  bitext_dir: str = ""
  batch_size: int = 256
  max_examples: Optional[int] = None  # per split, drawn with a fixed seed
  tatoeba_languages: Optional[List[str]] = None
  tatoeba_pcr: bool = False
  binary_threshold: Optional[float] = None  # tatoeba: + Hamming / Jaccard
  mining_source: Optional[str] = None
  mining_target: Optional[str] = None
  mining_gold: Optional[str] = None
  mining_threshold: Optional[float] = None
  langdist_pool: Optional[Dict[str, str]] = None  # language -> aligned file
  langdist_size: int = 200  # sentences per language
  langdist_k: int = 10
  show_progress: bool = True
  backend: Optional[str] = None  # inference.embedders.BACKENDS; None: fastest
  quantized: bool = False  # the tflite / onnx backend's int8 model


def limit(examples, max_examples: Optional[int], seed: int = 0):
  """At most `max_examples` examples, a fixed random subset kept in order.

  Works on any reader's dataclass: every list or array field as long as the
  examples is indexed alike.
  """
  if not max_examples or len(examples) <= max_examples:
    return examples
  if max_examples < 2:
    raise ValueError(f"--max_examples must be 2 or more, got {max_examples}.")
  keep = np.sort(np.random.default_rng(seed).choice(
      len(examples), max_examples, replace=False))
  changes = {}
  for field in dataclasses.fields(examples):
    value = getattr(examples, field.name)
    if isinstance(value, (list, np.ndarray)) and len(value) == len(examples):
      changes[field.name] = (value[keep] if isinstance(value, np.ndarray)
                             else [value[i] for i in keep])
  return dataclasses.replace(examples, **changes)


def split_file(directory: str, file_names: Sequence[str]) -> str:
  """`directory` if it is a file, else the first of `file_names` in it."""
  if os.path.isfile(directory):
    return directory
  text_files.require_directory(directory, f"a directory holding "
                               f"{' or '.join(file_names)}")
  for name in file_names:
    path = os.path.join(directory, name)
    if os.path.isfile(path):
      return path
  raise FileNotFoundError(f"{directory} holds no {' or '.join(file_names)}.")


def polarity_files(directory: str) -> Tuple[str, str]:
  """The (label 1, label 0) files of an MR/CR/SUBJ/MPQA directory."""
  text_files.require_directory(
      directory, "a directory with the two class files (NAME.pos and "
      "NAME.neg, or NAME.objective and NAME.subjective)")
  for positive, negative in POLARITY_PATTERNS:
    found = [sorted(glob.glob(os.path.join(directory, p)))
             for p in (positive, negative)]
    if all(found):
      if len(found[0]) > 1 or len(found[1]) > 1:
        raise ValueError(f"{directory} holds several {positive} or "
                         f"{negative} files; point --task_data at one pair.")
      return found[0][0], found[1][0]
  raise FileNotFoundError(
      f"{directory} holds no class files: expected NAME.pos and NAME.neg "
      "(MR, CR, MPQA) or NAME.objective and NAME.subjective (SUBJ).")
