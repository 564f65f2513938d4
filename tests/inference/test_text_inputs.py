"""`encode`'s readers: .txt, .jsonl, .csv, .tsv and stdin (inference/text_inputs.py)."""
import io

import pytest

import cmlm.inference  # noqa: F401  (Keras 2 before TensorFlow loads)
from cmlm.inference import text_inputs


def write(tmp_path, name, data: bytes):
  path = tmp_path / name
  path.write_bytes(data)
  return str(path)


def test_text_keeps_every_line_in_order_whatever_the_line_ends(tmp_path):
  path = write(tmp_path, "s.txt", b"\xef\xbb\xbfone\r\n\r\ntwo\rthree\n")
  assert text_inputs.read_input(path) == ["one", "", "two", "three"]


def test_jsonl_reads_the_text_field_and_names_the_bad_line(tmp_path):
  path = write(tmp_path, "s.jsonl", b'{"id": 1, "sentence": "caf\xc3\xa9"}\n'
               b'\n{"sentence": "two, \\"quoted\\""}\n')
  assert text_inputs.read_input(path, text_field="sentence") == [
      "café", 'two, "quoted"']
  with pytest.raises(ValueError, match=r"s.jsonl, line 1: no 'text' key "
                     r"\(keys: 'id', 'sentence'\); set --text_field"):
    text_inputs.read_input(path)
  bad = write(tmp_path, "bad.jsonl", b'{"text": "a"}\n{"text": 3}\n')
  with pytest.raises(ValueError, match="bad.jsonl, line 2: 'text' is int"):
    text_inputs.read_input(bad)
  broken = write(tmp_path, "broken.jsonl", b'{"text": "a"}\n{"text": \n')
  with pytest.raises(ValueError, match="broken.jsonl, line 2: not JSON"):
    text_inputs.read_input(broken)


def test_csv_takes_a_header_name_or_an_index_and_rfc4180_quotes(tmp_path):
  path = write(tmp_path, "s.csv", b'id,sentence\n1,"Hello, world"\n'
               b'2,"two\nlines ""quoted"""\n')
  assert text_inputs.read_input(path, column="sentence") == [
      "Hello, world", 'two\nlines "quoted"']
  assert text_inputs.read_input(path, column="1") == [
      "Hello, world", 'two\nlines "quoted"']
  assert text_inputs.read_input(path, column="0", header=False) == [
      "id", "1", "2"]
  with pytest.raises(ValueError, match=r"has 2 columns; name the sentences' "
                     r"with --column \(its header: 'id', 'sentence'\)"):
    text_inputs.read_input(path)
  with pytest.raises(ValueError, match=r"--column=text is not a column of "
                     r".*s.csv \(its CSV header: 'id', 'sentence'\)"):
    text_inputs.read_input(path, column="text")


def test_tsv_does_not_quote_and_names_a_short_row(tmp_path):
  path = write(tmp_path, "s.tsv",
               b'score\ts1\ts2\n1.0\t"A quote\tB\n2.0\tonly two\n')
  with pytest.raises(ValueError, match=r"s.tsv, line 3: 2 cell\(s\), but "
                     "column s2 is cell 3"):
    text_inputs.read_input(path, column="s2")
  assert text_inputs.read_input(path, column="s1") == ['"A quote',
                                                        "only two"]


def test_stdin_is_read_as_utf8_bytes_in_any_format():
  stdin = io.BytesIO("é\nb\n".encode("utf-8"))
  assert text_inputs.read_input("-", stdin=stdin) == ["é", "b"]
  stdin = io.BytesIO(b'{"text": "x"}\n')
  assert text_inputs.read_input("-", "jsonl", stdin=stdin) == ["x"]


def test_errors_name_the_file_and_what_is_expected(tmp_path):
  with pytest.raises(FileNotFoundError, match="--input=.*nothere.txt is not "
                     "a file"):
    text_inputs.read_input(str(tmp_path / "nothere.txt"))
  latin1 = write(tmp_path, "l.csv", b"text\nok\ncaf\xe9\n")
  with pytest.raises(ValueError, match=r"l.csv is not UTF-8 text \(line 3\)"):
    text_inputs.read_input(latin1)
  header_only = write(tmp_path, "h.csv", b"text\n")
  with pytest.raises(ValueError, match="holds no sentence"):
    text_inputs.read_input(header_only)
  with pytest.raises(ValueError, match="--input_format must be auto or one"):
    text_inputs.read_input(header_only, "xml")


def test_an_input_without_text_is_refused_naming_the_file(tmp_path):
  """Lines of NUL and control bytes or white space would embed as [CLS]
  [SEP] alone: refused before any model loads, naming the file."""
  control = write(tmp_path, "control.txt", b"\x00\x01\n \t\n\n\x7f\n")
  with pytest.raises(ValueError, match=r"control.txt holds 4 sentence\(s\) "
                     "but no text"):
    text_inputs.read_input(control)
  jsonl = write(tmp_path, "c.jsonl", b'{"text": "\\u0000"}\n{"text": " "}\n')
  with pytest.raises(ValueError, match="c.jsonl holds 2 sentence"):
    text_inputs.read_input(jsonl)
  # One line with text is enough; the empty ones stay rows of their own.
  mixed = write(tmp_path, "mixed.txt", b"\x00\n\nok\n")
  assert text_inputs.read_input(mixed) == ["\x00", "", "ok"]
