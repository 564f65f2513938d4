"""Readers for the STS file formats of table 2 (STS12–16, STS-B, SICK).

  * STS12–16 (SemEval releases, SentEval's `STS/STS1x-en-test/`): for each
    dataset NAME a file `STS.input.NAME.txt` (sentence1 TAB sentence2, more
    columns ignored) and `STS.gs.NAME.txt` (one gold score per line; an empty
    line means the pair was not scored and is skipped).
  * STS Benchmark (`sts-{train,dev,test}.csv`): tab-separated genre, filename,
    year, pair id, score, sentence1, sentence2, then optional license or
    source columns (the readme omits the id column; the files have it).
  * SICK (`SICK_{train,trial,test_annotated}.txt`): tab-separated with a
    header naming the columns; `sentence_A`, `sentence_B`,
    `relatedness_score` (SICK-R) and `entailment_judgment` (SICK-E) are read
    wherever they are.
"""
import dataclasses
import glob
import os
from typing import Dict, List, Optional, Sequence

import numpy as np

from cmlm.evaluation import text_files
from cmlm.evaluation.text_files import DataFormatError

STS_INPUT_PREFIX = "STS.input."
STS_GOLD_PREFIX = "STS.gs."
STS_BENCHMARK_COLUMNS = ("genre", "filename", "year", "id", "score",
                         "sentence1", "sentence2")
SICK_COLUMNS = ("sentence_A", "sentence_B", "relatedness_score",
                "entailment_judgment")


@dataclasses.dataclass
class ScoredPairs:
  """Sentence pairs with gold scores: one STS dataset, or one split of one."""
  name: str
  sentences1: List[str]
  sentences2: List[str]
  scores: np.ndarray  # float64 [num_pairs]
  path: str
  entailment_labels: Optional[List[str]] = None  # SICK only

  def __len__(self):
    return len(self.scores)


def read_sts_year(directory: str) -> Dict[str, ScoredPairs]:
  """Every `STS.input.NAME.txt` + `STS.gs.NAME.txt` pair of a directory."""
  text_files.require_directory(
      directory, "an STS year directory holding STS.input.*.txt files")
  inputs = sorted(glob.glob(os.path.join(directory,
                                         f"{STS_INPUT_PREFIX}*.txt")))
  if not inputs:
    raise FileNotFoundError(
        f"{directory} holds no {STS_INPUT_PREFIX}NAME.txt file; expected the "
        "SemEval STS layout (STS.input.NAME.txt beside STS.gs.NAME.txt).")
  datasets = {}
  for input_path in inputs:
    name = os.path.basename(input_path)[len(STS_INPUT_PREFIX):-len(".txt")]
    gold_path = os.path.join(directory, f"{STS_GOLD_PREFIX}{name}.txt")
    datasets[name] = _read_input_and_gold(name, input_path, gold_path)
  return datasets


def _read_input_and_gold(name: str, input_path: str,
                         gold_path: str) -> ScoredPairs:
  pair_lines = text_files.read_lines(
      input_path, "STS sentence pairs (sentence1 TAB sentence2)")
  gold_lines = text_files.read_lines(
      gold_path, f"the gold scores of {os.path.basename(input_path)}")
  if len(gold_lines) != len(pair_lines):
    raise DataFormatError(
        gold_path, min(len(gold_lines), len(pair_lines)) + 1,
        f"{len(gold_lines)} gold lines for {len(pair_lines)} sentence pairs in "
        f"{input_path}; the files must be line-aligned.")
  sentences1, sentences2, scores = [], [], []
  for pair_line, gold_line in zip(pair_lines, gold_lines):
    if not gold_line[1].strip():
      continue  # an unscored pair, as SentEval skips it
    score = text_files.parse_float(gold_path, gold_line, gold_line[1].strip(),
                                   "gold score")
    first, second = text_files.split_fields(
        input_path, pair_line, ("sentence1", "sentence2"), allow_extra=True)
    sentences1.append(first)
    sentences2.append(second)
    scores.append(score)
  return ScoredPairs(name, sentences1, sentences2, np.asarray(scores),
                     input_path)


def read_sts_benchmark(path: str) -> ScoredPairs:
  """One STS Benchmark CSV file (tab-separated, no quoting)."""
  sentences1, sentences2, scores = [], [], []
  what = "an STS Benchmark file (sts-train.csv, sts-dev.csv, sts-test.csv)"
  for line in text_files.read_lines(path, what):
    fields = text_files.split_fields(path, line, STS_BENCHMARK_COLUMNS,
                                     allow_extra=True)
    scores.append(text_files.parse_float(path, line, fields[4], "score"))
    sentences1.append(fields[5])
    sentences2.append(fields[6])
  return ScoredPairs(os.path.basename(path), sentences1, sentences2,
                     np.asarray(scores), path)


def read_sick(path: str) -> ScoredPairs:
  """One SICK file: relatedness scores and entailment labels by header name."""
  lines = text_files.read_lines(path, "a SICK file with a header row "
                                f"({', '.join(SICK_COLUMNS)})")
  if not lines:
    raise DataFormatError(path, 1, "is empty; expected a header row naming "
                          f"the columns {', '.join(SICK_COLUMNS)}.")
  header = lines[0][1].split("\t")
  aliases = {"entailment_judgment": ("entailment_judgment",
                                     "entailment_label")}
  columns = []
  for name in SICK_COLUMNS:
    found = [header.index(a) for a in aliases.get(name, (name,)) if a in header]
    if not found:
      raise DataFormatError(path, 1, f"the header has no {name!r} column "
                            f"(it has {', '.join(header)}).")
    columns.append(found[0])
  sentences1, sentences2, scores, labels = [], [], [], []
  for line in lines[1:]:
    fields = text_files.split_fields(path, line, header)
    first, second, score, label = (fields[c] for c in columns)
    sentences1.append(first)
    sentences2.append(second)
    scores.append(text_files.parse_float(path, line, score,
                                         "relatedness_score"))
    labels.append(label.strip().upper())
  return ScoredPairs(os.path.basename(path), sentences1, sentences2,
                     np.asarray(scores), path, labels)


def first_existing(directory: str, file_names: Sequence[str],
                   what: str) -> str:
  """The first of `file_names` found in `directory` (e.g. test, else dev)."""
  text_files.require_directory(directory, what)
  for name in file_names:
    path = os.path.join(directory, name)
    if os.path.isfile(path):
      return path
  raise FileNotFoundError(
      f"{directory} holds none of {', '.join(file_names)}; expected {what}.")
