"""SentEval transfer classification on frozen embeddings (paper table 1).

The encoder is frozen; a logistic regression (scikit-learn) is trained on the
sentence embeddings, as SentEval does with `usepytorch=False`:

  * MR, CR, SUBJ, MPQA have no split: nested k-fold cross-validation (10
    outer folds, stratified); in each, the L2 strength is chosen by an inner
    k-fold on the training folds (`cross_validation_accuracy`).
  * TREC and MRPC have train and test: the L2 strength is chosen by k-fold on
    train, then the model trained on all of train is tested
    (`kfold_then_test_accuracy`).
  * SST-2 and SICK-E have train, dev and test: chosen on dev
    (`split_accuracy`). Without a test file, dev is the test set and the L2
    strength is chosen by k-fold on train instead.

Pair tasks (MRPC, SICK-E) classify `[u, v, |u - v|, u * v]` (`pair_features`,
the features of the paper's section 4.5.2 and of SBERT; SentEval's own MRPC
and SICK-E use only `[|u - v|, u * v]`).

Where SentEval differs, it is to keep the run short: the grid of inverse L2
strengths is C in {1/4, 1, 4} (SentEval: 2^-2 ... 2^3), chosen by 5 folds
wherever it is chosen by k-fold (SentEval: 10). Features are not
standardised, as in SentEval: the L2 strength then means what it means there
(standardising all-MiniLM-L6-v2's unit-norm embeddings cost MRPC 7 points).
"""
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import threadpoolctl

from cmlm.evaluation.encoders import Encoder
from cmlm.evaluation.transfer_readers import LabelledPairs
from cmlm.evaluation.transfer_readers import LabelledSentences

Examples = Union[LabelledSentences, LabelledPairs]
REGULARIZATION_GRID = (0.25, 1.0, 4.0)  # inverse L2 strength C
SEED = 1111  # SentEval's


def pair_features(u: np.ndarray, v: np.ndarray) -> np.ndarray:
  """`[u, v, |u - v|, u * v]`, `[n, 4 * dim]`, in that order."""
  return np.concatenate([u, v, np.abs(u - v), u * v], axis=1)


def embed_examples(encoder: Encoder, examples: Examples,
                   batch_size: int = 256) -> np.ndarray:
  """Sentence embeddings, or the pair features of a pair task."""
  if isinstance(examples, LabelledPairs):
    return pair_features(encoder(examples.sentences1, batch_size),
                         encoder(examples.sentences2, batch_size))
  return encoder(examples.sentences, batch_size)


def kfold_indices(labels: np.ndarray, k: int, seed: int = SEED
                  ) -> List[Tuple[np.ndarray, np.ndarray]]:
  """Stratified k folds: `(train indices, test indices)`, each example once
  a test example."""
  smallest = int(np.min(np.bincount(labels)[np.bincount(labels) > 0]))
  folds = max(2, min(k, smallest))  # a class rarer than k cannot fill k folds
  # scikit-learn is imported here, on first use, as in `train_classifier`:
  # every command loads this module through the registry, few fit a
  # classifier, and the import takes a fifth of a second of each start.
  from sklearn import model_selection  # pylint: disable=g-import-not-at-top
  splitter = model_selection.StratifiedKFold(folds, shuffle=True,
                                             random_state=seed)
  return list(splitter.split(np.zeros(len(labels)), labels))


def train_classifier(features: np.ndarray, labels: np.ndarray,
                     regularization: float):
  """A logistic regression with inverse L2 strength C (SentEval's)."""
  from sklearn import linear_model  # pylint: disable=g-import-not-at-top
  classifier = linear_model.LogisticRegression(C=regularization, max_iter=1000,
                                               random_state=SEED)
  # One BLAS thread: L-BFGS's many small products run 10-30x slower with
  # threads competing for busy cores (measured on a shared 2-core machine).
  with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
    return classifier.fit(features, labels)


def accuracy(classifier, features: np.ndarray, labels: np.ndarray) -> float:
  return 100.0 * float(np.mean(classifier.predict(features) == labels))


def choose_regularization(features: np.ndarray, labels: np.ndarray,
                          grid: Sequence[float], k: int
                          ) -> Tuple[float, float]:
  """The C of `grid` with the best k-fold accuracy, and that accuracy."""
  folds = kfold_indices(labels, k)
  scores = [np.mean([accuracy(train_classifier(features[a], labels[a], c),
                              features[b], labels[b]) for a, b in folds])
            for c in grid]
  best = int(np.argmax(scores))
  return grid[best], float(scores[best])


def cross_validation_accuracy(features: np.ndarray, labels: np.ndarray,
                              k: int = 10, inner_k: int = 5,
                              grid: Sequence[float] = REGULARIZATION_GRID
                              ) -> Dict[str, object]:
  """Nested k-fold: the mean test accuracy of the outer folds."""
  test_scores, dev_scores, chosen = [], [], []
  for train, test in kfold_indices(labels, k):
    c, dev = choose_regularization(features[train], labels[train], grid,
                                   inner_k)
    classifier = train_classifier(features[train], labels[train], c)
    test_scores.append(accuracy(classifier, features[test], labels[test]))
    dev_scores.append(dev)
    chosen.append(c)
  return {"accuracy": float(np.mean(test_scores)),
          "dev_accuracy": float(np.mean(dev_scores)),
          "folds": len(test_scores), "regularization": chosen}


def kfold_then_test_accuracy(train_x, train_y, test_x, test_y, k: int = 5,
                             grid: Sequence[float] = REGULARIZATION_GRID
                             ) -> Dict[str, object]:
  """C by k-fold on train, then trained on all of train, tested once."""
  c, dev = choose_regularization(train_x, train_y, grid, k)
  classifier = train_classifier(train_x, train_y, c)
  return {"accuracy": accuracy(classifier, test_x, test_y),
          "dev_accuracy": dev, "regularization": c}


def split_accuracy(train_x, train_y, dev_x, dev_y, test_x, test_y,
                   grid: Sequence[float] = REGULARIZATION_GRID
                   ) -> Dict[str, object]:
  """C chosen on dev, tested once on test."""
  classifiers = [train_classifier(train_x, train_y, c) for c in grid]
  dev_scores = [accuracy(m, dev_x, dev_y) for m in classifiers]
  best = int(np.argmax(dev_scores))
  return {"accuracy": accuracy(classifiers[best], test_x, test_y),
          "dev_accuracy": dev_scores[best], "regularization": grid[best]}


def evaluate_without_split(encoder: Encoder, examples: Examples,
                           batch_size: int = 256, k: int = 10
                           ) -> Dict[str, object]:
  """MR, CR, SUBJ, MPQA: nested k-fold cross-validation."""
  features = embed_examples(encoder, examples, batch_size)
  result = cross_validation_accuracy(features, examples.labels, k)
  result["num_examples"] = len(examples)
  return result


def evaluate_with_split(encoder: Encoder, train: Examples, test: Examples,
                        dev: Optional[Examples] = None,
                        batch_size: int = 256, k: int = 5
                        ) -> Dict[str, object]:
  """TREC, MRPC (no dev), SST-2, SICK-E (dev): trained on train, tested."""
  train_x = embed_examples(encoder, train, batch_size)
  test_x = embed_examples(encoder, test, batch_size)
  if dev is None:
    result = kfold_then_test_accuracy(train_x, train.labels, test_x,
                                      test.labels, k)
  else:
    result = split_accuracy(train_x, train.labels,
                            embed_examples(encoder, dev, batch_size),
                            dev.labels, test_x, test.labels)
  result.update(num_train=len(train), num_test=len(test))
  return result
