"""Two MTEB 2 tasks read from STS-B dev on disk (../shared/data), so that
`mteb.evaluate` runs without the Hugging Face Hub:

  * `LocalSTSBenchmark` (MTEB's `AbsTaskSTS`): cosine Spearman of the pairs
    against their gold scores, as MTEB's STSBenchmark scores its own copy;
  * `LocalSTSBenchmarkRetrieval` (`AbsTaskRetrieval`): each first sentence
    of a pair scored 4 or more ("mostly equivalent") is a query whose
    relevant document is its second sentence, among the second sentences of
    all pairs; nDCG@10.

    tasks = local_tasks(read_pairs())
    mteb.evaluate(model, tasks=tasks, cache=None)
"""
import os

import datasets
from mteb.abstasks.retrieval import AbsTaskRetrieval
from mteb.abstasks.sts import AbsTaskSTS
from mteb.abstasks.task_metadata import TaskMetadata

from cmlm.evaluation import sts_readers
from tests import helpers

STS_DEV = os.path.join(helpers.REPO_ROOT, "..", "shared", "data", "eval",
                       "sts", "STSBenchmark", "sts-dev.csv")
SPLIT = "dev"
RELEVANT_SCORE = 4.0


def read_pairs(path: str = STS_DEV, every: int = 1):
  """Every `every`-th pair of an STS-B file (all by default; the file goes
  genre by genre, so each keeps a share), as
  `evaluation.sts_readers.ScoredPairs`."""
  pairs = sts_readers.read_sts_benchmark(path)
  return sts_readers.ScoredPairs(
      pairs.name, pairs.sentences1[::every], pairs.sentences2[::every],
      pairs.scores[::every], pairs.path)


def _metadata(name: str, task_type: str, main_score: str) -> TaskMetadata:
  return TaskMetadata(
      name=name, dataset={"path": f"local/{name}", "revision": "local"},
      description=f"{name}: built from STS-B dev on disk for the tests.",
      reference=None, type=task_type, category="t2t", modalities=["text"],
      eval_splits=[SPLIT], eval_langs=["eng-Latn"], main_score=main_score,
      date=None, domains=None, task_subtypes=None, license=None,
      annotations_creators=None, dialect=None, sample_creation=None,
      bibtex_citation=None)


class LocalSTSBenchmark(AbsTaskSTS):
  """STS-B dev pairs on disk as an MTEB STS task."""
  metadata = _metadata("LocalSTSBenchmark", "STS", "cosine_spearman")
  min_score, max_score = 0, 5

  def __init__(self, pairs, **kwargs):
    super().__init__(**kwargs)
    self._pairs = pairs

  def load_data(self, **kwargs):
    del kwargs
    self.dataset = {"default": {SPLIT: datasets.Dataset.from_dict({
        "sentence1": list(self._pairs.sentences1),
        "sentence2": list(self._pairs.sentences2),
        "score": [float(s) for s in self._pairs.scores]})}}
    self.data_loaded = True


class LocalSTSBenchmarkRetrieval(AbsTaskRetrieval):
  """Queries: first sentences of pairs scored >= 4; documents: every
  pair's second sentence; relevant: the query's own second sentence."""
  metadata = _metadata("LocalSTSBenchmarkRetrieval", "Retrieval",
                       "ndcg_at_10")

  def __init__(self, pairs, **kwargs):
    super().__init__(**kwargs)
    self._pairs = pairs

  def load_data(self, **kwargs):
    del kwargs
    documents = sorted(set(self._pairs.sentences2))
    ids = {text: f"d{i}" for i, text in enumerate(documents)}
    queries = [(first, second) for first, second, score in zip(
        self._pairs.sentences1, self._pairs.sentences2, self._pairs.scores)
               if score >= RELEVANT_SCORE]
    self.dataset = {"default": {SPLIT: {
        "corpus": datasets.Dataset.from_dict(
            {"id": [ids[text] for text in documents], "text": documents}),
        "queries": datasets.Dataset.from_dict(
            {"id": [f"q{i}" for i in range(len(queries))],
             "text": [first for first, _ in queries]}),
        "relevant_docs": {f"q{i}": {ids[second]: 1}
                          for i, (_, second) in enumerate(queries)},
        "top_ranked": None}}}
    self.data_loaded = True


def local_tasks(pairs):
  """[the STS task, the retrieval task] over `pairs`."""
  return [LocalSTSBenchmark(pairs), LocalSTSBenchmarkRetrieval(pairs)]
