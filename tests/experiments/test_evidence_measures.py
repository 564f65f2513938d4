"""The protocol's dev measures: held-out splits, the Tatoeba dev half, the
overlap filter between training bitext and evaluation sentences."""
import numpy as np
import pytest

from cmlm.evaluation import statistics
from cmlm.evaluation.transfer_readers import LabelledSentences
from cmlm.experiments import evidence_measures as measures


def test_training_pairs_that_hold_an_evaluation_sentence_are_left_out():
  pairs = [("The cat sleeps.", "Le chat dort."), ("A dog.", "Un chien."),
           ("Hello", "Bonjour  le  monde")]
  kept, removed = measures.without_overlap(
      pairs, {measures.normalized(t) for t in ("the cat SLEEPS.",
                                               "bonjour le monde")})
  assert kept == [("A dog.", "Un chien.")] and removed == 2


def test_tatoeba_dev_and_test_halves_split_each_language():
  pairs = {"fra": ([f"f{i}" for i in range(5)], [f"e{i}" for i in range(5)])}
  dev = measures.tatoeba_half(pairs, "dev")["fra"]
  test = measures.tatoeba_half(pairs, "test")["fra"]
  assert dev == (["f0", "f1"], ["e0", "e1"])
  assert test == (["f2", "f3", "f4"], ["e2", "e3", "e4"])
  with pytest.raises(ValueError, match="half must be"):
    measures.tatoeba_half(pairs, "train")


def test_held_out_dev_split_is_fixed_and_disjoint_from_the_fitting_part():
  examples = LabelledSentences([f"s{i}" for i in range(50)],
                               np.arange(50) % 2, ["a", "b"], "x.txt")
  fit, dev = measures.held_out(examples)
  again_fit, again_dev = measures.held_out(examples)
  assert dev.sentences == again_dev.sentences and len(dev) == 5
  assert not set(fit.sentences) & set(dev.sentences)
  assert len(fit) + len(dev) == 50
  assert all(int(s[1:]) % 2 == label for s, label in zip(dev.sentences,
                                                         dev.labels))


def test_tatoeba_sample_credits_each_query_in_both_directions():
  vectors = {"f0": [1.0, 0.0], "f1": [0.0, 1.0], "e0": [1.0, 0.1],
             "e1": [1.0, 0.0]}
  encoder = lambda texts, batch_size=256: np.array([vectors[t]
                                                    for t in texts])
  sample = measures.tatoeba_sample(encoder, {"xx": (["f0", "f1"],
                                                    ["e0", "e1"])})
  # f0 -> e1, f1 -> e0 (both wrong); e0 -> f0 (right), e1 -> f0 (wrong).
  assert sample["values"] == [0.0, 0.0, 1.0, 0.0]
  assert statistics.statistic(sample) == pytest.approx(25.0)
