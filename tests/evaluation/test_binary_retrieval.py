"""Sparse binary vectors (Kiros et al. 2020, 4.2): Hamming / Jaccard
retrieval and STS, beside cosine, in `cmlm eval --binary_threshold`."""
import numpy as np
import pytest

from cmlm.evaluation import binary_retrieval
from cmlm.evaluation import runner
from cmlm.evaluation.task_data import EvalOptions
from tests.evaluation.test_methods import lookup_encoder
from tests.evaluation.test_runner import _senteval_layout
from tests.evaluation.test_runner import bag_of_words_encoder


def test_hamming_and_jaccard_of_a_hand_made_example():
  a = np.array([[1, 1, 0, 0, 0]], np.float32)
  b = np.array([[1, 0, 1, 0, 0], [1, 1, 1, 1, 0], [0, 0, 0, 0, 0]],
               np.float32)
  # Hamming: 2, 2, 2 differing bits; Jaccard: 1/3, 2/4, 0/2.
  np.testing.assert_allclose(
      binary_retrieval.binary_scores(a, b, "hamming"), [[-2, -2, -2]])
  np.testing.assert_allclose(
      binary_retrieval.binary_scores(a, b, "jaccard"), [[1 / 3, 0.5, 0.0]])
  empty = np.zeros([1, 5], np.float32)
  assert binary_retrieval.binary_scores(empty, empty, "jaccard")[0, 0] == 0
  with pytest.raises(ValueError, match="similarity must be one of"):
    binary_retrieval.binary_scores(a, b, "cosine")


def test_ties_rank_at_their_mean_place_not_first():
  # Hamming: the gold (candidate 0) and candidate 1 are both 1 bit away.
  query = np.array([[1, 1, 0, 0]], np.float32)
  candidates = np.array([[1, 1, 1, 0], [1, 1, 0, 1], [0, 0, 1, 1]],
                        np.float32)
  # A first-wins argmax would give the gold (placed first) the whole credit.
  assert binary_retrieval.binary_retrieval_accuracy(
      query, candidates, "hamming") == pytest.approx(50.0)
  # A collapsed encoder (every code empty) ranks at chance, 1 in n.
  empty = np.zeros([4, 6], np.float32)
  for similarity in binary_retrieval.SIMILARITIES:
    assert binary_retrieval.binary_retrieval_accuracy(
        empty, empty, similarity) == pytest.approx(25.0)
  # A tied copy of the gold text counts as the gold.
  assert binary_retrieval.binary_retrieval_accuracy(
      query, candidates, "hamming", ["x", "x", "y"]) == pytest.approx(100.0)


@pytest.mark.parametrize("similarity", binary_retrieval.SIMILARITIES)
def test_paired_scores_are_the_diagonal_of_the_pairwise_ones(similarity):
  codes = (np.random.default_rng(0).random([2, 7, 12]) > 0.7).astype(
      np.float32)
  codes[0, 3] = codes[1, 3] = 0  # an empty pair: Jaccard 0
  np.testing.assert_allclose(
      binary_retrieval.paired_binary_scores(codes[0], codes[1], similarity),
      np.diag(binary_retrieval.binary_scores(codes[0], codes[1], similarity)))


def test_codes_and_active_fraction_follow_the_threshold():
  embeddings = np.array([[0.0, 0.5, 1.0, 2.0], [3.0, 0.9, 1.0, 0.0]])
  codes = binary_retrieval.binary_codes(embeddings, 1.0)
  np.testing.assert_array_equal(codes, [[0, 0, 1, 1], [1, 0, 1, 0]])
  fractions = [binary_retrieval.active_fraction(
      binary_retrieval.binary_codes(embeddings, t)) for t in (0, 1, 2.5, 9)]
  assert fractions == [1.0, 0.5, 0.125, 0.0]


def test_tatoeba_retrieves_by_hamming_and_jaccard():
  # f0/e0 share units {0, 1}; f1/e1 share {2, 3}; f2 = {4}; e2 is active
  # everywhere, a "hub".
  table = {"f0": [2, 2, 0, 0, 0], "e0": [2, 2, 0, 0, 0],
           "f1": [0, 0, 2, 2, 0], "e1": [0, 0, 2, 2, 0],
           "f2": [0, 0, 0, 0, 2], "e2": [2, 2, 2, 2, 2]}
  result = binary_retrieval.evaluate_tatoeba_binary(
      lookup_encoder(table), {"xxx": (["f0", "f1", "f2"],
                                      ["e0", "e1", "e2"])}, threshold=1.0)
  assert result["active_fraction"] == pytest.approx(14 / 30)
  # Jaccard: f2 -> e2 (1/5 vs 0) is found; e2 -> f0 (2/5 vs f2's 1/5) not.
  assert result["jaccard"] == pytest.approx((100 + 200 / 3) / 2)
  # Hamming: f2 -> e0 (3 bits vs e2's 4) and e2 -> f0 (3 vs f2's 4) miss.
  assert result["hamming"] == pytest.approx((200 / 3 + 200 / 3) / 2)


def test_the_eval_report_has_binary_scores_beside_cosine(tmp_path):
  data_dir = _senteval_layout(tmp_path / "data")
  options = EvalOptions(model="toy", report_dir=str(tmp_path / "report"),
                        binary_threshold=0.5, show_progress=False)
  report = runner.run_evaluation("toy", ["sts-b"], options, data_dir,
                                 encoder=bag_of_words_encoder)
  sts_b = report["tasks"]["sts-b"]
  assert np.isfinite(sts_b["spearman"])
  binary = sts_b["binary"]
  assert binary["threshold"] == 0.5 and 0 < binary["active_fraction"] < 1
  assert binary["jaccard"] > 50  # word overlap is what the gold scores
  without = runner.run_evaluation(
      "toy", ["sts-b"], EvalOptions(model="toy", show_progress=False,
                                    report_dir=str(tmp_path / "r2")),
      data_dir, encoder=bag_of_words_encoder)
  assert "binary" not in without["tasks"]["sts-b"]
