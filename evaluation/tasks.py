"""The registry of evaluation tasks: where each finds its data, how it reads
it and which paper table it reproduces.

The core registers the CMLM paper's evaluations below (STS, SentEval
transfer, Tatoeba, plus bitext mining and the language distribution of
retrieved sentences); a project adds its own with `register_task`.

Each `Task` reads its data first (`read`, so a missing file or bad line stops
the run before any model is loaded) and evaluates an `Encoder` on it
(`evaluate`). Default locations are SentEval's layout under `--data_dir`
(`sts/STS12-en-test`, `transfer/CR`, ...; docs/benchmark_data.md gives each
benchmark's source and files); `--task_data=NAME=PATH` points one task
elsewhere (a directory in the task's file format). MTEB's tasks are run by
name through MTEB's own loaders instead (`evaluation/mteb_tasks.py`).

A task also says how a model card files its result (`CardEntry`: the
Hugging Face Hub's task type and name, the dataset's name); `cmlm eval`
writes it into each result of its report, where export's model card reads
it, so a project's task states its own.
"""
import dataclasses
import os
from typing import Callable, Dict

from cmlm.evaluation import binary_retrieval
from cmlm.evaluation import bitext_readers
from cmlm.evaluation import language_distribution
from cmlm.evaluation import mining
from cmlm.evaluation import multilingual_data
from cmlm.evaluation import retrieval
from cmlm.evaluation import sts
from cmlm.evaluation import sts_readers
from cmlm.evaluation import transfer
from cmlm.evaluation import transfer_readers
from cmlm.evaluation.task_data import EvalOptions
from cmlm.evaluation.task_data import limit
from cmlm.evaluation.task_data import polarity_files
from cmlm.evaluation.task_data import split_file


@dataclasses.dataclass(frozen=True)
class CardEntry:
  """How a model card's `model-index` files a task's result: the Hub's task
  `task_type` and `task_name`, and the `dataset` name ("" for the task's
  name upper-cased)."""
  task_type: str = "feature-extraction"
  task_name: str = ""
  dataset: str = ""

  def for_task(self, name: str) -> dict:
    """This entry as the report records it for the task `name`."""
    return {"task_type": self.task_type,
            "task_name": self.task_name or name,
            "dataset": self.dataset or name.upper()}


STS_CARD = CardEntry("sentence-similarity", "Semantic textual similarity")
TRANSFER_CARD = CardEntry("text-classification", "SentEval transfer")
BITEXT_CARD = CardEntry("sentence-similarity", "Bitext retrieval")


@dataclasses.dataclass(frozen=True)
class Task:
  name: str
  paper: str  # the table or figure it reproduces
  headline: str  # the result's key of the figure the report's table shows
  default_path: str  # relative to --data_dir ("" = not under --data_dir)
  read: Callable[[str, EvalOptions], dict]  # -> {"data": ..., "files": [...]}
  evaluate: Callable[..., dict]  # (encoder, data, options) -> result
  # For a task whose data is not under --data_dir: what the options lack to
  # run it ("" when nothing is missing).
  missing: Callable[[EvalOptions], str] = lambda options: ""
  card: CardEntry = CardEntry()  # how a model card files its result


def _read_sts_year(path, options):
  datasets = {name: limit(pairs, options.max_examples) for name, pairs in
              sts_readers.read_sts_year(path).items()}
  return {"data": datasets, "files": [p.path for p in datasets.values()]}


def _read_scored_pairs(reader, file_names):
  def read(path, options):
    file_path = split_file(path, file_names)
    return {"data": limit(reader(file_path), options.max_examples),
            "files": [file_path]}
  return read


def _read_polarity(path, options):
  positive, negative = polarity_files(path)
  examples = transfer_readers.read_polarity(positive, negative)
  return {"data": limit(examples, options.max_examples),
          "files": [positive, negative]}


def _read_split(reader, train_name, test_names, dev_name=None):
  """Train, optional dev and test files of a directory. Without a test file
  the dev file is the test set (and the L2 strength is chosen by k-fold)."""
  def read(path, options):
    train_path = split_file(path, [train_name])
    test_path = split_file(path, test_names + ([dev_name] if dev_name else []))
    dev_path = (split_file(path, [dev_name])
                if dev_name and os.path.basename(test_path) != dev_name
                else None)
    splits = {"train": train_path, "dev": dev_path, "test": test_path}
    data = {split: limit(reader(p), options.max_examples) if p else None
            for split, p in splits.items()}
    data["evaluated_on"] = os.path.basename(test_path)
    return {"data": data, "files": [p for p in splits.values() if p]}
  return read


