"""Per-example dev measures for the evidence protocol (`evidence_protocol`).

Every measure reads a split that no arm trains on and that is not a test
set, and returns a sample (`evaluation/statistics.py`) with per-example
values, so the protocol's paired bootstrap can resample examples:

  * `sts-b`: STS-B dev (`sts-dev.csv`), Spearman x 100 of cosines;
  * `sick-r`: SICK-R trial (`SICK_trial.txt`, 500 pairs), the same;
  * `sick-r train+trial`: SICK-R train and trial together (`SICK_train.txt`
    + `SICK_trial.txt`, 5000 pairs), the same; data no recipe was chosen on;
  * `sts-b train`: STS-B train (`sts-train.csv`, 5749 pairs), the same; held
    apart from STS-B dev, on which recipes are chosen;
  * `cr`, `mrpc`, `trec`, `sst2`: a logistic regression on frozen vectors
    (`evaluation.transfer`: C by 5-fold CV on the fitting part), scored per
    example on a dev split: SST-2's own dev file; for CR, MRPC and TREC a
    fixed 10% of the training file (`DEV_FRACTION`, seed 1111), the
    classifier fitting the other 90%. Test files are never read;
  * `tatoeba`: top-1 retrieval credit of each query in both directions over
    the *dev half* of Tatoeba (the first half of each language's pairs; the
    second half is left as the test), ties at their mean place
    (`evaluation.retrieval.top1_credits`).
"""
import dataclasses
import os
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from cmlm.evaluation import retrieval
from cmlm.evaluation import statistics
from cmlm.evaluation import sts
from cmlm.evaluation import sts_readers
from cmlm.evaluation import transfer
from cmlm.evaluation import transfer_readers
from cmlm.evaluation.bitext_readers import read_tatoeba
from cmlm.evaluation.task_data import limit
from cmlm.evaluation.task_data import polarity_files

STS_MEASURES = ("sts-b", "sick-r", "sick-r train+trial", "sts-b train")
TRANSFER_MEASURES = ("cr", "mrpc", "trec", "sst2")
DEV_FRACTION = 0.1
SPLIT_SEED = transfer.SEED
MEASURE_DATA = {
    "sts-b": "STS-B dev (1500 pairs), Spearman x 100",
    "sick-r": "SICK-R trial (500 pairs), Spearman x 100",
    "sick-r train+trial": "SICK-R train + trial (5000 pairs), Spearman x 100",
    "sts-b train": "STS-B train (5749 pairs), Spearman x 100",
    "cr": "CR, a fixed 10% of the data held out (accuracy %)",
    "mrpc": "MRPC train, a fixed 10% held out (accuracy %)",
    "trec": "TREC train, a fixed 10% held out (accuracy %)",
    "sst2": "SST-2 dev (872 sentences; accuracy %)",
    "tatoeba": "Tatoeba dev half (first half of each language), top-1 % "
               "both directions",
}


def sts_pairs(name: str, data_dir: str) -> sts_readers.ScoredPairs:
  benchmark = os.path.join(data_dir, "sts", "STSBenchmark")
  sick = os.path.join(data_dir, "sts", "SICK")
  if name in ("sts-b", "sts-b train"):
    return sts_readers.read_sts_benchmark(os.path.join(
        benchmark, "sts-dev.csv" if name == "sts-b" else "sts-train.csv"))
  if name == "sick-r":
    return sts_readers.read_sick(os.path.join(sick, "SICK_trial.txt"))
  if name == "sick-r train+trial":
    return joined(name, [sts_readers.read_sick(os.path.join(sick, f))
                         for f in ("SICK_train.txt", "SICK_trial.txt")])
  raise ValueError(f"No STS dev measure {name!r}; use one of "
                   f"{', '.join(STS_MEASURES)}.")


def joined(name: str, parts: Sequence[sts_readers.ScoredPairs]
           ) -> sts_readers.ScoredPairs:
  """The pairs of `parts` in order, as one set."""
  return sts_readers.ScoredPairs(
      name, [s for p in parts for s in p.sentences1],
      [s for p in parts for s in p.sentences2],
      np.concatenate([p.scores for p in parts]),
      ",".join(p.path for p in parts))


def sts_sample(encoder, pairs: sts_readers.ScoredPairs,
               batch_size: int = 256) -> dict:
  predicted = sts.cosine_similarities(encoder(pairs.sentences1, batch_size),
                                      encoder(pairs.sentences2, batch_size))
  return statistics.spearman_sample(predicted, pairs.scores)


def held_out(examples, fraction: float = DEV_FRACTION,
             seed: int = SPLIT_SEED):
  """(fitting part, dev part) of `examples`: a fixed random `fraction`."""
  order = np.random.default_rng(seed).permutation(len(examples))
  cut = int(round(fraction * len(examples)))
  pick = lambda index: limit_to(examples, np.sort(index))
  return pick(order[cut:]), pick(order[:cut])


def limit_to(examples, index):
  """The examples at `index`, every per-example field alike."""
  changes = {}
  for field in dataclasses.fields(examples):
    value = getattr(examples, field.name)
    if isinstance(value, (list, np.ndarray)) and len(value) == len(examples):
      changes[field.name] = (value[index] if isinstance(value, np.ndarray)
                             else [value[i] for i in index])
  return dataclasses.replace(examples, **changes)


