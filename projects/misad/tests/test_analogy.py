"""Analogy by 3CosAdd at word, phrase and sentence level (Li et al. 2020,
appendix A; Mikolov et al. 2013): readers, tie credit, per-category figures
and the eval tasks."""
import numpy as np
import pytest

import cmlm.evaluation  # noqa: F401  (Keras 2 before TensorFlow loads)
from cmlm.projects.misad import analogy
from cmlm.projects.misad import analogy_readers
from cmlm.evaluation import runner
from cmlm.evaluation import text_files
from cmlm.evaluation.task_data import EvalOptions

# ULR's layout: the gold answer always in the fourth column.
ULR_WORD_SEMANTIC = [
    "athens\tgreece\tparis\tfrance\teurope\tspain\titaly\trome",
    "paris\tfrance\trome\titaly\tspain\tgreece\teurope\tathens",
    "rome\titaly\tathens\tgreece\tfrance\tspain\tparis\teurope"]
ULR_WORD_SYNTACTIC = ["good\tbetter\tbad\tworse\tworst",
                      "big\tbigger\tsmall\tsmaller\tsmallest"]
ULR_SENTENCE = ["the train is big\tthe train is bigger than the car\t"
                "the cat is fast\tthe cat is faster than the dog\t"
                "the cat is fastest of them"]
MIKOLOV = """: capital-common-countries
Athens Greece Paris France
Paris France Rome Italy
Rome Italy Athens Greece
: gram3-comparative
good better bad worse
big bigger small smaller
"""


def _ulr_root(tmp_path):
  root = tmp_path / "ulr"
  for kind, level, lines in (("semantic", "word", ULR_WORD_SEMANTIC),
                             ("syntactic", "word", ULR_WORD_SYNTACTIC),
                             ("syntactic", "sentence", ULR_SENTENCE)):
    (root / kind / level).mkdir(parents=True)
    name = "capital-common" if kind == "semantic" else "good-better"
    (root / kind / level / f"{name}.txt").write_text("\n".join(lines) + "\n")
  return root


def constant_encoder(sentences, batch_size=256):
  del batch_size
  return np.ones([len(sentences), 8], np.float32)


def relation_encoder(vocabulary_size=64, dim=32, seed=0):
  """Embeddings where every analogy of the fixtures holds exactly: each
  text is a random 'entity' vector plus a 'relation' vector."""
  rng = np.random.default_rng(seed)
  relations = {"capital": np.zeros(dim), "country": rng.normal(size=dim),
               "plain": np.zeros(dim), "comparative": rng.normal(size=dim),
               "superlative": rng.normal(size=dim)}
  entities = {}
  countries = {"greece", "france", "italy", "spain", "europe"}
  pairs = {"athens": "greece", "paris": "france", "rome": "italy",
           "greece": "greece", "france": "france", "italy": "italy"}
  forms = {"good": ("good", "plain"), "better": ("good", "comparative"),
           "bad": ("bad", "plain"), "worse": ("bad", "comparative"),
           "worst": ("bad", "superlative"), "big": ("big", "plain"),
           "bigger": ("big", "comparative"), "small": ("small", "plain"),
           "smaller": ("small", "comparative"),
           "smallest": ("small", "superlative")}

  def vector(text):
    text = text.lower()
    if text in forms:
      entity, relation = forms[text]
    else:
      entity = pairs.get(text, text)
      relation = "country" if text in countries else "capital"
    if entity not in entities:
      entities[entity] = rng.normal(size=dim)
    return entities[entity] + 3 * relations[relation]

  def encode(sentences, batch_size=256):
    del batch_size
    return np.stack([vector(s) for s in sentences]).astype(np.float32)
  return encode


def test_constant_embeddings_score_chance_not_100(tmp_path):
  root = _ulr_root(tmp_path)
  words = analogy_readers.read_ulr(str(root), "word")
  result = analogy.evaluate_analogies(constant_encoder, words)
  assert result["kinds"]["semantic"]["accuracy"] == pytest.approx(100 / 5)
  assert result["kinds"]["syntactic"]["accuracy"] == pytest.approx(100 / 2)
  mikolov_file = tmp_path / "questions-words.txt"
  mikolov_file.write_text(MIKOLOV)
  questions = analogy_readers.read_mikolov(str(mikolov_file))
  result = analogy.evaluate_analogies(constant_encoder, questions)
  # every word of the file but a, b and c: 14 - 3 candidates
  assert len(questions.vocabulary) == 14
  assert result["accuracy"] == pytest.approx(100 / 11)


