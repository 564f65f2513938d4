"""Readers for the SentEval transfer file formats of table 1.

  * MR, CR, SUBJ, MPQA: two files of sentences, one a line, for the two
    classes (`rt-polarity.pos/.neg`, `custrev.pos/.neg`,
    `subj.objective/.subjective`, `mpqa.pos/.neg`); latin-1 lines are
    accepted, as SentEval reads them.
  * SST-2: `sentiment-{train,dev,test}`, `sentence TAB label` (0 or 1).
  * TREC: `train_5500.label`, `TREC_10.label`, `COARSE:fine question`; the
    six coarse classes are the labels, as SentEval uses them.
  * MRPC: `msr_paraphrase_{train,test}.txt`, a header then `Quality TAB #1 ID
    TAB #2 ID TAB #1 String TAB #2 String`.
  * SICK-E: the SICK files' `entailment_judgment` (`sts_readers.read_sick`).
"""
import dataclasses
from typing import List, Sequence

import numpy as np

from cmlm.evaluation import sts_readers
from cmlm.evaluation import text_files
from cmlm.evaluation.text_files import DataFormatError

TREC_CLASSES = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")
SICK_ENTAILMENT_CLASSES = ("CONTRADICTION", "NEUTRAL", "ENTAILMENT")
MRPC_COLUMNS = ("Quality", "#1 ID", "#2 ID", "#1 String", "#2 String")


@dataclasses.dataclass
class LabelledSentences:
  """Sentences with class ids (`classes[labels[i]]` names the class)."""
  sentences: List[str]
  labels: np.ndarray  # int64 [num_examples]
  classes: Sequence[str]
  path: str

  def __len__(self):
    return len(self.labels)


@dataclasses.dataclass
class LabelledPairs:
  """Sentence pairs with class ids (MRPC, SICK-E)."""
  sentences1: List[str]
  sentences2: List[str]
  labels: np.ndarray  # int64 [num_examples]
  classes: Sequence[str]
  path: str

  def __len__(self):
    return len(self.labels)


def read_polarity(positive_path: str, negative_path: str) -> LabelledSentences:
  """MR/CR/SUBJ/MPQA: label 1 for `positive_path`'s lines, 0 for the other's.

  Blank lines carry no sentence and are skipped.
  """
  sentences, labels = [], []
  for path, label in ((positive_path, 1), (negative_path, 0)):
    lines = text_files.read_lines(path, "a file of sentences of one class, "
                                  "one a line", latin1_fallback=True)
    for _, text in lines:
      if text.strip():
        sentences.append(text.strip())
        labels.append(label)
  return LabelledSentences(sentences, np.asarray(labels, np.int64),
                           ("negative", "positive"),
                           f"{positive_path} + {negative_path}")


def read_sst(path: str) -> LabelledSentences:
  """One SST binary file: `sentence TAB label`."""
  sentences, labels = [], []
  for line in text_files.read_lines(path, "an SST file (sentence TAB label)"):
    sentence, label = text_files.split_fields(path, line, ("sentence", "label"))
    if label.strip() not in ("0", "1"):
      raise DataFormatError(path, line[0], f"the label {label!r} is not 0 "
                            "or 1 (binary SST).")
    sentences.append(sentence.strip())
    labels.append(int(label))
  return LabelledSentences(sentences, np.asarray(labels, np.int64),
                           ("negative", "positive"), path)


def read_trec(path: str) -> LabelledSentences:
  """One TREC question file: `COARSE:fine question` (latin-1 tolerated)."""
  sentences, labels = [], []
  for number, text in text_files.read_lines(
      path, "a TREC file (COARSE:fine question)", latin1_fallback=True):
    label, _, rest = text.partition(":")
    fine, _, question = rest.partition(" ")
    if label not in TREC_CLASSES or not fine or not question.strip():
      raise DataFormatError(
          path, number, "expected 'COARSE:fine question' with COARSE one of "
          f"{', '.join(TREC_CLASSES)}, found {text[:40]!r}.")
    sentences.append(question.strip())
    labels.append(TREC_CLASSES.index(label))
  return LabelledSentences(sentences, np.asarray(labels, np.int64),
                           TREC_CLASSES, path)


def read_mrpc(path: str) -> LabelledPairs:
  """One MRPC file (header skipped): paraphrase label 1 or 0."""
  sentences1, sentences2, labels = [], [], []
  what = "an MRPC file (msr_paraphrase_train.txt or _test.txt)"
  for line in text_files.read_lines(path, what, skip_header=True):
    quality, _, _, first, second = text_files.split_fields(path, line,
                                                           MRPC_COLUMNS)
    if quality not in ("0", "1"):
      raise DataFormatError(path, line[0], f"the Quality {quality!r} is not "
                            "0 or 1.")
    sentences1.append(first)
    sentences2.append(second)
    labels.append(int(quality))
  return LabelledPairs(sentences1, sentences2, np.asarray(labels, np.int64),
                       ("not paraphrase", "paraphrase"), path)


def read_sick_entailment(path: str) -> LabelledPairs:
  """One SICK file as SICK-E: the entailment judgment of each pair."""
  pairs = sts_readers.read_sick(path)
  labels = []
  for index, label in enumerate(pairs.entailment_labels):
    if label not in SICK_ENTAILMENT_CLASSES:
      raise DataFormatError(
          path, index + 2, f"the entailment_judgment {label!r} is not one of "
          f"{', '.join(SICK_ENTAILMENT_CLASSES)}.")
    labels.append(SICK_ENTAILMENT_CLASSES.index(label))
  return LabelledPairs(pairs.sentences1, pairs.sentences2,
                       np.asarray(labels, np.int64), SICK_ENTAILMENT_CLASSES,
                       path)
