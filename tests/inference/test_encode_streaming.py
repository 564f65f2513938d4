"""`encode` on files larger than a chunk (inference/encode_files.py): the
streamed output equals the in-memory encoding in every format and
precision, rows keep their order though each chunk is ordered by length,
memory is bounded by the chunk, and a failure leaves nothing.

A fake embedder (a fixed vector per sentence) stands in for the model, so
equality is exact and the calls can be counted.
"""
import io
import json
import os
import subprocess
import sys
import textwrap
import tracemalloc
import zlib

import numpy as np
import pytest

import cmlm.inference  # noqa: F401  (Keras 2 before TensorFlow loads)
from cmlm.inference import embedding_outputs
from cmlm.inference import encode_files
from cmlm.inference import postprocess
from cmlm.inference import text_inputs
from cmlm.modeling.embedder import Embedder

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
DIM = 12
WORDS = "the a cat sat on mat of Longbourn Netherfield rain sun".split()


def sentence_vector(sentence: str, dim: int = DIM) -> np.ndarray:
  """The fake model's embedding: fixed by the sentence alone."""
  seed = zlib.crc32(sentence.encode("utf-8"))
  return np.random.default_rng(seed).normal(size=dim).astype(np.float32)


def sentences_of(count: int):
  rng = np.random.default_rng(0)
  return [" ".join(rng.choice(WORDS, size=rng.integers(1, 12)))
          for _ in range(count)]


class FakeModel:
  """An Embedder whose calls are recorded (`batches`; with `record` False
  only the last, and `rows` counts the rows embedded before it)."""

  def __init__(self, dim: int = DIM, on_batch=None, record: bool = True):
    self.batches, self.dim, self._on_batch = [], dim, on_batch
    self.record, self.rows = record, 0
    self.embedder = Embedder(self._embed_batch)

  def _embed_batch(self, sentences):
    if not self.record and self.batches:
      self.rows += len(self.batches.pop())
    self.batches.append(list(sentences))
    if self._on_batch:
      self._on_batch(self)
    return np.stack([sentence_vector(s, self.dim) for s in sentences])


@pytest.fixture
def fake(monkeypatch):
  model = FakeModel()
  monkeypatch.setattr(encode_files.embedders, "load_embedder",
                      lambda *args, **kwargs: model.embedder)
  return model


def write_lines(path, sentences):
  path.write_text("\n".join(sentences) + "\n", encoding="utf-8")
  return str(path)


def read_output(path):
  """(sentences or None, rows) of a file encode wrote."""
  if path.endswith(".npy"):
    return None, np.load(path)
  if path.endswith(".jsonl"):
    with open(path, encoding="utf-8") as f:
      records = [json.loads(line) for line in f]
    return ([r["text"] for r in records],
            np.array([r["embedding"] for r in records]))
  pq = pytest.importorskip("pyarrow.parquet")
  table = pq.read_table(path)
  return (table.column("text").to_pylist(),
          np.array(table.column("embedding").to_pylist()))


@pytest.mark.parametrize("precision", ["float32", "int8", "uint8", "binary"])
@pytest.mark.parametrize("extension", ["npy", "jsonl", "parquet"])
def test_streamed_output_equals_the_in_memory_encoding(fake, tmp_path,
                                                       precision, extension):
  sentences = sentences_of(53)  # 8 chunks of 7, the last one short
  source = write_lines(tmp_path / "in.txt", sentences)
  output = str(tmp_path / f"out.{extension}")
  written = encode_files.encode_file(
      "fake", source, output, batch_size=3, chunk_size=7,
      precision=precision, truncate_dim=10, show_progress=False)
  in_memory = postprocess.postprocess(
      fake.embedder.embed(sentences, 3), 10, True, precision,
      warn_stream=open(os.devnull, "w"))
  texts, rows = read_output(output)
  np.testing.assert_array_equal(rows, in_memory)
  assert texts in (None, sentences)
  assert written.shape == list(in_memory.shape)
  assert written.dtype == in_memory.dtype
  assert sorted(os.listdir(tmp_path)) == sorted(["in.txt", f"out.{extension}"])


