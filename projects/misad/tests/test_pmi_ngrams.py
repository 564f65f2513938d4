"""PMI n-gram extraction (Li et al. 2020, section 3.1): both formulas
against hand computations, marking, streaming output and determinism."""
import math
import re

import pytest

from cmlm.projects.misad import pmi_ngrams

# 7 sentences, 29 words, 22 bigrams; 'new york' 5 times, 'new' 6, 'york' 5.
TOY = ["new york is big", "i love new york", "new york new york",
       "we left new york", "the new car is red and fast", "is big",
       "the car is big"]


def test_toy_corpus_counts():
  counts = pmi_ngrams.count_ngrams([s.split() for s in TOY], 2)
  assert sum(counts[0].values()) == 29
  assert sum(counts[1].values()) == 22
  assert counts[1][("new", "york")] == 5
  assert counts[0][("new",)] == 6 and counts[0][("york",)] == 5
  # n-grams never cross sentences: 'big i' would if they did.
  assert counts[1][("big", "i")] == 0


def test_paper_formula_equals_hand_computation():
  counts = pmi_ngrams.count_ngrams([s.split() for s in TOY], 2)
  scores = pmi_ngrams.pmi_scores(counts, "paper")
  # 1/|w| (log P(w) - log P(new) - log P(york))
  expected = 0.5 * (math.log(5 / 22) - math.log(6 / 29) - math.log(5 / 29))
  assert scores[("new", "york")] == pytest.approx(expected, rel=1e-12)
  expected_is_big = 0.5 * (math.log(3 / 22) - math.log(4 / 29)
                           - math.log(3 / 29))
  assert scores[("is", "big")] == pytest.approx(expected_is_big, rel=1e-12)


def test_code_formula_equals_hand_computation():
  counts = pmi_ngrams.count_ngrams([s.split() for s in TOY], 3)
  scores = pmi_ngrams.pmi_scores(counts, "code")
  # raw counts, no 1/|w|: log c(w) - log c(new) - log c(york)
  assert scores[("new", "york")] == pytest.approx(
      math.log(5) - math.log(6) - math.log(5), rel=1e-12)
  assert scores[("york", "new", "york")] == pytest.approx(
      math.log(1) - 2 * math.log(5) - math.log(6), rel=1e-12)


def test_min_count_drops_rare_ngrams():
  counts = pmi_ngrams.count_ngrams([s.split() for s in TOY], 2)
  scores = pmi_ngrams.pmi_scores(counts, "paper", min_count=2)
  assert ("new", "york") in scores and ("love", "new") not in scores


def test_marking_is_longest_first_and_never_overlaps():
  ngrams = {("new", "york"), ("york", "is"), ("new", "york", "city")}
  words = "new york city is new york is big".split()
  spans = pmi_ngrams.mark_sentence(words, ngrams, 6)
  assert spans == [(0, 3), (4, 6)]
  line = pmi_ngrams.format_marked(words, spans)
  assert line == "(new york city) is (new york) is big"
  assert pmi_ngrams.parse_marked(line) == (words, spans)


@pytest.mark.parametrize("line", ["(new york is big", "new york) is",
                                  "a (b (c) d)", "a () b"])
def test_parse_rejects_malformed_marks(line):
  with pytest.raises(ValueError):
    pmi_ngrams.parse_marked(line)


def test_extract_streams_documents_and_is_deterministic(tmp_path, capsys):
  corpus = tmp_path / "corpus"
  corpus.mkdir()
  text = ". ".join(s.capitalize() for s in TOY) + "."
  (corpus / "a.txt").write_text(text + "\n\n" + text)
  (corpus / "b.txt").write_text("Red wine, red wine. Red wine is red.\n")
  out1, out2 = tmp_path / "one.txt", tmp_path / "two.txt"
  config = pmi_ngrams.PmiConfig(max_ngram_length=3, min_count=2, top_k=3)
  stats = pmi_ngrams.extract_ngrams(str(corpus), str(out1), config,
                                    progress_seconds=0)
  pmi_ngrams.extract_ngrams(str(corpus), str(out2), config)
  assert out1.read_bytes() == out2.read_bytes()
  assert stats.documents == 2  # one document per file
  text = out1.read_text()
  first, second = text.split("\n\n")
  # File a.txt is one document: what is marked is its own top 3.
  counts = pmi_ngrams.count_ngrams([s.split() for s in TOY + TOY], 3)
  top = pmi_ngrams.top_ngrams(pmi_ngrams.pmi_scores(counts, "paper", 2), 3)
  marked = {tuple(m.split()) for m in re.findall(r"\(([^)]*)\)", first)}
  assert marked and marked <= top
  assert "(red wine) (red wine)" in second
  # Documents are separated by a blank line, the punctuation is gone.
  assert "\n\n" in text and "," not in text
  assert "ngrams: wrote" in capsys.readouterr().err
  assert not list(tmp_path.glob("*.tmp-*"))


def test_top_k_keeps_the_best_scores_with_ties_by_text():
  scores = {("b", "c"): 1.0, ("a", "b"): 1.0, ("c", "d"): 2.0}
  assert pmi_ngrams.top_ngrams(scores, 2) == {("c", "d"), ("a", "b")}


def test_bad_config_is_one_clear_error(tmp_path):
  with pytest.raises(ValueError, match="formula must be one of"):
    pmi_ngrams.extract_ngrams(str(tmp_path), str(tmp_path / "o.txt"),
                              pmi_ngrams.PmiConfig(formula="pmi"))
  assert not (tmp_path / "o.txt").exists()
