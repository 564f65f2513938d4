"""Readers of the benchmark formats: the shipped files parse, the formats
without shipped data parse from inline fixtures, and a bad line or a missing
file is one clear error naming the file (and the line)."""
import os

import numpy as np
import pytest

import cmlm.evaluation  # noqa: F401  (Keras 2 before TensorFlow loads)

from cmlm.evaluation import bitext_readers
from cmlm.evaluation import sts_readers
from cmlm.evaluation import task_data
from cmlm.evaluation import text_files
from cmlm.evaluation import transfer_readers
from tests.helpers import SHARED_EVAL_DATA as DEFAULT_DATA_DIR

EVAL = DEFAULT_DATA_DIR
needs_shared = pytest.mark.skipif(not os.path.isdir(EVAL),
                                  reason="../shared/data/eval is absent")


@needs_shared
def test_shipped_sts_benchmark_and_sick_parse():
  dev = sts_readers.read_sts_benchmark(f"{EVAL}/sts/STSBenchmark/sts-dev.csv")
  assert len(dev) == 1500
  assert dev.sentences1[0] == "a man with a hard hat is dancing ."
  assert dev.scores[0] == 5.0 and 0 <= dev.scores.min() <= dev.scores.max() <= 5
  trial = sts_readers.read_sick(f"{EVAL}/sts/SICK/SICK_trial.txt")
  assert len(trial) == 500
  assert 1 <= trial.scores.min() <= trial.scores.max() <= 5
  entailment = transfer_readers.read_sick_entailment(
      f"{EVAL}/sts/SICK/SICK_train.txt")
  assert len(entailment) == 4500 and set(entailment.labels) == {0, 1, 2}


@needs_shared
def test_shipped_transfer_files_parse():
  cr = transfer_readers.read_polarity(f"{EVAL}/transfer/CR/custrev.pos",
                                      f"{EVAL}/transfer/CR/custrev.neg")
  # custrev.pos/.neg have 2407 + 1368 lines, 4 of them blank.
  assert np.bincount(cr.labels).tolist() == [1366, 2405]
  mrpc = transfer_readers.read_mrpc(
      f"{EVAL}/transfer/MRPC/msr_paraphrase_train.txt")
  assert len(mrpc) == 4076 and mrpc.sentences1[0].startswith("Amrozi accused")
  trec = transfer_readers.read_trec(f"{EVAL}/transfer/TREC/train_5500.label")
  assert len(trec) == 5452 and len(set(trec.labels)) == 6  # coarse classes
  assert trec.sentences[0] == ("How did serfdom develop in and then leave "
                               "Russia ?")
  sst = transfer_readers.read_sst(f"{EVAL}/transfer/SST/binary/sentiment-dev")
  assert len(sst) == 872 and set(sst.labels) == {0, 1}


@needs_shared
def test_shipped_tatoeba_is_line_aligned():
  pairs = bitext_readers.read_tatoeba(f"{EVAL}/tatoeba", ["deu", "fra"])
  german, english = pairs["deu"]
  assert len(german) == len(english) == 1000
  assert english[0] == "Mary said she didn't know where Tom was."


def test_sts_year_skips_unscored_pairs_and_keeps_extra_columns(tmp_path):
  (tmp_path / "STS.input.news.txt").write_text(
      "a cat\ta dog\textra\nthe sun\tthe moon\nred\tblue\n")
  (tmp_path / "STS.gs.news.txt").write_text("4.2\n\n1\n")
  (tmp_path / "STS.input.forum.txt").write_text("x\ty\n")
  (tmp_path / "STS.gs.forum.txt").write_text("3\n")
  datasets = sts_readers.read_sts_year(str(tmp_path))
  assert sorted(datasets) == ["forum", "news"]
  news = datasets["news"]
  assert news.sentences1 == ["a cat", "red"] and news.sentences2 == ["a dog",
                                                                     "blue"]
  assert news.scores.tolist() == [4.2, 1.0]


def test_sts_year_errors_name_the_file_and_line(tmp_path):
  (tmp_path / "STS.input.news.txt").write_text("a\tb\nno tab here\n")
  (tmp_path / "STS.gs.news.txt").write_text("1\n2\n")
  with pytest.raises(text_files.DataFormatError,
                     match=r"STS.input.news.txt, line 2: expected 2 "
                     "tab-separated fields"):
    sts_readers.read_sts_year(str(tmp_path))
  (tmp_path / "STS.gs.news.txt").write_text("1\nfive\n")
  with pytest.raises(ValueError, match=r"STS.gs.news.txt, line 2: the gold "
                     "score 'five' is not a number"):
    sts_readers.read_sts_year(str(tmp_path))
  os.remove(tmp_path / "STS.gs.news.txt")
  with pytest.raises(FileNotFoundError, match=r"STS.gs.news.txt does not "
                     "exist; expected the gold scores of STS.input.news.txt"):
    sts_readers.read_sts_year(str(tmp_path))


def test_sts_benchmark_malformed_line_and_missing_file(tmp_path):
  path = tmp_path / "sts-test.csv"
  path.write_text("g\tf\t2012\t0001\t4.0\ta\tb\tlicense\n"
                  "g\tf\t2012\t0002\t3.0\tonly one sentence\n")
  with pytest.raises(ValueError, match=r"sts-test.csv, line 2: expected 7 "
                     r"tab-separated fields \(genre, .*\), found 6"):
    sts_readers.read_sts_benchmark(str(path))
  with pytest.raises(FileNotFoundError, match="nothing.csv does not exist"):
    sts_readers.read_sts_benchmark(str(tmp_path / "nothing.csv"))


