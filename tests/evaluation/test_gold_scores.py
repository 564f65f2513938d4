"""Gold scores that are not finite numbers are refused, naming file and line.

A `nan` or `inf` gold score used to be accepted and turned the task's
Spearman correlation into "n/a" with exit status 0.
"""
import pytest

import cmlm.evaluation  # noqa: F401  (Keras 2 before TensorFlow loads)
from cmlm.evaluation import sts_readers
from cmlm.evaluation.text_files import DataFormatError


@pytest.mark.parametrize("score", ["nan", "inf", "-inf", "NaN"])
def test_a_non_finite_sts_gold_score_names_the_file_and_line(tmp_path,
                                                             score):
  (tmp_path / "STS.input.news.txt").write_text("A b.\tC d.\nE f.\tG h.\n")
  gold = tmp_path / "STS.gs.news.txt"
  gold.write_text(f"4.2\n{score}\n")
  with pytest.raises(DataFormatError) as raised:
    sts_readers.read_sts_year(str(tmp_path))
  assert str(raised.value) == (f"{gold}, line 2: the gold score {score!r} "
                               "is not a finite number.")


def test_sts_benchmark_and_sick_scores_too(tmp_path):
  benchmark = tmp_path / "sts-test.csv"
  benchmark.write_text("main-news\tx\t2012\t1\tnan\tA b.\tC d.\n")
  with pytest.raises(DataFormatError, match="line 1: the score 'nan'"):
    sts_readers.read_sts_benchmark(str(benchmark))
  sick = tmp_path / "SICK_test.txt"
  sick.write_text("pair_ID\tsentence_A\tsentence_B\trelatedness_score\t"
                  "entailment_judgment\n1\tA b.\tC d.\tinf\tNEUTRAL\n")
  with pytest.raises(DataFormatError, match="line 2: the relatedness_score"):
    sts_readers.read_sick(str(sick))
