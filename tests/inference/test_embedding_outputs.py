"""`encode`'s writers: .npy, .jsonl, .parquet (inference/embedding_outputs.py)."""
import builtins
import json
import os

import numpy as np
import pytest

import cmlm.inference  # noqa: F401  (Keras 2 before TensorFlow loads)
from cmlm.inference import embedding_outputs

SENTENCES = ["first", "zweite \u00e9", ""]


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint8])
def test_every_format_keeps_rows_dtype_and_text(tmp_path, dtype):
  values = (np.arange(12).reshape(3, 4) - 6).astype(dtype)
  paths = {kind: str(tmp_path / f"e.{kind}") for kind in
           embedding_outputs.FORMATS}
  for path in paths.values():
    embedding_outputs.write_embeddings(path, values, SENTENCES)
  loaded = np.load(paths["npy"])
  assert loaded.dtype == dtype
  np.testing.assert_array_equal(loaded, values)
  with open(paths["jsonl"], encoding="utf-8") as f:
    records = [json.loads(line) for line in f]
  assert [r["text"] for r in records] == SENTENCES
  np.testing.assert_array_equal([r["embedding"] for r in records], values)
  pq = pytest.importorskip("pyarrow.parquet")
  table = pq.read_table(paths["parquet"])
  assert table.column("text").to_pylist() == SENTENCES
  column = table.column("embedding").combine_chunks()
  assert column.type.list_size == 4
  assert column.type.value_type.to_pandas_dtype() == dtype
  np.testing.assert_array_equal(np.array(column.to_pylist()), values)
  assert sorted(os.listdir(tmp_path)) == ["e.jsonl", "e.npy", "e.parquet"]


def test_output_is_checked_before_any_work(tmp_path):
  existing = tmp_path / "e.npy"
  existing.write_bytes(b"old")
  with pytest.raises(FileExistsError, match="pass --overwrite"):
    embedding_outputs.check_output(str(existing))
  assert embedding_outputs.check_output(str(existing), overwrite=True) == "npy"
  with pytest.raises(ValueError, match=r"name a \.npy, \.jsonl or \.parquet "
                     "file, or set --output_format"):
    embedding_outputs.check_output(str(tmp_path / "e.csv"))
  assert embedding_outputs.check_output(str(tmp_path / "e.bin"),
                                        "jsonl") == "jsonl"


def test_parquet_without_pyarrow_names_the_package(tmp_path, monkeypatch):
  real_import = builtins.__import__

  def no_pyarrow(name, *args, **kwargs):
    if name.split(".")[0] == "pyarrow":
      raise ImportError("No module named 'pyarrow'")
    return real_import(name, *args, **kwargs)
  monkeypatch.setattr(builtins, "__import__", no_pyarrow)
  with pytest.raises(ValueError, match="needs the pyarrow package"):
    embedding_outputs.check_output(str(tmp_path / "e.parquet"))


def test_a_failed_write_leaves_nothing(tmp_path):
  path = str(tmp_path / "e.jsonl")
  with pytest.raises(ValueError, match="2 embeddings for 3 sentences"):
    embedding_outputs.write_embeddings(path, np.zeros([2, 2]), SENTENCES)
  bad = np.array([[object()]], dtype=object)  # not JSON serialisable
  with pytest.raises(TypeError):
    embedding_outputs.write_embeddings(path, bad, ["x"])
  assert os.listdir(tmp_path) == []
