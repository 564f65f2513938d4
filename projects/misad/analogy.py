"""Analogy `a : b :: c : ?` by 3CosAdd (Li et al. 2020, appendix A.1;
Mikolov et al. 2013), at word, phrase and sentence level (table 2).

Every text is embedded by the encoder and normalised to unit length; the
answer is the candidate d maximising cos(c + b - a, d). ULR questions choose
among their own candidates (the gold answer and 1 or 4 distractors);
Mikolov questions among every word of the file but a, b and c.

Ties: a candidate tied at the top score (within 1e-6) shares the credit, so
a question whose gold answer ties with k - 1 others counts 1/k, the expected
accuracy of breaking the tie uniformly at random. The ULR files always put
the gold answer first among the candidates; with this rule no order and no
first-wins argmax can favour it, and a model giving every text the same
embedding scores chance (1/5 on the semantic sets, 1/2 on the syntactic
ones), not 100%.

Figures are accuracies x 100, overall, per kind (semantic, syntactic) and
per category.
"""
import collections
from typing import Dict

import numpy as np

from cmlm.projects.misad.analogy_readers import AnalogyQuestions
from cmlm.evaluation.encoders import Encoder
from cmlm.modeling.vectors import l2_normalize

TIE_TOLERANCE = 1e-6


def tie_credit(scores: np.ndarray, gold: int) -> float:
  """1/k when the gold candidate is among the k candidates tied at the top
  (within `TIE_TOLERANCE`), else 0. `-inf` scores are excluded candidates."""
  top = np.max(scores)
  tied = scores >= top - TIE_TOLERANCE
  return 1.0 / np.count_nonzero(tied) if tied[gold] else 0.0


def three_cos_add_targets(a: np.ndarray, b: np.ndarray, c: np.ndarray
                          ) -> np.ndarray:
  """c + b - a of unit vectors, normalised (cosine then is a dot product)."""
  unit = lambda v: l2_normalize(v, np.float64)
  return unit(unit(c) + unit(b) - unit(a))


def question_credits(encoder: Encoder, questions: AnalogyQuestions,
                     batch_size: int = 256, chunk_size: int = 1024
                     ) -> np.ndarray:
  """Each question's credit in [0, 1] (1 right, 0 wrong, 1/k tied)."""
  texts = list(dict.fromkeys(
      [*questions.a, *questions.b, *questions.c, *questions.answers,
       *(t for cands in questions.candidates if cands for t in cands),
       *(questions.vocabulary or ())]))
  embeddings = l2_normalize(encoder(texts, batch_size), np.float64)
  index = {text: i for i, text in enumerate(texts)}
  rows = lambda items: embeddings[[index[t] for t in items]]
  targets = three_cos_add_targets(rows(questions.a), rows(questions.b),
                                  rows(questions.c))
  credits = np.zeros(len(questions))
  if questions.vocabulary is not None:
    vocabulary = rows(questions.vocabulary)
    position = {word: i for i, word in enumerate(questions.vocabulary)}
    for begin in range(0, len(questions), chunk_size):
      end = min(begin + chunk_size, len(questions))
      scores = targets[begin:end] @ vocabulary.T  # [chunk, vocabulary]
      for row, i in enumerate(range(begin, end)):
        for word in (questions.a[i], questions.b[i], questions.c[i]):
          scores[row, position[word]] = -np.inf
        credits[i] = tie_credit(scores[row], position[questions.answers[i]])
    return credits
  for i, candidates in enumerate(questions.candidates):
    scores = rows(candidates) @ targets[i]
    credits[i] = tie_credit(scores, candidates.index(questions.answers[i]))
  return credits


def evaluate_analogies(encoder: Encoder, questions: AnalogyQuestions,
                       batch_size: int = 256) -> Dict[str, object]:
  """Accuracy x 100 overall, per kind and per category (see module doc)."""
  if not len(questions):
    raise ValueError(f"{', '.join(questions.paths)} holds no analogy "
                     "question.")
  credits = question_credits(encoder, questions, batch_size)

  def summary(selected):
    selected = np.asarray(selected)
    return {"accuracy": 100.0 * float(np.mean(credits[selected])),
            "num_questions": int(len(selected))}

  by_category = collections.defaultdict(list)
  by_kind = collections.defaultdict(list)
  for i, (category, kind) in enumerate(zip(questions.categories,
                                           questions.kinds)):
    by_category[category].append(i)
    by_kind[kind].append(i)
  candidates = sorted({len(c) for c in questions.candidates if c} or
                      {len(questions.vocabulary or ()) - 3})
  return {"accuracy": 100.0 * float(np.mean(credits)),
          "num_questions": len(questions), "level": questions.level,
          "candidates_per_question": candidates,
          "kinds": {kind: summary(ids) for kind, ids in by_kind.items()},
          "categories": {name: summary(ids)
                         for name, ids in by_category.items()}}
