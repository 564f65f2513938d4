"""The language distribution of retrieved sentences (paper figure 2).

A pool holds sentences of several languages (the paper: PAWS-X English and
its six translations). Each sentence in turn is a query; its k nearest
neighbours in the rest of the pool, by cosine similarity, are retrieved and
their languages counted. A language-agnostic encoder retrieves by meaning,
so the languages come out near uniform; an encoder with a self-language bias
retrieves mostly the query's own language. With PCR (section 5.2) the first
principal component of each language's embeddings is removed first, which
the paper finds removes most of that bias (figure 2's second and fourth
columns).
"""
import os
from typing import Dict, List, Sequence

import numpy as np

from cmlm.evaluation.encoders import Encoder
from cmlm.evaluation import retrieval
from cmlm.modeling.vectors import l2_normalize

Distribution = Dict[str, Dict[str, float]]  # query language -> language -> %


def retrieved_languages(embeddings: np.ndarray, languages: Sequence[str],
                        k: int = 10) -> Distribution:
  """For each query language, the % of its queries' top-k neighbours (the
  query itself excluded) in each language."""
  embeddings = l2_normalize(embeddings)
  languages = np.asarray(languages)
  names = list(dict.fromkeys(languages.tolist()))
  k = min(k, len(languages) - 1)
  counts = {name: np.zeros(len(names)) for name in names}
  for start in range(0, len(embeddings), 1024):
    similarities = embeddings[start:start + 1024] @ embeddings.T
    rows = np.arange(similarities.shape[0])
    similarities[rows, start + rows] = -np.inf  # not the query itself
    top = np.argpartition(-similarities, k - 1, axis=1)[:, :k]  # [chunk, k]
    for query, neighbours in zip(languages[start:start + 1024], top):
      retrieved = languages[neighbours]
      counts[query] += [np.sum(retrieved == name) for name in names]
  return {query: dict(zip(names, (100.0 * row / max(row.sum(), 1)).tolist()))
          for query, row in counts.items()}


def pool_embeddings(encoder: Encoder, pool: Dict[str, List[str]],
                    batch_size: int = 256, pcr: bool = False):
  """The pool's embeddings and each row's language; PCR per language."""
  blocks, languages = [], []
  for language, sentences in pool.items():
    block = encoder(sentences, batch_size)
    if pcr:
      block = retrieval.remove_first_principal_component(block)
    blocks.append(block)
    languages += [language] * len(sentences)
  return np.concatenate(blocks), languages


def self_language_share(distribution: Distribution) -> float:
  """Mean % of neighbours in the query's own language (uniform: 100 / L)."""
  return float(np.mean([row[query] for query, row in distribution.items()]))


def plot_distributions(distributions: Dict[str, Distribution], path: str,
                       title: str = "") -> str:
  """A PNG bar chart: one row per variant (e.g. without / with PCR), one
  panel per query language, bars = % of retrieved sentences per language."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  from matplotlib import pyplot  # pylint: disable=g-import-not-at-top
  variants = list(distributions)
  queries = list(distributions[variants[0]])
  figure, axes = pyplot.subplots(
      len(variants), len(queries), squeeze=False, sharey=True,
      figsize=(2.4 * len(queries) + 1, 2.4 * len(variants) + 0.6))
  for row, variant in enumerate(variants):
    for column, query in enumerate(queries):
      shares = distributions[variant][query]
      axis = axes[row][column]
      colours = ["tab:red" if name == query else "tab:blue" for name in shares]
      axis.bar(list(shares), list(shares.values()), color=colours)
      axis.set_ylim(0, 100)
      axis.set_title(f"{variant}: {query} queries", fontsize=9)
      axis.tick_params(labelsize=8)
    axes[row][0].set_ylabel("% of retrieved")
  if title:
    figure.suptitle(title, fontsize=10)
  figure.tight_layout()
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  figure.savefig(path, format="png", dpi=100)
  pyplot.close(figure)
  return path


def evaluate_language_distribution(encoder: Encoder,
                                   pool: Dict[str, List[str]], plot_path: str,
                                   k: int = 10, batch_size: int = 256,
                                   title: str = "") -> Dict[str, object]:
  """Figure 2 for one encoder: distributions without and with PCR, and the
  plot. The summary figure is the self-language share (lower is more
  language agnostic; 100 / L is uniform)."""
  distributions = {}
  for name, pcr in (("cosine", False), ("PCR", True)):
    embeddings, languages = pool_embeddings(encoder, pool, batch_size, pcr)
    distributions[name] = retrieved_languages(embeddings, languages, k)
  plot_distributions(distributions, plot_path, title)
  return {"self_language_share": self_language_share(distributions["cosine"]),
          "self_language_share_pcr": self_language_share(distributions["PCR"]),
          "uniform_share": 100.0 / len(pool), "k": k,
          "num_sentences": sum(len(s) for s in pool.values()),
          "distributions": distributions, "plot": plot_path}