def _read_tatoeba(path, options):
  pairs = bitext_readers.read_tatoeba(path, options.tatoeba_languages)
  if options.max_examples:
    pairs = {language: (foreign[:options.max_examples],
                        english[:options.max_examples])
             for language, (foreign, english) in pairs.items()}
  files = [os.path.join(path, f"tatoeba.{language}-eng.{suffix}")
           for language in pairs for suffix in (language, "eng")]
  return {"data": pairs, "files": files}


def _missing_mining(options):
  if (options.bitext_dir or options.mining_source or options.mining_target
      or options.mining_gold):
    return ""
  return ("--mining_source, --mining_target and --mining_gold (a BUCC-style "
          "test), or --bitext_dir holding Multi30k's "
          f"{multilingual_data.multi30k_path('', 'de')} and .en.gz to build "
          "one from")


def _missing_pool(options):
  if options.bitext_dir or options.langdist_pool:
    return ""
  return ("--langdist_pool=LANG=FILE,... (line-aligned files), or "
          "--bitext_dir holding Multi30k's "
          f"{multilingual_data.multi30k_path('', 'en')} (and de, fr, cs)")


def _read_mining(_, options):
  paths = (options.mining_source, options.mining_target, options.mining_gold)
  if any(paths) and not all(paths):
    raise ValueError("mining needs all of --mining_source, --mining_target "
                     "and --mining_gold, or none of them (a test built from "
                     "Multi30k under --bitext_dir).")
  if not any(paths):
    bitext = [multilingual_data.multi30k_path(options.bitext_dir, language)
              for language in ("de", "en")]
    source, target = (bitext_readers.read_sentences(p, "Multi30k captions")
                      for p in bitext)
    paths = multilingual_data.write_mining_test(
        source, target, os.path.join(options.report_dir, "mining_multi30k"),
        "de", "en")
  source, target, gold = multilingual_data.read_mining_test(*paths)
  return {"data": (source.sentences, target.sentences, gold),
          "files": list(paths)}


def _read_pool(_, options):
  paths = options.langdist_pool or {
      language: multilingual_data.multi30k_path(options.bitext_dir, language)
      for language in ("en", "de", "fr", "cs")}
  pool = multilingual_data.aligned_pool(paths, options.langdist_size)
  return {"data": pool, "files": list(paths.values())}


def _evaluate_scored_pairs(encoder, pairs, options):
  result = sts.evaluate_pairs(encoder, pairs, options.batch_size)
  result["evaluated_on"] = pairs.name  # the file: test, else dev
  if options.binary_threshold is not None:  # Kiros et al. 2020, 4.2
    result["binary"] = binary_retrieval.evaluate_pairs_binary(
        encoder, pairs, options.binary_threshold, options.batch_size)
  return result


def _evaluate_without_split(encoder, examples, options):
  result = transfer.evaluate_without_split(encoder, examples,
                                           options.batch_size)
  result["evaluated_on"] = f"{result['folds']}-fold cross-validation"
  return result


def _evaluate_split(encoder, data, options):
  result = transfer.evaluate_with_split(encoder, data["train"], data["test"],
                                        data["dev"], options.batch_size)
  result["evaluated_on"] = data["evaluated_on"]
  return result


def _evaluate_tatoeba(encoder, pairs, options):
  """Cosine; with --binary_threshold also Hamming and Jaccard on the sparse
  binary vectors (Kiros et al. 2020, 4.2) under "binary"."""
  result = retrieval.evaluate_tatoeba(encoder, pairs, options.batch_size,
                                      options.tatoeba_pcr)
  if options.binary_threshold is not None:
    result["binary"] = binary_retrieval.evaluate_tatoeba_binary(
        encoder, pairs, options.binary_threshold, options.batch_size)
  return result


def _sts_year(year):
  return Task(f"sts{year}", "table 2", "spearman",
              f"sts/STS{year}-en-test", _read_sts_year,
              lambda e, d, o: sts.evaluate_sts_year(e, d, o.batch_size),
              card=STS_CARD)


