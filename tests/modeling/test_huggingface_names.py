"""Hugging Face BERT names and layouts, both ways, and the safetensors
writer (modeling/importers/huggingface.py, weight_files.py): what
`cmlm import` reads, the sentence-transformers folder writes back."""
import json

import numpy as np
import pytest

from cmlm.modeling.importers import huggingface
from cmlm.modeling.importers import weight_files
from tests.training import import_helpers


def test_hf_names_are_the_inverse_of_model_garden_names():
  config = import_helpers.TINY_CONFIG
  tensors = import_helpers.random_bert_tensors(seed=3)
  garden = huggingface.to_model_garden_names(
      tensors, config["num_attention_heads"])
  back = huggingface.to_huggingface_names(garden)
  # Buffers and the decoder tied to the embeddings are not weights.
  expected = {name: value for name, value in tensors.items()
              if name not in ("embeddings.position_ids",
                              "cls.predictions.decoder.weight",
                              "cls.predictions.decoder.bias")}
  assert sorted(back) == sorted(expected)
  for name, value in expected.items():
    np.testing.assert_array_equal(back[name], value, err_msg=name)
  # And the other way: Model Garden -> HF -> Model Garden.
  again = huggingface.to_model_garden_names(back,
                                            config["num_attention_heads"])
  assert sorted(again) == sorted(garden)
  for name, value in garden.items():
    np.testing.assert_array_equal(again[name], value, err_msg=name)


def test_a_foreign_weight_is_one_clear_error():
  with pytest.raises(ValueError, match="lens/kernel is not a weight"):
    huggingface.to_huggingface_names({"lens/kernel": np.zeros([2, 2])})


def test_written_safetensors_read_back_and_match_the_reference_writer(
    tmp_path):
  tensors = {"b.weight": np.arange(12, dtype=np.float32).reshape(3, 4),
             "a.bias": np.linspace(-1, 1, 5, dtype=np.float32)}
  path = str(tmp_path / "model.safetensors")
  weight_files.write_safetensors(tensors, path)
  read = weight_files.read_safetensors(path)
  assert sorted(read) == sorted(tensors)
  for name, value in tensors.items():
    np.testing.assert_array_equal(read[name], value)
  with open(path, "rb") as f:
    length = int.from_bytes(f.read(8), "little")
    assert length % 8 == 0
    assert json.loads(f.read(length))["__metadata__"] == {"format": "pt"}
  safetensors = pytest.importorskip("safetensors.numpy")
  reference = str(tmp_path / "reference.safetensors")
  safetensors.save_file(tensors, reference, metadata={"format": "pt"})
  with open(path, "rb") as a, open(reference, "rb") as b:
    assert a.read() == b.read()