def transfer_splits(name: str, data_dir: str, max_train: Optional[int] = None):
  """(fitting examples, dev examples) of a transfer task; no test file."""
  root = os.path.join(data_dir, "transfer")
  if name == "sst2":
    directory = os.path.join(root, "SST", "binary")
    fit = transfer_readers.read_sst(os.path.join(directory, "sentiment-train"))
    dev = transfer_readers.read_sst(os.path.join(directory, "sentiment-dev"))
  elif name == "cr":
    fit, dev = held_out(transfer_readers.read_polarity(
        *polarity_files(os.path.join(root, "CR"))))
  elif name == "trec":
    fit, dev = held_out(transfer_readers.read_trec(
        os.path.join(root, "TREC", "train_5500.label")))
  elif name == "mrpc":
    fit, dev = held_out(transfer_readers.read_mrpc(
        os.path.join(root, "MRPC", "msr_paraphrase_train.txt")))
  else:
    raise ValueError(f"No transfer dev measure {name!r}; use one of "
                     f"{', '.join(TRANSFER_MEASURES)}.")
  return limit(fit, max_train, seed=SPLIT_SEED), dev


def transfer_sample(encoder, fit, dev, batch_size: int = 256) -> dict:
  """Per-example correctness (x 100) on `dev` of a classifier fitted on
  `fit` (C by 5-fold CV on `fit`, SentEval's grid)."""
  fit_x = transfer.embed_examples(encoder, fit, batch_size)
  dev_x = transfer.embed_examples(encoder, dev, batch_size)
  c, _ = transfer.choose_regularization(fit_x, fit.labels,
                                        transfer.REGULARIZATION_GRID, 5)
  classifier = transfer.train_classifier(fit_x, fit.labels, c)
  return statistics.mean_sample(classifier.predict(dev_x) == dev.labels, 100)


def tatoeba_half(pairs: Dict[str, Tuple[List[str], List[str]]],
                 half: str = "dev") -> Dict[str, Tuple[List[str], List[str]]]:
  """The dev half (first half of each language's pairs) or the test half."""
  if half not in ("dev", "test"):
    raise ValueError(f"half must be 'dev' or 'test', got {half!r}.")
  out = {}
  for language, (foreign, english) in pairs.items():
    middle = len(foreign) // 2
    part = slice(0, middle) if half == "dev" else slice(middle, None)
    out[language] = (foreign[part], english[part])
  return out


def tatoeba_sample(encoder, pairs, batch_size: int = 256) -> dict:
  """Top-1 credits (x 100) of every query, xx->eng then eng->xx, language by
  language; a copy of the gold sentence counts as the gold."""
  credits = []
  for foreign, english in pairs.values():
    foreign_vectors = encoder(foreign, batch_size)
    english_vectors = encoder(english, batch_size)
    credits.append(retrieval.top1_credits(foreign_vectors, english_vectors,
                                          english))
    credits.append(retrieval.top1_credits(english_vectors, foreign_vectors,
                                          foreign))
  return statistics.mean_sample(np.concatenate(credits), 100)


def tatoeba_dev_pairs(tatoeba_dir: str, languages: Optional[Sequence[str]]
                      = None):
  return tatoeba_half(read_tatoeba(tatoeba_dir, languages), "dev")


def normalized(text: str) -> str:
  """Whitespace collapsed, case folded: how overlap is compared."""
  return " ".join(text.split()).casefold()


def tatoeba_sentences(tatoeba_dir: str,
                      languages: Optional[Sequence[str]] = None) -> set:
  """Every Tatoeba sentence of `languages`, both sides and halves,
  `normalized`."""
  return {normalized(text) for foreign, english in
          read_tatoeba(tatoeba_dir, languages).values()
          for text in foreign + english}


def without_overlap(pairs: Sequence[Tuple[str, str]], sentences: set
                    ) -> Tuple[List[Tuple[str, str]], int]:
  """(the pairs neither side of which is in `sentences`, how many were
  left out): training data kept apart from evaluation sentences."""
  kept = [(a, b) for a, b in pairs
          if normalized(a) not in sentences and normalized(b) not in sentences]
  return kept, len(pairs) - len(kept)


def evaluate(encoder, measures: Sequence[str], data_dir: str,
             max_train: Optional[int] = None, batch_size: int = 256,
             tatoeba_languages: Optional[Sequence[str]] = None
             ) -> Dict[str, dict]:
  """{measure: sample} for the named dev measures."""
  samples = {}
  for name in measures:
    if name in STS_MEASURES:
      samples[name] = sts_sample(encoder, sts_pairs(name, data_dir),
                                 batch_size)
    elif name in TRANSFER_MEASURES:
      samples[name] = transfer_sample(
          encoder, *transfer_splits(name, data_dir, max_train), batch_size)
    elif name == "tatoeba":
      samples[name] = tatoeba_sample(encoder, tatoeba_dev_pairs(
          os.path.join(data_dir, "tatoeba"), tatoeba_languages), batch_size)
    else:
      raise ValueError(f"Unknown dev measure {name!r}; the measures are "
                       f"{', '.join(MEASURE_DATA)}.")
    value = statistics.statistic(samples[name])
    print(f"  {name}: {value:.2f}", flush=True)
  return samples
