"""`python -m cmlm encode`: formats in and out, every model kind, --normalize,
--truncate_dim, --precision and --calibration (export/encode_files.encode_file)."""
import json
import os
import signal
import time

import numpy as np
import pytest

import cmlm.inference  # noqa: F401  (Keras 2 before TensorFlow loads)
from cmlm.inference import embedders
from cmlm.inference import encode_files
from cmlm.inference import quantization
from tests import helpers
from tests.export import export_helpers

SENTENCES = export_helpers.SENTENCES


@pytest.mark.slow
def test_cli_reads_stdin_jsonl_and_writes_quantized_parquet(tiny, tmp_path, capsys):
  pq = pytest.importorskip("pyarrow.parquet")
  records = "".join(json.dumps({"id": i, "sentence": s}) + "\n"
                    for i, s in enumerate(SENTENCES))
  output = tmp_path / "out.parquet"
  completed = helpers.run_command_here(
      ["encode", f"--model={tiny.model_dir}", "--input=-",
       "--input_format=jsonl", "--text_field=sentence", f"--output={output}",
       "--truncate_dim=8", "--precision=int8", "--batch_size=2"], capsys,
      input_text=records)
  assert completed.returncode == 0, completed.stderr[-2000:]
  assert f"Wrote {output}: int8 [3, 8]" in completed.stdout
  table = pq.read_table(str(output))
  assert table.column("text").to_pylist() == SENTENCES
  expected = quantization.quantize(
      export_helpers.unit(tiny.in_memory_embeddings(SENTENCES)[:, :8]), "int8",
      warn_stream=open(os.devnull, "w"))
  # int8 buckets of embeddings equal to 1e-5: at most one bucket apart.
  got = np.array(table.column("embedding").to_pylist())
  assert np.abs(got - expected.astype(int)).max() <= 1


@pytest.mark.slow
def test_csv_in_jsonl_out_with_calibration_from_a_file(tiny, tmp_path):
  source = tmp_path / "in.csv"
  source.write_text("id,sentence\n" + "".join(
      f'{i},"{s}"\n' for i, s in enumerate(SENTENCES)), encoding="utf-8")
  corpus = tmp_path / "corpus.txt"
  corpus_lines = SENTENCES + ["the other one", "Mr. Bennet laughed", "rain"]
  corpus.write_text("\n".join(corpus_lines), encoding="utf-8")
  output = str(tmp_path / "out.jsonl")
  written = encode_files.encode_file(
      tiny.model_dir, str(source), output, column="sentence",
      precision="uint8", calibration=str(corpus), show_progress=False)
  with open(output, encoding="utf-8") as f:
    records = [json.loads(line) for line in f]
  embeddings = np.array([r["embedding"] for r in records])
  assert (written.dtype, written.shape) == (np.uint8, [3, embeddings.shape[1]])
  calibration = export_helpers.unit(tiny.in_memory_embeddings(corpus_lines))
  # Buckets come from the calibration sentences' embeddings, not these.
  expected = quantization.quantize(export_helpers.unit(tiny.in_memory_embeddings(SENTENCES)),
                                   "uint8", calibration_embeddings=calibration,
                                   warn_stream=open(os.devnull, "w"))
  assert np.abs(embeddings.astype(int) - expected.astype(int)).max() <= 1
  uncalibrated = quantization.quantize(
      export_helpers.unit(tiny.in_memory_embeddings(SENTENCES)), "uint8",
      warn_stream=open(os.devnull, "w"))
  assert np.abs(embeddings.astype(int) - uncalibrated.astype(int)).max() > 1
  assert [r["text"] for r in records] == SENTENCES
  # The same ranges from a .npy of those embeddings.
  np.save(tmp_path / "calibration.npy", calibration)
  encode_files.encode_file(
      tiny.model_dir, str(source), str(tmp_path / "again.npy"),
      column="sentence", precision="uint8",
      calibration=str(tmp_path / "calibration.npy"), show_progress=False)
  again = np.load(tmp_path / "again.npy")
  assert np.abs(again.astype(int) - embeddings.astype(int)).max() <= 1


def test_normalize_is_honoured_or_refused_by_model_kind(tiny, tmp_path):
  source = tmp_path / "in.txt"
  source.write_text("\n".join(SENTENCES), encoding="utf-8")
  raw = tiny.in_memory_embeddings(SENTENCES)
  pair = (f"{tiny.result.export_dir}/encoder,"
          f"{tiny.result.export_dir}/preprocessor")
  for number, model in enumerate([tiny.model_dir, pair]):
    encode_files.encode_file(model, str(source), str(tmp_path / f"{number}.npy"),
                             normalize=False, show_progress=False)
    got = np.load(tmp_path / f"{number}.npy")
    np.testing.assert_allclose(got, raw, atol=1e-5, err_msg=model)
  serving = os.path.dirname(tiny.result.serving_dir)
  output = tmp_path / "refused.npy"
  with pytest.raises(ValueError, match="L2-normalises its embeddings in its "
                     "graph"):
    encode_files.encode_file(serving, str(source), str(output), normalize=False,
                       show_progress=False)
  assert not output.exists()