def test_standard_input_streams_and_a_bad_input_makes_no_directory(
    fake, tmp_path):
  sentences = sentences_of(30)
  stdin = io.BytesIO(("\n".join(sentences) + "\n").encode("utf-8"))
  encode_files.encode_file("fake", "-", str(tmp_path / "out.npy"),
                           chunk_size=4, stdin=stdin, show_progress=False)
  np.testing.assert_array_equal(
      np.load(tmp_path / "out.npy"), postprocess.truncate_and_normalize(
          np.stack([sentence_vector(s) for s in sentences]), None, True))
  with pytest.raises(FileNotFoundError, match="is not a file"):
    encode_files.encode_file("fake", str(tmp_path / "missing.txt"),
                             str(tmp_path / "new" / "out.npy"),
                             show_progress=False)
  assert sorted(os.listdir(tmp_path)) == ["out.npy"]


def test_int8_calibration_from_a_file_or_an_npy_is_read_in_chunks(
    fake, tmp_path):
  sentences, corpus = sentences_of(20), sentences_of(300)[100:]
  source = write_lines(tmp_path / "in.txt", sentences)
  calibration = postprocess.truncate_and_normalize(
      fake.embedder.embed(corpus), None, True)
  expected = postprocess.postprocess(
      fake.embedder.embed(sentences), None, True, "int8",
      calibration_embeddings=calibration)
  np.save(tmp_path / "calibration.npy", calibration)
  for name, given in [("file", write_lines(tmp_path / "corpus.txt", corpus)),
                      ("npy", str(tmp_path / "calibration.npy"))]:
    encode_files.encode_file("fake", source, str(tmp_path / f"{name}.npy"),
                             chunk_size=6, precision="int8",
                             calibration=given, show_progress=False)
    np.testing.assert_array_equal(np.load(tmp_path / f"{name}.npy"),
                                  expected, err_msg=name)


def test_each_chunk_is_ordered_by_length_and_rows_put_back(fake, tmp_path):
  sentences = sentences_of(40)
  source = write_lines(tmp_path / "in.txt", sentences)
  encode_files.encode_file("fake", source, str(tmp_path / "out.npy"),
                           batch_size=4, chunk_size=10, normalize=False,
                           show_progress=False)
  calls = fake.batches
  assert len(calls) == 12  # no probe: a run's casing check sees real sentences
  chunks = [sentences[start:start + 10] for start in range(0, 40, 10)]
  for number, chunk in enumerate(chunks):
    batches = calls[3 * number:3 * number + 3]  # 10 rows: 4 + 4 + 2
    assert sorted(sum(batches, [])) == sorted(chunk)  # no row leaves its chunk
    lengths = [len(s) for s in sum(batches, [])]
    assert lengths == sorted(lengths, reverse=True)  # longest first
  np.testing.assert_array_equal(
      np.load(tmp_path / "out.npy"),
      np.stack([sentence_vector(s) for s in sentences]))  # file order


def test_memory_is_bounded_by_the_chunk_not_the_file(tmp_path, monkeypatch):
  """The encoder gets at most a batch, the writer at most a chunk, and no
  more than a chunk of sentences is read ahead of what was written (int8
  without calibration: of what was embedded, whose float rows wait on
  disk for the second pass)."""
  read, written, precision = [0], [0], ["float32"]
  chunk_size, batch_size = 25, 4

  def check(model):
    assert len(model.batches[-1]) <= batch_size
    done = written[0] if precision[0] == "float32" else model.rows
    assert read[0] - done <= chunk_size
  model = FakeModel(on_batch=check, record=False)
  monkeypatch.setattr(encode_files.embedders, "load_embedder",
                      lambda *args, **kwargs: model.embedder)
  chunks = text_inputs.SentenceFile.chunks

  def counted_chunks(self, size):
    for chunk in chunks(self, size):
      read[0] += len(chunk)
      yield chunk
  monkeypatch.setattr(text_inputs.SentenceFile, "chunks", counted_chunks)
  write = embedding_outputs.EmbeddingWriter.write

  def counted_write(self, embeddings, sentences):
    assert len(embeddings) <= chunk_size
    write(self, embeddings, sentences)
    written[0] += len(embeddings)
  monkeypatch.setattr(embedding_outputs.EmbeddingWriter, "write",
                      counted_write)
  source = write_lines(tmp_path / "in.txt", sentences_of(300))
  for precision[0] in ("float32", "int8"):  # int8: the two-pass path too
    read[0] = written[0] = model.rows = 0
    model.batches.clear()
    encode_files.encode_file("fake", source,
                             str(tmp_path / f"{precision[0]}.jsonl"),
                             batch_size=batch_size, chunk_size=chunk_size,
                             precision=precision[0], show_progress=False)
    assert written[0] == 300


