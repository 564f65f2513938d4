"""LF, CRLF and CR line ends read alike in every reader of text files.

A corpus written with CR-only line ends used to be read as one document
(one line); here each reader is given the same content with the three line
ends and must return the same thing: the corpus (documents and pairs), the
bitext (TSV and line-aligned), NLI, `encode`'s input and eval's readers.
"""
import io

import pytest

import cmlm.data_pipelines  # noqa: F401  (Keras 2 before TensorFlow loads)
from cmlm.data_pipelines import bitext
from cmlm.data_pipelines import corpus
from cmlm.data_pipelines import nli_data
from cmlm.data_pipelines import text_lines
from cmlm.evaluation import sts_readers
from cmlm.evaluation import text_files
from cmlm.inference import text_inputs

ENDINGS = {"LF": b"\n", "CRLF": b"\r\n", "CR": b"\r"}


def _write(tmp_path, name, lines, ending):
  path = tmp_path / name
  path.write_bytes(ending.join(line.encode("utf-8") for line in lines) +
                   ending)
  return str(path)


def _read_with_each_ending(tmp_path, name, lines, read):
  results = {}
  for label, ending in ENDINGS.items():
    directory = tmp_path / label
    directory.mkdir(exist_ok=True)
    results[label] = read(_write(directory, name, lines, ending))
  assert results["CRLF"] == results["LF"]
  assert results["CR"] == results["LF"]
  return results["LF"]


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 1 << 20])
def test_iter_lines_splits_across_chunks_like_split_lines(chunk_size):
  data = b"a\r\nb\rc\n\r\n\rd\xc3\xa9\r\r\nlast"
  expected = [b"a", b"b", b"c", b"", b"", b"d\xc3\xa9", b"", b"last"]
  assert text_lines.split_lines(data) == expected
  assert list(text_lines.iter_lines(io.BytesIO(data), chunk_size)) == expected
  # Only LF, CRLF and CR end a line (not form feed, VT, NEL or U+2028).
  assert text_lines.split_lines("a\x0cb\x0bc\x85d\u2028e".encode()) == [
      "a\x0cb\x0bc\x85d\u2028e".encode()]


def test_corpus_documents_and_pairs(tmp_path):
  lines = ["The first document. It has two", "hard-wrapped lines.", "",
           "The second one. Also two sentences."]
  documents = _read_with_each_ending(
      tmp_path, "corpus.txt", lines,
      lambda path: list(corpus.read_documents(path)))
  assert len(documents) == 2
  pairs = _read_with_each_ending(
      tmp_path, "corpus.txt", lines,
      lambda path: corpus.load_sentence_pairs(path)[0])
  assert len(pairs) == 2


def test_bitext_tsv_and_aligned_files(tmp_path):
  pairs = _read_with_each_ending(
      tmp_path, "pairs.tsv", ["Open\tÖffnen", "Close\tSchließen"],
      bitext.read_bitext)
  assert pairs == [("Open", "Öffnen"), ("Close", "Schließen")]
  for label, ending in ENDINGS.items():
    source = _write(tmp_path, f"s.{label}", ["A dog.", "A cat."], ending)
    target = _write(tmp_path, f"t.{label}", ["Ein Hund.", "Eine Katze."],
                    b"\n")
    assert bitext.read_bitext(f"{source}|{target}") == [
        ("A dog.", "Ein Hund."), ("A cat.", "Eine Katze.")]


def test_nli_tsv_and_jsonl(tmp_path):
  rows = _read_with_each_ending(
      tmp_path, "nli.tsv", ["A man sleeps.\tA person rests.\tentailment",
                            "A dog runs.\tA cat sits.\tcontradiction"],
      nli_data.read_nli)
  assert rows == ([("A man sleeps.", "A person rests.", 0),
                   ("A dog runs.", "A cat sits.", 2)], 0)
  jsonl = _read_with_each_ending(
      tmp_path, "nli.jsonl",
      ['{"sentence1": "a", "sentence2": "b", "gold_label": "neutral"}'] * 2,
      nli_data.read_nli)
  assert jsonl == ([("a", "b", 1)] * 2, 0)


def test_encode_input_keeps_empty_lines_and_line_numbers(tmp_path):
  sentences = _read_with_each_ending(tmp_path, "in.txt",
                                     ["One.", "", "Three."],
                                     text_inputs.read_input)
  assert sentences == ["One.", "", "Three."]
  bad = tmp_path / "bad.txt"
  bad.write_bytes(b"ok\rfine\r\xff\r")
  with pytest.raises(ValueError, match=r"not UTF-8 text \(line 3\)"):
    text_inputs.read_input(str(bad))


def test_eval_readers(tmp_path):
  lines = _read_with_each_ending(
      tmp_path, "lines.txt", ["a", "b"],
      lambda path: text_files.read_lines(path, "lines"))
  assert lines == [(1, "a"), (2, "b")]
  header = "\t".join(["pair_ID", "sentence_A", "sentence_B",
                      "relatedness_score", "entailment_judgment"])
  sick = _read_with_each_ending(
      tmp_path, "SICK_test.txt", [header, "1\tA b.\tC d.\t4.5\tNEUTRAL"],
      lambda path: sts_readers.read_sick(path).scores.tolist())
  assert sick == [4.5]