def _polarity(name, directory):
  return Task(name, "table 1", "accuracy", f"transfer/{directory}",
              _read_polarity, _evaluate_without_split, card=TRANSFER_CARD)


TASKS: Dict[str, Task] = {task.name: task for task in [
    *(_sts_year(year) for year in (12, 13, 14, 15, 16)),
    Task("sts-b", "table 2", "spearman", "sts/STSBenchmark",
         _read_scored_pairs(sts_readers.read_sts_benchmark,
                            ["sts-test.csv", "sts-dev.csv"]),
         _evaluate_scored_pairs,
         card=dataclasses.replace(STS_CARD, dataset="STS Benchmark")),
    Task("sick-r", "table 2", "spearman", "sts/SICK",
         _read_scored_pairs(sts_readers.read_sick,
                            ["SICK_test_annotated.txt", "SICK_trial.txt"]),
         _evaluate_scored_pairs, card=STS_CARD),
    _polarity("mr", "MR"), _polarity("cr", "CR"), _polarity("subj", "SUBJ"),
    _polarity("mpqa", "MPQA"),
    Task("sst2", "table 1", "accuracy", "transfer/SST/binary",
         _read_split(transfer_readers.read_sst, "sentiment-train",
                     ["sentiment-test"], "sentiment-dev"), _evaluate_split,
         card=dataclasses.replace(TRANSFER_CARD, dataset="SST-2")),
    Task("trec", "table 1", "accuracy", "transfer/TREC",
         _read_split(transfer_readers.read_trec, "train_5500.label",
                     ["TREC_10.label"]), _evaluate_split,
         card=TRANSFER_CARD),
    Task("mrpc", "table 1", "accuracy", "transfer/MRPC",
         _read_split(transfer_readers.read_mrpc, "msr_paraphrase_train.txt",
                     ["msr_paraphrase_test.txt"]), _evaluate_split,
         card=TRANSFER_CARD),
    Task("sick-e", "table 1", "accuracy", "sts/SICK",
         _read_split(transfer_readers.read_sick_entailment, "SICK_train.txt",
                     ["SICK_test_annotated.txt"], "SICK_trial.txt"),
         _evaluate_split, card=TRANSFER_CARD),
    Task("tatoeba", "table 5", "accuracy", "tatoeba", _read_tatoeba,
         _evaluate_tatoeba,
         card=dataclasses.replace(BITEXT_CARD, dataset="Tatoeba")),
    Task("mining", "Kiros et al. 2020 table 5", "f1", "", _read_mining,
         lambda e, d, o: mining.evaluate_mining(
             e, *d, batch_size=o.batch_size, threshold=o.mining_threshold),
         _missing_mining,
         card=dataclasses.replace(BITEXT_CARD, dataset="Bitext mining")),
    Task("langdist", "figure 2", "self_language_share", "", _read_pool,
         lambda e, d, o: language_distribution.evaluate_language_distribution(
             e, d, os.path.join(o.report_dir, "language_distribution.png"),
             k=o.langdist_k, batch_size=o.batch_size, title=o.model),
         _missing_pool,
         card=CardEntry(dataset="Language distribution of retrieved "
                        "sentences")),
]}

GROUPS = {
    "sts": ["sts12", "sts13", "sts14", "sts15", "sts16", "sts-b", "sick-r"],
    "transfer": ["mr", "cr", "subj", "mpqa", "sst2", "trec", "mrpc", "sick-e"],
    "multilingual": ["tatoeba", "mining", "langdist"],
}
GROUPS["all"] = GROUPS["sts"] + GROUPS["transfer"] + GROUPS["multilingual"]


def register_task(task: Task, group: str = "") -> Task:
  """Makes `task` known to `python -m cmlm eval` (and to model selection),
  in `group` too when given (a new group is made), and in "all"."""
  if task.name in TASKS and TASKS[task.name] is not task:
    raise ValueError(f"An evaluation task is already registered as "
                     f"{task.name!r}.")
  TASKS[task.name] = task
  for name in ([group] if group else []) + ["all"]:
    members = GROUPS.setdefault(name, [])
    if task.name not in members:
      members.append(task.name)
  return task