def test_peak_memory_stays_flat_as_the_file_grows(tmp_path, monkeypatch):
  """Python's peak allocations (tracemalloc) encoding 8x the sentences grow
  by less than a tenth of what holding their embeddings would take."""
  model = FakeModel(dim=256, record=False)
  monkeypatch.setattr(encode_files.embedders, "load_embedder",
                      lambda *args, **kwargs: model.embedder)
  peaks = {}
  for count in (1000, 8000):
    source = write_lines(tmp_path / f"in{count}.txt", sentences_of(count))
    tracemalloc.start()
    encode_files.encode_file("fake", source, str(tmp_path / f"{count}.npy"),
                             batch_size=50, chunk_size=200,
                             show_progress=False)
    peaks[count] = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
  all_embeddings = 8000 * 256 * 4
  assert peaks[8000] - peaks[1000] < all_embeddings / 10, peaks


def test_a_failure_in_a_later_chunk_leaves_no_output_and_no_temporary(
    tmp_path, monkeypatch):
  def fail_in_the_third_chunk(model):
    if len(model.batches) > 6:
      raise RuntimeError("the encoder failed")
  model = FakeModel(on_batch=fail_in_the_third_chunk)
  monkeypatch.setattr(encode_files.embedders, "load_embedder",
                      lambda *args, **kwargs: model.embedder)
  source = write_lines(tmp_path / "in.txt", sentences_of(50))
  for output in ("out.npy", "out.parquet", "out.jsonl", "int8.npy"):
    model.batches.clear()
    with pytest.raises(RuntimeError, match="the encoder failed"):
      encode_files.encode_file(
          "fake", source, str(tmp_path / output), batch_size=2, chunk_size=4,
          precision="int8" if output.startswith("int8") else "float32",
          show_progress=False)
    assert os.listdir(tmp_path) == ["in.txt"]


@pytest.mark.slow
def test_a_killed_encode_leaves_no_output_and_its_temporary_goes_next_time(
    tmp_path, fake):
  """SIGKILL runs no clean-up: --output never appears, and the temporary
  it leaves (`.tmp-<host>-<pid>-out.npy`) is removed by the next encode of
  that output, which then writes it whole."""
  source = write_lines(tmp_path / "in.txt", sentences_of(50))
  script = textwrap.dedent(f"""
      import os, signal, sys
      sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
      import test_encode_streaming as t
      from cmlm.inference import encode_files
      def kill_in_the_third_chunk(model):
        if len(model.batches) > 6:
          os.kill(os.getpid(), signal.SIGKILL)
      model = t.FakeModel(on_batch=kill_in_the_third_chunk)
      encode_files.embedders.load_embedder = lambda *a, **k: model.embedder
      encode_files.encode_file("fake", {source!r}, {str(tmp_path / "out.npy")!r},
                               batch_size=2, chunk_size=4,
                               show_progress=False)
      """)
  killed = subprocess.run([sys.executable, "-c", script], check=False,
                          capture_output=True, text=True, cwd=REPO_ROOT)
  assert killed.returncode == -9, killed.stderr[-2000:]
  assert "out.npy" not in os.listdir(tmp_path)
  left = [name for name in os.listdir(tmp_path) if name != "in.txt"]
  assert len(left) == 1 and left[0].startswith(".tmp-"), left
  encode_files.encode_file("fake", source, str(tmp_path / "out.npy"),
                           chunk_size=4, show_progress=False)
  assert sorted(os.listdir(tmp_path)) == ["in.txt", "out.npy"]


def test_the_command_states_the_chunk_it_holds():
  from cmlm.commands import encode  # pylint: disable=g-import-not-at-top
  said = f"{encode_files.CHUNK_BATCHES} batches at a time"
  assert said in " ".join(encode.FLAGS["batch_size"].help.split())
  assert said in " ".join(encode.__doc__.split())
