"""STS, transfer classification and Tatoeba retrieval: properties of the
paper's protocols (tables 1, 2, 5) on toy encoders written here."""
import numpy as np
import pytest

import cmlm.evaluation  # noqa: F401  (Keras 2 before TensorFlow loads)

from cmlm.evaluation import retrieval
from cmlm.evaluation import sts
from cmlm.evaluation import transfer
from cmlm.evaluation.sts_readers import ScoredPairs
from cmlm.evaluation.transfer_readers import LabelledSentences


def lookup_encoder(table):
  """An Encoder that looks each sentence up in `table` (sentence -> vector)."""
  def encode(sentences, batch_size=256):
    del batch_size
    return np.array([table[s] for s in sentences], np.float32)
  return encode


def bag_of_words_encoder(sentences, batch_size=256):
  """An Encoder hashing each word to one of 64 dimensions."""
  del batch_size
  vectors = np.zeros([len(sentences), 64], np.float32)
  for row, sentence in enumerate(sentences):
    for word in sentence.split():
      vectors[row, sum(map(ord, word)) % 64] += 1
  return vectors


def _angle_pairs(gold):
  """Pairs whose cosine similarity rises with the gold score."""
  table, first, second = {}, [], []
  for i, score in enumerate(gold):
    angle = (1 - score / 5) * np.pi / 2
    table[f"a{i}"] = [1.0, 0.0]
    table[f"b{i}"] = [np.cos(angle), np.sin(angle)]
    first.append(f"a{i}")
    second.append(f"b{i}")
  return table, first, second


def test_spearman_of_a_perfect_encoder_is_100_and_of_a_shuffled_one_near_0():
  gold = np.random.default_rng(0).uniform(0, 5, size=2000)
  table, first, second = _angle_pairs(gold)
  perfect = sts.evaluate_pairs(lookup_encoder(table),
                               ScoredPairs("toy", first, second, gold, "toy"))
  assert perfect["spearman"] == pytest.approx(100.0)
  assert perfect["num_pairs"] == 2000
  shuffled_gold = np.random.default_rng(1).permutation(gold)
  shuffled = sts.evaluate_pairs(
      lookup_encoder(table), ScoredPairs("toy", first, second, shuffled_gold,
                                         "toy"))
  assert abs(shuffled["spearman"]) < 6


def test_sts_year_reports_the_mean_and_the_size_weighted_mean():
  gold = np.linspace(0, 5, 30)
  table, first, second = _angle_pairs(gold)
  reversed_pairs = ScoredPairs("reversed", first[:10], second[:10],
                               gold[:10][::-1].copy(), "r")
  datasets = {"good": ScoredPairs("good", first, second, gold, "g"),
              "reversed": reversed_pairs}
  result = sts.evaluate_sts_year(lookup_encoder(table), datasets)
  assert result["datasets"]["good"]["spearman"] == pytest.approx(100)
  assert result["datasets"]["reversed"]["spearman"] == pytest.approx(-100)
  assert result["spearman"] == pytest.approx(0)
  assert result["spearman_weighted"] == pytest.approx((30 - 10) / 40 * 100)


def test_pair_features_are_u_v_absolute_difference_product_in_order():
  u = np.array([[1.0, 2.0]])
  v = np.array([[3.0, 5.0]])
  np.testing.assert_array_equal(transfer.pair_features(u, v),
                                [[1, 2, 3, 5, 2, 3, 3, 10]])


def test_kfold_uses_every_example_exactly_once_as_test():
  labels = np.array([0] * 30 + [1] * 17 + [2] * 6)
  folds = transfer.kfold_indices(labels, 10)
  assert len(folds) == 6  # the rarest class (6) cannot fill 10 folds
  tested = np.concatenate([test for _, test in folds])
  assert sorted(tested) == list(range(len(labels)))
  for train, test in folds:
    assert not set(train) & set(test)
    assert len(train) + len(test) == len(labels)


