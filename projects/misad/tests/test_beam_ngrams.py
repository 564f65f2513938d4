"""MiSAD's PMI n-grams on Beam (beam_ngrams.py, `prepare_ngrams`): per
document, the very documents `ngrams` writes; over the corpus, the n-grams
that counting the whole corpus in one process ranks first."""
import collections
import glob
import os
import subprocess
import sys

import pytest

beam = pytest.importorskip(
    "apache_beam", reason="Apache Beam is an extra: pip install -r "
    "requirements-beam.txt (make test installs it)")

# pylint: disable=g-import-not-at-top,wrong-import-position
from cmlm.data_pipelines import corpus
from cmlm.projects.misad import beam_ngrams
from cmlm.projects.misad import pmi_ngrams
from tests import helpers

IN_PROCESS = ["--runner=DirectRunner", "--direct_num_workers=1"]
SHIPPED_CORPUS = os.path.join(helpers.REPO_ROOT, "data", "corpus_en")


def blocks(paths):
  """The documents (blank-line separated blocks) of text files."""
  found = collections.Counter()
  for path in paths:
    with open(path, encoding="utf-8") as f:
      found.update(block.strip("\n") for block in f.read().split("\n\n")
                   if block.strip())
  return found


def write_corpus(directory):
  directory.mkdir()
  (directory / "a.txt").write_text(
      "New York is big. I love New York. We left New York at night.\n\n"
      "The red car is big. The red car was fast. I saw the red car.\n")
  (directory / "b.txt").write_text(
      "Night falls on New York. A red car waits at night. At night it rains.\n")
  return str(directory)


def test_document_scope_writes_the_documents_ngrams_writes(tmp_path):
  config = pmi_ngrams.PmiConfig()
  pmi_ngrams.extract_ngrams(SHIPPED_CORPUS, str(tmp_path / "one.txt"),
                            config, stream=open(os.devnull, "w"))
  result = beam_ngrams.prepare_ngrams(
      SHIPPED_CORPUS, str(tmp_path / "beam" / "en"), config, num_shards=3,
      pipeline_args=IN_PROCESS)
  assert [os.path.basename(p) for p in result.shard_paths] == [
      f"en-0000{i}-of-00003.txt" for i in range(3)]
  ours = blocks(result.shard_paths)
  assert ours == blocks([tmp_path / "one.txt"])
  assert sum(ours.values()) == 60 == result.counts.get("ngram_documents")


def test_corpus_scope_marks_with_the_corpus_wide_top_ngrams(tmp_path):
  text = write_corpus(tmp_path / "corpus")
  config = pmi_ngrams.PmiConfig(max_ngram_length=3, top_k=2,
                                document_unit="paragraph")
  result = beam_ngrams.prepare_ngrams(
      text, str(tmp_path / "out" / "c"), config, scope="corpus",
      num_shards=2, seed=4, pipeline_args=IN_PROCESS)
  # One process: count the whole corpus, keep its top 2, mark each document.
  documents = [[pmi_ngrams.words_of(s) for s in
                corpus.sentence_splitter.split_sentences(d)]
               for d in corpus.read_documents(text)]
  everything = [w for document in documents for w in document if w]
  kept = pmi_ngrams.top_ngrams(pmi_ngrams.pmi_scores(
      pmi_ngrams.count_ngrams(everything, 3), "paper", 2), 2)
  assert len(kept) == 2
  expected = collections.Counter()
  for document in documents:
    lines = [pmi_ngrams.format_marked(w, spans) for w in document
             for spans in [pmi_ngrams.mark_sentence(w, kept, 3)] if spans]
    if lines:
      expected["\n".join(lines)] += 1
  assert blocks(result.shard_paths) == expected
  # Per document, the same corpus marks other n-grams.
  per_document = beam_ngrams.prepare_ngrams(
      text, str(tmp_path / "out" / "d"), config, num_shards=2, seed=4,
      pipeline_args=IN_PROCESS)
  assert blocks(per_document.shard_paths) != expected