def test_sick_columns_are_found_by_header_name(tmp_path):
  path = tmp_path / "SICK.txt"  # the full release orders columns differently
  path.write_text("pair_ID\tsentence_A\tsentence_B\tentailment_label\t"
                  "relatedness_score\n1\tA b\tC d\tNEUTRAL\t3.5\n"
                  "2\tE f\tG h\tcontradiction\t1.5\n")
  pairs = sts_readers.read_sick(str(path))
  assert pairs.scores.tolist() == [3.5, 1.5]
  entailment = transfer_readers.read_sick_entailment(str(path))
  assert entailment.labels.tolist() == [1, 0]
  path.write_text("pair_ID\tsentence_A\tsentence_B\n1\ta\tb\n")
  with pytest.raises(ValueError, match=r"SICK.txt, line 1: the header has no "
                     "'relatedness_score' column"):
    sts_readers.read_sick(str(path))


def test_polarity_files_read_latin1_like_senteval(tmp_path):
  (tmp_path / "rt-polarity.pos").write_bytes(b"a caf\xe9 film\n\nwonderful\n")
  (tmp_path / "rt-polarity.neg").write_bytes("dull na\u00efve\n".encode())
  positive, negative = task_data.polarity_files(str(tmp_path))
  examples = transfer_readers.read_polarity(positive, negative)
  assert examples.sentences == ["a caf\u00e9 film", "wonderful",
                                "dull na\u00efve"]
  assert examples.labels.tolist() == [1, 1, 0]
  subj = tmp_path / "subj"
  subj.mkdir()
  (subj / "subj.objective").write_text("the plot\n")
  (subj / "subj.subjective").write_text("i loved it\n")
  assert task_data.polarity_files(str(subj)) == (
      str(subj / "subj.objective"), str(subj / "subj.subjective"))
  (tmp_path / "empty").mkdir()
  with pytest.raises(FileNotFoundError, match="empty holds no class files"):
    task_data.polarity_files(str(tmp_path / "empty"))


def test_sst_trec_mrpc_errors_name_the_line(tmp_path):
  sst = tmp_path / "sentiment-train"
  sst.write_text("good film\t1\nbad film\t2\n")
  with pytest.raises(ValueError, match=r"sentiment-train, line 2: the label "
                     "'2' is not 0 or 1"):
    transfer_readers.read_sst(str(sst))
  trec = tmp_path / "TREC_10.label"
  trec.write_bytes(b"NUM:dist How far ?\nLOC:city Where is Mal\xe9 ?\n"
                   b"What is this ?\n")
  with pytest.raises(ValueError, match=r"TREC_10.label, line 3: expected "
                     "'COARSE:fine question'"):
    transfer_readers.read_trec(str(trec))
  trec.write_bytes(b"NUM:dist How far ?\nLOC:city Where is Mal\xe9 ?\n")
  questions = transfer_readers.read_trec(str(trec)).sentences
  assert questions[1] == "Where is Mal\u00e9 ?"
  mrpc = tmp_path / "msr_paraphrase_test.txt"
  mrpc.write_text("\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
                  "1\t1\t2\ta\tb\n0\t3\t4\tc\n")
  with pytest.raises(ValueError, match=r"msr_paraphrase_test.txt, line 3: "
                     "expected 5 tab-separated fields"):
    transfer_readers.read_mrpc(str(mrpc))


def test_mining_corpus_formats_and_gold_errors(tmp_path):
  bucc = tmp_path / "de-en.sample.de"
  bucc.write_text("de-1\tein Hund\nde-2\teine Katze\n")
  plain = tmp_path / "english.txt"
  plain.write_text("a cat\na dog\n")
  source = bitext_readers.read_mining_corpus(str(bucc))
  target = bitext_readers.read_mining_corpus(str(plain))
  assert source.ids == ["de-1", "de-2"] and target.ids == ["1", "2"]
  gold = tmp_path / "gold"
  gold.write_text("de-1\t2\nde-2\t1\n")
  assert bitext_readers.read_gold_pairs(str(gold), source, target) == [
      (0, 1), (1, 0)]
  gold.write_text("de-1\t2\nde-3\t1\n")
  with pytest.raises(ValueError, match=r"gold, line 2: the source id 'de-3' "
                     "is not in"):
    bitext_readers.read_gold_pairs(str(gold), source, target)
  bucc.write_text("de-1\tein Hund\nde-1\teine Katze\n")
  with pytest.raises(ValueError, match=r"de-en.sample.de, line 2: the id "
                     "'de-1' was already used on line 1"):
    bitext_readers.read_mining_corpus(str(bucc))


def test_tatoeba_misaligned_and_non_utf8_files(tmp_path):
  (tmp_path / "tatoeba.fra-eng.fra").write_text("un\ndeux\n")
  (tmp_path / "tatoeba.fra-eng.eng").write_text("one\n")
  with pytest.raises(ValueError, match=r"tatoeba.fra-eng.eng, line 2: 1 "
                     "lines for 2"):
    bitext_readers.read_tatoeba(str(tmp_path))
  (tmp_path / "tatoeba.fra-eng.eng").write_bytes(b"one\ntw\xff\n")
  with pytest.raises(ValueError, match=r"tatoeba.fra-eng.eng, line 2: is not "
                     "UTF-8"):
    bitext_readers.read_tatoeba(str(tmp_path))
  with pytest.raises(FileNotFoundError, match="tatoeba.deu-eng.deu does not "
                     "exist"):
    bitext_readers.read_tatoeba(str(tmp_path), ["deu"])
