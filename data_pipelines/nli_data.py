"""NLI data for the cross-lingual fine-tuning of section 4.3.

Files are TSV (`premise<TAB>hypothesis<TAB>label`, as XNLI) or JSONL (SNLI /
MNLI: `sentence1`, `sentence2`, `gold_label`; or `premise`, `hypothesis`,
`label`). Labels are entailment / neutral / contradiction or 0 / 1 / 2;
SNLI's "-" (no annotator consensus) is skipped and counted; anything else is
an error naming the file and line.

Cross-lingual: `input_path` may list translations of one NLI set as
`lang=file` entries with the same rows in the same order. Each example then
takes its premise and its hypothesis from independently drawn languages, so
they are mostly in different languages ("the premise u and hypothesis v are
in different languages").
"""
import dataclasses
import json
from typing import Dict, List, Optional, Tuple

import numpy as np
import tensorflow as tf

from cmlm.data_pipelines import graph_map
from cmlm.data_pipelines import text_lines
from cmlm.data_pipelines import tokenization
from cmlm.data_pipelines import vocabulary
from official.core import config_definitions as cfg
from official.nlp.data import data_loader

LABELS = ("entailment", "neutral", "contradiction")
NO_CONSENSUS = "-"


class NliDataError(ValueError):
  """An NLI file or one of its lines is not usable."""


def _label(value, path, number) -> Optional[int]:
  text = str(value).strip().lower()
  if text == NO_CONSENSUS:
    return None
  if text in LABELS:
    return LABELS.index(text)
  if text in ("0", "1", "2"):
    return int(text)
  raise NliDataError(f"{path}:{number}: label {value!r} is not one of "
                     f"{', '.join(LABELS)} or 0/1/2.")


def read_nli(path: str, max_rows: Optional[int] = None
             ) -> Tuple[List[Tuple[str, str, Optional[int]]], int]:
  """(premise, hypothesis, label or None) rows of a file; skipped count.

  LF, CRLF and CR end lines alike (`text_lines`). `max_rows`: stop after
  that many rows (a sample)."""
  rows, skipped = [], 0
  try:
    with open(path, "rb") as f:
      for number, raw in enumerate(text_lines.iter_lines(f), start=1):
        try:
          line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError:
          raise NliDataError(f"{path}:{number} is not UTF-8 text.") from None
        if not line.strip():
          continue
        if path.endswith((".jsonl", ".json")):
          try:
            record = json.loads(line)
          except json.JSONDecodeError as e:
            raise NliDataError(f"{path}:{number} is not JSON: {e.msg}.") from None
          premise = record.get("sentence1", record.get("premise"))
          hypothesis = record.get("sentence2", record.get("hypothesis"))
          label = record.get("gold_label", record.get("label"))
        else:
          columns = line.split("\t")
          if len(columns) < 3:
            raise NliDataError(f"{path}:{number} has {len(columns)} column(s);"
                               " expected premise, hypothesis and label.")
          premise, hypothesis, label = columns[-3:]
        if not premise or not hypothesis or label is None:
          raise NliDataError(f"{path}:{number} lacks a premise, a hypothesis "
                             "or a label.")
        label_id = _label(label, path, number)
        skipped += label_id is None
        rows.append((premise, hypothesis, label_id))
        if max_rows is not None and len(rows) >= max_rows:
          break
  except FileNotFoundError:
    raise NliDataError(f"NLI file {path} does not exist.") from None
  return rows, skipped


def translation_files(input_path: str) -> Dict[str, str]:
  """{language: file} of 'lang=file,...' (or one file, language '')."""
  files = {}
  for part in (p.strip() for p in input_path.split(",") if p.strip()):
    lang, sep, path = part.partition("=")
    files[lang if sep else ""] = path if sep else part
  return files


def read_translations(input_path: str) -> Dict[str, List[tuple]]:
  """{language: rows} of 'lang=file,...' (or one file, language '')."""
  files = translation_files(input_path)
  tables = {lang: read_nli(path)[0] for lang, path in files.items()}
  lengths = {lang: len(rows) for lang, rows in tables.items()}
  if len(set(lengths.values())) > 1:
    raise NliDataError(f"The translations in {input_path} have different "
                       f"row counts {lengths}; they must be row-aligned.")
  reference = next(iter(tables.values()))
  for lang, rows in tables.items():
    for i, (row, first) in enumerate(zip(rows, reference)):
      if row[2] != first[2]:
        raise NliDataError(f"Row {i + 1} of {files[lang]} has another label "
                           "than the first translation; rows must align.")
  return tables


@dataclasses.dataclass
class NliDataConfig(cfg.DataConfig):
  input_path: str = ""  # a file, or 'lang=file,lang=file' translations


class NliDataLoader(data_loader.DataLoader):
  """Batches of premise_* / hypothesis_* encoder inputs and `label`."""

  def __init__(self, params: NliDataConfig,
               tokenization_config: tokenization.TokenizationConfig,
               vocab: Optional[vocabulary.VocabularyFile] = None):
    """`vocab`: the tokenization's vocabulary file, already read."""
    if not params.input_path:
      raise ValueError("NliDataConfig: input_path is empty; give a TSV or "
                       "JSONL file, or 'lang=file,lang=file' translations.")
    tokenization_config.check(vocab=vocab)
    self._params = params
    self._tokenization = tokenization_config
    self._vocab = vocab

  def load(self, input_context=None) -> tf.data.Dataset:
    params = self._params
    tables = list(read_translations(params.input_path).values())
    keep = [i for i, row in enumerate(tables[0]) if row[2] is not None]
    if not keep:
      raise NliDataError(f"{params.input_path} holds no labelled example.")
    # [languages, examples] premises and hypotheses; [examples] labels.
    premises = np.array([[t[i][0] for i in keep] for t in tables], object)
    hypotheses = np.array([[t[i][1] for i in keep] for t in tables], object)
    labels = np.array([tables[0][i][2] for i in keep], np.int32)
    dataset = tf.data.Dataset.from_tensor_slices(
        (premises.T.astype(str), hypotheses.T.astype(str), labels))
    if input_context and input_context.num_input_pipelines > 1:
      dataset = dataset.shard(input_context.num_input_pipelines,
                              input_context.input_pipeline_id)
    if params.is_training:
      dataset = dataset.shuffle(len(keep), seed=params.seed).repeat()
    batch_size = (input_context.get_per_replica_batch_size(
        params.global_batch_size) if input_context
                  else params.global_batch_size)
    dataset = dataset.batch(batch_size, drop_remainder=bool(
        params.is_training or params.drop_remainder))
    tokenizer = tokenization.build_wordpiece_tokenizer(
        self._tokenization, vocab=self._vocab)
    num_languages = len(tables)

    def encode(premise, hypothesis, label):
      size = tf.shape(label)[0]
      # Independently drawn languages for premise and hypothesis: [batch].
      picks = tf.random.uniform([2, size], 0, num_languages, tf.int32)
      premise = tf.gather(premise, picks[0], batch_dims=1)
      hypothesis = tf.gather(hypothesis, picks[1], batch_dims=1)
      packed = tokenizer.tokenize_and_pack(tf.concat([premise, hypothesis],
                                                     0))
      features = {"label": label}
      for name, value in packed.items():
        features[f"premise_{name}"] = value[:size]
        features[f"hypothesis_{name}"] = value[size:]
      return features

    return graph_map.graph_map(
        dataset, encode, num_parallel_calls=tf.data.AUTOTUNE).prefetch(
            tf.data.AUTOTUNE)
