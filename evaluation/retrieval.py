"""Tatoeba bitext retrieval (paper table 5) and principal component removal
(section 5.2, table 8).

For each sentence of one language, the nearest sentence of the other
language by cosine similarity is retrieved; the accuracy is the share of
queries whose retrieved sentence is their translation. Both directions are
reported (XXX→eng as XTREME does, and eng→XXX) and their mean. A retrieved
sentence that is a copy of the gold one (Tatoeba repeats some English
sentences) counts as correct.
"""
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from cmlm.evaluation.encoders import Encoder
from cmlm.modeling.principal_component_removal import first_principal_component
from cmlm.modeling.vectors import l2_normalize
from cmlm.modeling.principal_component_removal import remove_component


def remove_first_principal_component(embeddings: np.ndarray) -> np.ndarray:
  """PCR as table 8 evaluates it: the component is fitted on the
  monolingual test matrix `embeddings` `[n, dim]` itself and removed from
  each of its rows (section 5.2). Serving fits it on a held-apart sample
  instead (`python -m cmlm pcr`), with the same function."""
  embeddings = np.asarray(embeddings, np.float32)
  return remove_component(embeddings,
                          first_principal_component(embeddings).astype(
                              np.float32))


def nearest_neighbours(queries: np.ndarray, candidates: np.ndarray,
                       chunk_size: int = 2048) -> np.ndarray:
  """The index of each query's most cosine-similar candidate, `[n]`."""
  queries, candidates = l2_normalize(queries), l2_normalize(candidates)
  best = [np.argmax(queries[start:start + chunk_size] @ candidates.T, axis=1)
          for start in range(0, len(queries), chunk_size)]
  return np.concatenate(best) if best else np.zeros([0], np.int64)


def retrieval_accuracy(queries: np.ndarray, candidates: np.ndarray,
                       candidate_sentences: Optional[Sequence[str]] = None
                       ) -> float:
  """% of queries i whose nearest candidate is candidate i (or a copy of it)."""
  return accuracy_of_retrieved(nearest_neighbours(queries, candidates),
                               candidate_sentences)


def accuracy_of_retrieved(retrieved: np.ndarray,
                          candidate_sentences: Optional[Sequence[str]] = None
                          ) -> float:
  """% of queries i whose retrieved candidate `retrieved[i]` is i, or, given
  `candidate_sentences`, a candidate with the same text as i."""
  gold = np.arange(len(retrieved))
  correct = retrieved == gold
  if candidate_sentences is not None:
    correct |= np.array([candidate_sentences[r] == candidate_sentences[g]
                         for r, g in zip(retrieved, gold)], bool)
  return 100.0 * float(np.mean(correct))


def tatoeba_accuracy(encoder: Encoder, foreign: List[str], english: List[str],
                     batch_size: int = 256, pcr: bool = False
                     ) -> Dict[str, float]:
  """Accuracy XXX→eng, eng→XXX and their mean for one language."""
  foreign_embeddings = encoder(foreign, batch_size)
  english_embeddings = encoder(english, batch_size)
  if pcr:
    foreign_embeddings = remove_first_principal_component(foreign_embeddings)
    english_embeddings = remove_first_principal_component(english_embeddings)
  to_english = retrieval_accuracy(foreign_embeddings, english_embeddings,
                                  english)
  from_english = retrieval_accuracy(english_embeddings, foreign_embeddings,
                                    foreign)
  return {"xxx_to_eng": to_english, "eng_to_xxx": from_english,
          "accuracy": (to_english + from_english) / 2,
          "num_pairs": len(foreign)}


def evaluate_tatoeba(encoder: Encoder,
                     pairs: Dict[str, Tuple[List[str], List[str]]],
                     batch_size: int = 256, pcr: bool = False
                     ) -> Dict[str, object]:
  """Every language of `pairs` (see `bitext_readers.read_tatoeba`)."""
  languages = {language: tatoeba_accuracy(encoder, foreign, english,
                                          batch_size, pcr)
               for language, (foreign, english) in pairs.items()}
  def mean(key):
    return float(np.mean([r[key] for r in languages.values()]))
  return {"accuracy": mean("accuracy"), "xxx_to_eng": mean("xxx_to_eng"),
          "eng_to_xxx": mean("eng_to_xxx"),
          "num_pairs": int(sum(r["num_pairs"] for r in languages.values())),
          "pcr": pcr, "languages": languages}
