"""`python -m cmlm mine` (inference/mine_files.py): bad input is one line,
exit status 2 and no output; sentences are encoded and mined end to end."""
import os

import numpy as np
import pytest

from cmlm.inference import bitext_mining
from cmlm.inference import nearest_neighbours
from tests import helpers
from tests.export import export_helpers

run_cli = export_helpers.run_cli


@pytest.fixture
def corpora(tmp_path):
  """A small source/target pair of .npy files (dim 8) and text files."""
  rng = np.random.default_rng(0)
  source = rng.normal(size=(30, 8)).astype(np.float32)
  target = (source + 0.1 * rng.normal(size=source.shape)).astype(np.float32)
  np.save(tmp_path / "source.npy", source)
  np.save(tmp_path / "target.npy", target)
  (tmp_path / "source.txt").write_text(
      "".join(f"sentence {i}\n" for i in range(30)), encoding="utf-8")
  return tmp_path


def _bad_inputs(d):
  """(arguments, the start of the one error line)."""
  np.save(d / "dim4.npy", np.zeros((30, 4), np.float32))
  np.save(d / "empty.npy", np.zeros((0, 8), np.float32))
  np.save(d / "ints.npy", np.zeros((30, 8), np.int8))
  np.save(d / "cube.npy", np.zeros((2, 3, 8), np.float32))
  (d / "text.npy").write_text("not an array\n")
  (d / "empty.txt").write_text("")
  embeddings = [f"--source_embeddings={d}/source.npy",
                f"--target_embeddings={d}/target.npy"]
  source = embeddings[0]
  return [
      ([source, f"--target_embeddings={d}/dim4.npy"],
       "--source_embeddings have 8 dimensions and --target_embeddings 4"),
      ([source, f"--target_embeddings={d}/empty.npy"],
       f"--target_embeddings={d}/empty.npy holds no embeddings"),
      ([f"--source={d}/empty.txt", f"--target_embeddings={d}/target.npy",
        "--model=unused"], f"--source={d}/empty.txt holds no sentence"),
      (embeddings + ["--index=ivf", "--nlist=64"],
       "--index=ivf with --nlist=64 needs at least that many sentences"),
      ([source, f"--target_embeddings={d}/text.npy"],
       f"--target_embeddings={d}/text.npy is not a NumPy .npy file."),
      ([source, f"--target_embeddings={d}/ints.npy"],
       f"--target_embeddings={d}/ints.npy holds int8 [30, 8]; expected float"),
      ([source, f"--target_embeddings={d}/cube.npy"],
       f"--target_embeddings={d}/cube.npy holds float32 [2, 3, 8]"),
      ([source, f"--target_embeddings={d}/missing.npy"],
       f"--target_embeddings={d}/missing.npy is not a file"),
      ([f"--source={d}/missing.txt", f"--target_embeddings={d}/target.npy"],
       f"--source={d}/missing.txt is not a file"),
      ([source], "Give --target (a .txt file of sentences) or"),
      ([f"--source={d}/source.txt", f"--target_embeddings={d}/target.npy"],
       "--model is required"),
      ([f"--source={d}/source.txt", f"--source_embeddings={d}/dim4.npy",
        f"--target_embeddings={d}/target.npy"],
       "--source_embeddings have 4 dimensions"),
      (embeddings + ["--k=0"], "--k must be 1 or more"),
      ([f"--source={d}/source.txt", f"--target_embeddings={d}/target.npy",
        f"--model={d}/no_export", "--dask_workers=2"],
       f"--model={d}/no_export does not exist"),
      ([f"--source={d}/source.txt", f"--target_embeddings={d}/target.npy",
        f"--model={d},{d}/no_preprocessor"],
       f"--model={d},{d}/no_preprocessor: {d}/no_preprocessor does not "
       "exist"),
      ([f"--source={d}/source.txt", f"--target_embeddings={d}/target.npy",
        f"--model={d}/source.txt"], f"--model={d}/source.txt is not a "
       "directory"),
  ]


def test_each_bad_input_is_one_line_exit_2_and_no_output(corpora):
  output = corpora / "pairs.tsv"
  for args, words in _bad_inputs(corpora):
    result = run_cli("mine", *args, f"--output={output}")
    assert result.returncode == 2, (args, result.stderr[-2000:])
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"cmlm mine: error: {words}"), (args, lines)
    assert not output.exists()
    assert not [n for n in os.listdir(corpora) if n.startswith(".tmp-")]


