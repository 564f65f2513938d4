"""`python -m cmlm ngrams`: PMI n-grams of a corpus, marked (Li et al. 2020,
section 3.1); errors are one line, nothing half-written."""
import os
import re
import subprocess
import sys

import pytest

from cmlm.projects.misad import pmi_ngrams
from tests import helpers


def run_ngrams(*args):
  return subprocess.run([sys.executable, "-m", "cmlm", "ngrams", *args],
                        cwd=helpers.REPO_ROOT, capture_output=True, text=True,
                        timeout=120)


@pytest.mark.slow
def test_marks_a_corpus_with_progress_and_the_code_formula(tmp_path):
  corpus = tmp_path / "corpus.txt"
  corpus.write_text("New York is big. I love New York. New York, New York!\n"
                    "We left New York. The car is big.\n")
  output = tmp_path / "marked.txt"
  result = run_ngrams(f"--input={corpus}", f"--output={output}",
                      "--formula=code", "--top_k=1", "--max_ngram_length=3")
  assert result.returncode == 0, result.stderr
  assert "ngrams: wrote" in result.stderr
  lines = output.read_text().splitlines()
  words, spans = pmi_ngrams.parse_marked(lines[0])
  assert words[:2] == ["new", "york"] and spans
  # The same call again, replacing: the same bytes.
  first = output.read_bytes()
  assert run_ngrams(f"--input={corpus}", f"--output={output}",
                    "--formula=code", "--top_k=1", "--max_ngram_length=3",
                    "--overwrite").returncode == 0
  assert output.read_bytes() == first


@pytest.mark.slow
def test_user_errors_are_one_line_and_write_nothing(tmp_path):
  output = tmp_path / "marked.txt"
  result = run_ngrams(f"--input={tmp_path / 'missing'}",
                      f"--output={output}")
  assert result.returncode == 2
  assert result.stderr.strip().count("\n") == 0
  assert "cmlm ngrams: error:" in result.stderr
  assert not output.exists()
  result = run_ngrams("--output=x.txt")
  assert result.returncode == 2 and "needs --input" in result.stderr
  output.write_text("keep me")
  corpus = tmp_path / "c.txt"
  corpus.write_text("a b. a b.\n")
  result = run_ngrams(f"--input={corpus}", f"--output={output}")
  assert result.returncode == 2 and "--overwrite" in result.stderr
  assert output.read_text() == "keep me"
  result = run_ngrams(f"--input={corpus}", f"--output={tmp_path}/o.txt",
                      "--top_k=0")
  assert result.returncode == 2 and "top_k must be 1 or more" in result.stderr


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
def test_an_output_that_is_a_directory_or_under_a_file_is_named_so(
    tmp_path, overwrite):
  """A directory was "exists; pass --overwrite" (and with it, an
  IsADirectoryError traceback); a path under a file, "The output directory
  ... does not exist"."""
  from cmlm.projects.misad import ngrams_command  # pylint: disable=g-import-not-at-top
  corpus = tmp_path / "c.txt"
  corpus.write_text("a b. a b.\n")
  (tmp_path / "empty").mkdir()
  with pytest.raises(ValueError, match=r"^--output=.*empty is a directory; "
                     r"name a file\.$"):
    ngrams_command.main([f"--input={corpus}",
                         f"--output={tmp_path / 'empty'}", *overwrite])
  with pytest.raises(ValueError, match=r"^--output=.*c\.txt/x is under "
                     r".*c\.txt, which is a file; name a path in a "
                     r"directory\.$"):
    ngrams_command.main([f"--input={corpus}",
                         f"--output={corpus / 'x'}", *overwrite])
  assert sorted(os.listdir(tmp_path)) == ["c.txt", "empty"]
  assert not os.listdir(tmp_path / "empty")


def test_help_lists_the_command_s_own_flags_and_the_command_is_listed():
  """The project's command is registered: in `python -m cmlm --help` and
  with exactly its own flags (moved from tests/cmlm/test_cli.py)."""
  from tests.cmlm import test_cli  # pylint: disable=g-import-not-at-top
  result = run_ngrams("--help")
  assert result.returncode == 0, result.stderr[-2000:]
  assert result.stdout.startswith("usage: python -m cmlm ngrams ")
  assert test_cli.listed_flags(result.stdout) == {
      "input", "output", "max_ngram_length", "min_count", "top_k", "formula",
      "document_unit", "keep_unmarked", "overwrite", "skip_invalid_lines",
      "verbosity"}
  listing = test_cli.run_cli("--help")
  assert "\n  ngrams  Mark a corpus's PMI n-grams" in listing.stdout
  # Registered by projects/misad/commands.py: its help, as the list, needs
  # neither MiSAD's objective nor TensorFlow.
  imported = test_cli.imported_modules("ngrams", "--help")
  assert "cmlm.projects.misad.ngrams_command" in imported
  assert "tensorflow" not in imported
  assert "cmlm.projects.misad.misad_objective" not in imported


def test_input_without_an_ngram_is_refused_and_hints_name_its_own_flags(
    tmp_path):
  """A file of NUL and control bytes, or text whose n-grams never repeat,
  yields no n-gram: one error naming the file and why, and no output (MiSAD
  would fail later on an empty file). A line that is not UTF-8 is refused
  with a hint naming a flag `ngrams` takes, which then skips it."""
  from cmlm.projects.misad import ngrams_command  # pylint: disable=g-import-not-at-top
  output = tmp_path / "marked.txt"
  control = tmp_path / "control.txt"
  control.write_bytes(b"\x00\x00\x01\x02\n\x03\x04 \x05\n\n\x00\n")
  with pytest.raises(ValueError, match=r"control.txt holds no word .*"
                     r"Nothing was written"):
    pmi_ngrams.extract_ngrams(str(control), str(output))
  once = tmp_path / "once.txt"
  once.write_text("Every word here is new. Nothing repeats at all.\n")
  with pytest.raises(ValueError, match=r"once.txt yields no n-gram: .*"
                     r"lower --min_count"):
    pmi_ngrams.extract_ngrams(str(once), str(output))
  assert sorted(os.listdir(tmp_path)) == ["control.txt", "once.txt"]

  latin1 = tmp_path / "latin1.txt"
  latin1.write_bytes(b"caf\xe9 au lait\nnew york, new york. new york!\n")
  with pytest.raises(ValueError, match="not UTF-8") as raised:
    pmi_ngrams.extract_ngrams(str(latin1), str(output))
  hinted = re.findall(r"--(\w+)", str(raised.value))
  assert hinted and all(name in ngrams_command.FLAGS for name in hinted)
  stats = pmi_ngrams.extract_ngrams(str(latin1), str(output),
                                    skip_invalid_lines=True)
  assert stats.marked_ngrams >= 1 and output.read_text().strip()