def test_a_corpus_that_is_not_utf8_text_is_said_so(tmp_path):
  """As `ngrams` says it; the job said only "has no sentence with an
  n-gram" (its table counted the lines skipped)."""
  latin1 = tmp_path / "latin1.txt"
  latin1.write_bytes(b"caf\xe9 cr\xe8me. caf\xe9 cr\xe8me again.\n")
  with pytest.raises(ValueError, match=r"^The corpus '.*latin1\.txt' is not "
                     r"UTF-8 text: 1 line not UTF-8 skipped, no sentence "
                     r"left; convert it to UTF-8\. Nothing was written\.\n"):
    beam_ngrams.prepare_ngrams(str(latin1), str(tmp_path / "out" / "ng"),
                               pmi_ngrams.PmiConfig(), num_shards=1,
                               pipeline_args=IN_PROCESS)
  assert os.listdir(tmp_path) == ["latin1.txt"]


def test_command_refuses_a_bad_output_or_worker_count_before_beam_loads(
    monkeypatch, tmp_path):
  """As `prepare` does: an output under a file (was TensorFlow's
  FailedPreconditionError traceback) and a negative --direct_num_workers
  (was Beam's IndexError traceback), one sentence naming the flag."""
  from cmlm.projects.misad import prepare_ngrams_command  # pylint: disable=g-import-not-at-top
  text = write_corpus(tmp_path / "corpus")
  (tmp_path / "s.txt").write_text("a file\n")
  monkeypatch.setitem(sys.modules, "apache_beam", None)  # not loaded first
  with pytest.raises(ValueError, match=r"^--output=.*s\.txt/x is under "
                     r".*s\.txt, which is a file; name a path in a "
                     r"directory\.$"):
    prepare_ngrams_command.main([f"--input={text}",
                                 f"--output={tmp_path / 's.txt' / 'x'}"])
  with pytest.raises(ValueError, match=r"^--direct_num_workers must be 0 "
                     r"\(one process per CPU core\) or more, got -1\.$"):
    prepare_ngrams_command.main([f"--input={text}",
                                 f"--output={tmp_path / 'out' / 'ng'}",
                                 "--direct_num_workers=-1"])
  assert sorted(os.listdir(tmp_path)) == ["corpus", "s.txt"]


@pytest.mark.slow
def test_command_rerun_gives_the_same_bytes_and_refuses_to_overwrite(
    tmp_path, capsys):
  """Two processes (another hash seed each) write the same bytes; the
  refusal to overwrite is the command's `main` in this process."""
  text = write_corpus(tmp_path / "corpus")
  system_tmp = tmp_path / "system_tmp"
  system_tmp.mkdir()

  def run(*args):
    return subprocess.run(
        [sys.executable, "-m", "cmlm", "prepare_ngrams", f"--input={text}",
         "--direct_num_workers=1", "--num_shards=2", "--top_k=3", *args],
        cwd=helpers.REPO_ROOT, capture_output=True, text=True, timeout=300,
        env=dict(os.environ, TMPDIR=str(system_tmp)))
  first = run(f"--output={tmp_path / 'a' / 'ng'}", "--scope=corpus")
  assert first.returncode == 0, first.stderr
  assert os.listdir(system_tmp) == []  # nor Beam's temporaries
  assert "| n-grams marked |" in first.stdout
  again = run(f"--output={tmp_path / 'b' / 'ng'}", "--scope=corpus")
  read = lambda d: [open(p, "rb").read() for p in sorted(glob.glob(
      str(tmp_path / d / "ng-*.txt")))]
  assert read("a") == read("b") and len(read("a")) == 2
  refused = helpers.run_command_here(
      ["prepare_ngrams", f"--input={text}", "--direct_num_workers=1",
       "--num_shards=2", "--top_k=3", f"--output={tmp_path / 'a' / 'ng'}"],
      capsys)
  assert refused.returncode == 2
  assert refused.stderr.strip().splitlines()[-1].startswith(
      "cmlm prepare_ngrams: error:")
  assert "--overwrite" in refused.stderr