def test_bad_options_fail_before_the_model_loads(tmp_path):
  source = tmp_path / "in.txt"
  source.write_text("a\n", encoding="utf-8")
  missing_model = str(tmp_path / "no_model")
  for kwargs, message in [
      (dict(precision="int4"), "precision must be one of"),
      (dict(truncate_dim=0), "--truncate_dim must be 1 or more"),
      (dict(calibration="c.npy"), "--calibration sets the int8/uint8"),
      (dict(precision="int8", calibration=str(tmp_path / "c.npy")),
       "--calibration=.*c.npy is not a file"),
      (dict(output_format="csv"), "--output_format must be auto or one of"),
      (dict(input_format="jsonl"), "line 1: not JSON"),
      # A flag of another format than the input's: said, not ignored.
      (dict(column="sentence"), "--column=sentence picks a column of a csv "
       "or tsv input, but .*in.txt is read as txt"),
      (dict(text_field="sentence", input_format="csv"),
       "--text_field=sentence names the key of a jsonl input, but .*in.txt "
       "is read as csv")]:
    with pytest.raises((ValueError, FileNotFoundError), match=message):
      encode_files.encode_file(missing_model, str(source), str(tmp_path / "o.npy"),
                         show_progress=False, **kwargs)
  assert sorted(os.listdir(tmp_path)) == ["in.txt"]


def test_a_truncation_wider_than_the_model_fails_before_encoding(
    tiny, tmp_path, capsys):
  """The model's width is known once it loads: a --truncate_dim past it is
  refused then, not after every sentence was encoded."""
  source = tmp_path / "in.txt"
  source.write_text("\n".join(SENTENCES), encoding="utf-8")
  status, lines = helpers.run_command(
      ["encode", f"--model={tiny.result.export_dir}", f"--input={source}",
       f"--output={tmp_path / 'o.npy'}", "--truncate_dim=17"], capsys)
  assert (status, lines) == (2, [
      "cmlm encode: error: truncate_dim=17 must be between 1 and the "
      "model's 16 dimensions."])  # and no "Encoding 3 sentences" line
  assert sorted(os.listdir(tmp_path)) == ["in.txt"]


def test_a_stop_signal_while_writing_leaves_no_file(tiny, tmp_path,
                                                    monkeypatch):
  """SIGINT or SIGTERM in the middle of writing --output raises
  `Interrupted` there (`python -m cmlm` then exits 130 or 143): the half
  written file is removed and --output never appears."""
  from cmlm.inference import embedding_outputs  # pylint: disable=g-import-not-at-top
  from cmlm.training import stop_signals  # pylint: disable=g-import-not-at-top
  monkeypatch.setattr(stop_signals, "_received", [])  # this process's own
  source = tmp_path / "in.txt"
  source.write_text("\n".join(SENTENCES), encoding="utf-8")

  write_rows = embedding_outputs._NpyWriter._append  # pylint: disable=protected-access

  def write_half_then_get_a_signal(writer, embeddings, sentences):
    write_rows(writer, embeddings[:1], sentences[:1])
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(10)  # the handler raises here, at the next line of Python
  monkeypatch.setattr(embedding_outputs._NpyWriter, "_append",  # pylint: disable=protected-access
                      write_half_then_get_a_signal)
  with pytest.raises(stop_signals.Interrupted) as raised:
    with stop_signals.raising_interrupted():
      encode_files.encode_file(tiny.model_dir, str(source),
                               str(tmp_path / "out.npy"), show_progress=False)
  assert raised.value.signum == signal.SIGTERM
  assert os.listdir(tmp_path) == ["in.txt"]
  assert signal.getsignal(signal.SIGTERM) is not None  # handlers restored


def test_chunks_ordered_by_length_embed_as_each_sentence_alone(tiny, tmp_path):
  """The real model over a file of several chunks, each ordered by length
  into padded batches: row i is sentence i's embedding as the model gives
  it alone (no padding at all) and as the whole list in memory."""
  lines = [s for s in export_helpers.ALL_SENTENCES if len(s) < 1000] * 3
  source = tmp_path / "in.txt"
  source.write_bytes("\n".join(line.replace("\r", " ").replace("\n", " ")
                               for line in lines).encode("utf-8"))
  lines = [line.replace("\r", " ").replace("\n", " ") for line in lines]
  for precision in ("float32", "int8", "binary"):
    encode_files.encode_file(tiny.model_dir, str(source),
                             str(tmp_path / f"{precision}.npy"), batch_size=2,
                             chunk_size=5, precision=precision,
                             show_progress=False)
  embedder = embedders.load_embedder(tiny.model_dir)
  alone = export_helpers.unit(np.concatenate([embedder([s]) for s in lines]))
  np.testing.assert_allclose(np.load(tmp_path / "float32.npy"), alone,
                             atol=1e-5, rtol=0)
  in_memory = export_helpers.unit(embedder.embed(lines, 2))
  np.testing.assert_allclose(np.load(tmp_path / "float32.npy"), in_memory,
                             atol=1e-5, rtol=0)
  # Quantized in the stream as the float32 rows written are at once.
  floats = np.load(tmp_path / "float32.npy")
  for precision in ("int8", "binary"):
    expected = quantization.quantize(floats, precision,
                                     warn_stream=open(os.devnull, "w"))
    np.testing.assert_array_equal(np.load(tmp_path / f"{precision}.npy"),
                                  expected)
