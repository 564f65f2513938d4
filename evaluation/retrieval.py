"""Tatoeba bitext retrieval (paper table 5) and principal component removal
(section 5.2, table 8).

For each sentence of one language, the nearest sentence of the other
language by cosine similarity is retrieved; the accuracy is the share of
queries whose retrieved sentence is their translation. Both directions are
reported (XXX→eng as XTREME does, and eng→XXX) and their mean. A retrieved
sentence that is a copy of the gold one (Tatoeba repeats some English
sentences) counts as correct; candidates tied at the top share the credit
(`top1_credits`).
"""
from typing import Callable, Dict, List, Optional, Sequence, Tuple

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


TIE_TOLERANCE = 1e-6


def top1_credits(queries: np.ndarray, candidates: np.ndarray,
                 candidate_sentences: Optional[Sequence[str]] = None,
                 score: Optional[Callable[[np.ndarray, np.ndarray],
                                          np.ndarray]] = None,
                 chunk_size: int = 2048) -> np.ndarray:
  """Each query's top-1 credit in [0, 1], `[n]`; query i's gold is
  candidate i (or, given `candidate_sentences`, any candidate with its text).

  Candidates tied at the top score (within `TIE_TOLERANCE`) share their
  places: the credit is the share of correct candidates among them, the
  expected accuracy of breaking the tie uniformly at random. A first-wins
  argmax would favour whichever candidate comes first, the gold for a model
  that gives every text one vector (integer Hamming scores tie often).

  `score(queries, candidates)` gives `[q, c]` scores, larger nearer; default
  the cosine.
  """
  if score is None:
    queries, candidates = l2_normalize(queries), l2_normalize(candidates)
    score = lambda q, c: q @ c.T
  if candidate_sentences is None:
    text_ids = np.arange(len(candidates))
  else:
    index = {}
    text_ids = np.array([index.setdefault(s, len(index))
                         for s in candidate_sentences])
  credits = []
  for start in range(0, len(queries), chunk_size):
    scores = score(queries[start:start + chunk_size], candidates)
    rows = np.arange(start, start + len(scores))
    tied = scores >= scores.max(axis=1, keepdims=True) - TIE_TOLERANCE
    correct = text_ids[None, :] == text_ids[rows][:, None]
    credits.append(np.sum(tied & correct, axis=1) / np.sum(tied, axis=1))
  return np.concatenate(credits) if credits else np.zeros([0])


def retrieval_accuracy(queries: np.ndarray, candidates: np.ndarray,
                       candidate_sentences: Optional[Sequence[str]] = None
                       ) -> float:
  """% of queries i whose nearest candidate (cosine) is candidate i (or a
  copy of it); ties at their mean place (`top1_credits`)."""
  return 100.0 * float(np.mean(top1_credits(queries, candidates,
                                            candidate_sentences)))


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