def test_a_file_that_is_not_a_npy_is_said_so_without_a_pickle_hint(tmp_path):
  """Text or other bytes were "pickled (object) data", with a hint at
  NumPy's `allow_pickle=`; a .npy cut short keeps NumPy's reason."""
  (tmp_path / "s.txt").write_text("a sentence\n")
  (tmp_path / "bytes.npy").write_bytes(bytes(range(256)))
  for path in (tmp_path / "s.txt", tmp_path / "bytes.npy"):
    with pytest.raises(ValueError) as raised:
      nearest_neighbours.read_embeddings(str(path), "--target_embeddings")
    assert str(raised.value) == (
        f"--target_embeddings={path} is not a NumPy .npy file.")
  np.save(tmp_path / "cut.npy", np.zeros((30, 8), np.float32))
  os.truncate(tmp_path / "cut.npy", 200)
  with pytest.raises(ValueError, match=r"cut\.npy is not a \.npy array \("):
    nearest_neighbours.read_embeddings(str(tmp_path / "cut.npy"), "--x")


def test_non_finite_embeddings_or_threshold_are_refused(corpora):
  """NaN embeddings were mined into `nan 0 -1` rows, and --threshold=nan
  into an empty file, both with status 0. The embeddings are checked shard
  by shard as the search reads them (the row found in a later shard)."""
  from cmlm.commands import mine  # pylint: disable=g-import-not-at-top
  nan = np.load(corpora / "target.npy")
  nan[23, 2] = np.nan
  np.save(corpora / "nan.npy", nan)
  inf = np.load(corpora / "source.npy")
  inf[5, 0] = -np.inf
  np.save(corpora / "inf.npy", inf)
  output = corpora / "pairs.tsv"
  for source, target, path, row in (("source", "nan", "nan.npy", 23),
                                    ("inf", "target", "inf.npy", 5)):
    with pytest.raises(ValueError) as raised:
      mine.main([f"--source_embeddings={corpora}/{source}.npy",
                 f"--target_embeddings={corpora}/{target}.npy",
                 f"--output={output}", "--shard_size=10", "--noprogress"])
    assert str(raised.value) == (
        f"{corpora / path} holds non-finite values (NaN or infinity), first "
        f"in row {row}; mine finite embeddings.")
  with pytest.raises(ValueError, match=r"^--threshold must be a finite "
                     r"score, got nan\.$"):
    mine.main([f"--source_embeddings={corpora}/source.npy",
               f"--target_embeddings={corpora}/target.npy",
               f"--output={output}", "--threshold=nan"])
  assert not output.exists()


def test_an_existing_output_is_kept_without_overwrite(corpora):
  output = corpora / "pairs.tsv"
  output.write_text("mine\n")
  args = [f"--source_embeddings={corpora}/source.npy",
          f"--target_embeddings={corpora}/target.npy", f"--output={output}"]
  result = run_cli("mine", *args)
  assert result.returncode == 2 and "--overwrite" in result.stderr
  assert output.read_text() == "mine\n"
  result = run_cli("mine", *args, "--overwrite", "--mode=intersection",
                   "--index=hnsw", "--noprogress")
  assert result.returncode == 0, result.stderr[-2000:]
  assert "hnsw index against exact search on 30 source sentences" in (
      result.stdout)
  rows = [line.split("\t") for line in output.read_text().splitlines()]
  expected = bitext_mining.mine(np.load(corpora / "source.npy"),
                                np.load(corpora / "target.npy"),
                                mode="intersection")["pairs"]
  assert [(int(i), int(j)) for _, i, j in rows] == [
      (i, j) for i, j, _ in expected.as_tuples()]
  assert [float(s) for s, _, _ in rows] == sorted(
      (float(s) for s, _, _ in rows), reverse=True)


@pytest.mark.slow
def test_sentences_are_encoded_and_mined_end_to_end(tiny, tmp_path, capsys):
  """The command's `main` in this process, as `python -m cmlm mine` runs
  it (the bad inputs above, and the Dask tests, start its own process)."""
  sentences = export_helpers.SENTENCES + [
      "the other one", "Mr. Bennet laughed", "rain on the roof",
      "a letter came this morning"]
  order = np.random.default_rng(1).permutation(len(sentences))
  (tmp_path / "source.txt").write_text("\n".join(sentences) + "\n")
  (tmp_path / "target.txt").write_text(
      "\n".join(sentences[i] for i in order) + "\n")
  output = tmp_path / "pairs.tsv"
  result = helpers.run_command_here(
      ["mine", f"--model={tiny.model_dir}", f"--source={tmp_path}/source.txt",
       f"--target={tmp_path}/target.txt", f"--output={output}", "--k=2",
       "--batch_size=3"], capsys)
  assert result.returncode == 0, result.stderr[-2000:]
  assert f"Wrote {output}: {len(sentences)} pairs" in result.stdout
  rows = [line.split("\t") for line in output.read_text().splitlines()]
  # Identical sentences are each other's nearest: every pair is a sentence
  # with itself, whatever the model learned in 4 steps.
  assert sorted((s, t) for _, s, t in rows) == sorted(
      (s, s) for s in sentences)