def test_cross_validation_separates_signal_from_noise():
  rng = np.random.default_rng(0)
  features = rng.normal(size=(200, 8))
  signal = (features[:, 0] > 0).astype(np.int64)
  noise = rng.integers(0, 2, size=200)
  assert transfer.cross_validation_accuracy(features, signal)["accuracy"] > 95
  chance = transfer.cross_validation_accuracy(features, noise, k=5, inner_k=2)
  assert 30 < chance["accuracy"] < 70
  assert chance["folds"] == 5


def _reviews(count, seed):
  rng = np.random.default_rng(seed)
  words = ["film", "plot", "actor", "scene", "story"]
  sentences, labels = [], []
  for _ in range(count):
    label = int(rng.integers(0, 2))
    sentences.append(" ".join(rng.choice(words, 3)) +
                     (" great" if label else " awful"))
    labels.append(label)
  return LabelledSentences(sentences, np.array(labels), ("neg", "pos"), "toy")


@pytest.mark.parametrize("with_dev", [True, False])
def test_split_protocols_train_on_train_and_test_on_test(with_dev):
  result = transfer.evaluate_with_split(
      bag_of_words_encoder, _reviews(120, 0), _reviews(50, 1),
      _reviews(40, 2) if with_dev else None)
  assert result["accuracy"] == 100.0
  assert (result["num_train"], result["num_test"]) == (120, 50)
  assert result["regularization"] in transfer.REGULARIZATION_GRID


def test_tatoeba_accuracy_is_measured_in_both_directions():
  # Angles: foreign f1 lies nearer to e0 than to its own e1.
  angles = {"f0": 0, "e0": 8, "f1": 20, "e1": 45, "f2": 90, "e2": 95}
  table = {s: [np.cos(np.radians(a)), np.sin(np.radians(a))]
           for s, a in angles.items()}
  result = retrieval.evaluate_tatoeba(
      lookup_encoder(table), {"xxx": (["f0", "f1", "f2"], ["e0", "e1", "e2"])})
  language = result["languages"]["xxx"]
  assert language["xxx_to_eng"] == pytest.approx(200 / 3)
  assert language["eng_to_xxx"] == pytest.approx(100)
  assert result["accuracy"] == pytest.approx((200 / 3 + 100) / 2)


def test_tatoeba_counts_a_copy_of_the_translation_as_found():
  table = {"un": [1, 0], "deux": [0, 1], "one": [1, 0.1]}
  result = retrieval.tatoeba_accuracy(lookup_encoder(table), ["un", "deux",
                                                              "un"],
                                      ["one", "deux", "one"])
  assert result["xxx_to_eng"] == 100 and result["eng_to_xxx"] == 100


def test_principal_component_removal_removes_the_shared_direction():
  rng = np.random.default_rng(0)
  offset = np.zeros(16)
  offset[3] = 10.0  # a "language" direction shared by every sentence
  embeddings = rng.normal(size=(100, 16)) + offset
  removed = retrieval.remove_first_principal_component(embeddings)
  assert np.max(np.abs(removed[:, 3])) < 1.0
  first = np.linalg.svd(removed, full_matrices=False)[2][0]
  before = np.linalg.svd(embeddings, full_matrices=False)[2][0]
  assert abs(first @ before) < 1e-3  # that component is gone


def test_tatoeba_ties_share_their_places_whatever_the_order():
  # Every sentence gets one vector: a collapsed encoder finds 1 in n.
  constant = lookup_encoder({s: [1.0, 0.0] for s in "abcdwxyz"})
  result = retrieval.tatoeba_accuracy(constant, list("abcd"), list("wxyz"))
  assert result["accuracy"] == pytest.approx(25.0)
  # The gold tied with one other candidate, placed first: half the credit.
  credits = retrieval.top1_credits(np.array([[1.0, 0.0]]),
                                   np.array([[2.0, 0.0], [3.0, 0.0]]))
  np.testing.assert_allclose(credits, [0.5])