def test_exact_relations_score_100_per_category_and_level(tmp_path):
  root = _ulr_root(tmp_path)
  encoder = relation_encoder()
  result = analogy.evaluate_analogies(
      encoder, analogy_readers.read_ulr(str(root), "word"))
  assert result["accuracy"] == pytest.approx(100.0)
  assert result["categories"]["capital-common"]["num_questions"] == 3
  assert result["categories"]["good-better"]["num_questions"] == 2
  mikolov_file = tmp_path / "questions-words.txt"
  mikolov_file.write_text(MIKOLOV)
  result = analogy.evaluate_analogies(
      encoder, analogy_readers.read_mikolov(str(mikolov_file)))
  assert result["accuracy"] == pytest.approx(100.0)
  assert set(result["kinds"]) == {"semantic", "syntactic"}


def test_tie_credit_shares_the_top():
  assert analogy.tie_credit(np.array([0.5, 0.5, 0.1, 0.5]), 0) == (
      pytest.approx(1 / 3))
  assert analogy.tie_credit(np.array([0.5, 0.9, 0.1]), 0) == 0.0
  assert analogy.tie_credit(np.array([-np.inf, 0.2, 0.1]), 1) == 1.0


@pytest.mark.parametrize("text,message", [
    ("athens\tgreece\tparis\tfrance", "expected 5 or more non-empty"),
    ("athens\tgreece\t\tfrance\tspain", "expected 5 or more non-empty")])
def test_ulr_reader_rejects_malformed_lines_naming_file_and_line(
    tmp_path, text, message):
  path = tmp_path / "capital-common.txt"
  path.write_text(ULR_WORD_SEMANTIC[0] + "\n" + text + "\n")
  with pytest.raises(text_files.DataFormatError,
                     match=rf"capital-common.txt, line 2: {message}"):
    analogy_readers.read_ulr(str(path), "word")


@pytest.mark.parametrize("text,line,message", [
    (": family\nboy girl king\n", 2, "expected 4 space-separated words"),
    ("boy girl king queen\n", 1, "before any ': category' line"),
    (":\nboy girl king queen\n", 1, "needs a category name")])
def test_mikolov_reader_rejects_malformed_lines_naming_file_and_line(
    tmp_path, text, line, message):
  path = tmp_path / "questions-words.txt"
  path.write_text(text)
  with pytest.raises(text_files.DataFormatError,
                     match=rf"questions-words.txt, line {line}: .*{message}"):
    analogy_readers.read_mikolov(str(path))


def test_eval_tasks_read_every_level_and_report_categories(tmp_path):
  root = _ulr_root(tmp_path)
  mikolov_file = tmp_path / "questions-words.txt"
  mikolov_file.write_text(MIKOLOV)
  report = runner.run_evaluation(
      "relations", ["ulr_word", "ulr_sentence", "word_analogy"],
      EvalOptions(report_dir=str(tmp_path / "report"), show_progress=False),
      task_data={"ulr_word": str(root), "ulr_sentence": str(root),
                 "word_analogy": str(mikolov_file)},
      encoder=relation_encoder())
  tasks = report["tasks"]
  assert tasks["ulr_word"]["level"] == "word"
  assert tasks["ulr_sentence"]["num_questions"] == 1
  assert tasks["word_analogy"]["accuracy"] == pytest.approx(100.0)
  markdown = (tmp_path / "report" / "report.md").read_text()
  assert "| capital-common-countries | 100.00 | 3 |" in markdown


def test_missing_level_is_a_clear_error(tmp_path):
  root = _ulr_root(tmp_path)
  with pytest.raises(FileNotFoundError, match="no phrase-level analogy"):
    analogy_readers.read_ulr(str(root), "phrase")


def test_gensim_questions_words_reads_when_installed():
  path = analogy_readers.gensim_questions_words()
  if path is None:
    pytest.skip("gensim (requirements-test.txt) is not installed.")
  questions = analogy_readers.read_mikolov(path)
  assert len(questions) == 19544 and len(set(questions.categories)) == 14
