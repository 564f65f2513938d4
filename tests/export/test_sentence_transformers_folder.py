"""The sentence-transformers / Hugging Face folder of an export
(export/sentence_transformers_folder.py): loaded without the garden, it
embeds and tokenizes as the export does, and `cmlm import` reads it back
into the same model."""
import json
import os
import re
import types

import numpy as np
import pytest

from cmlm.data_pipelines import tokenization
from cmlm.export import exporter
from cmlm.export import sentence_transformers_folder as folder_lib
from cmlm.export.cards import sentence_transformers_card
from cmlm.inference import embedders
from cmlm.inference import run_record
from cmlm.training import run_dir
from tests.export import export_helpers

FOLDER = folder_lib.DIRECTORY
# The tiny encoder is barely trained (4 steps): int8 rounding weighs more
# than in a trained model (tests/export/test_artifacts.py).
INT8_MIN_COSINE = 0.98

# Run in an interpreter without the garden (nor TensorFlow): the folder
# with sentence-transformers and transformers, then the card's snippets as
# written, from the folder.
_FRESH = r"""
import json, os, sys
import numpy as np
from sentence_transformers import SentenceTransformer
from transformers import AutoTokenizer
folder, inputs = sys.argv[1], json.load(open(sys.argv[2]))
sentences, expected = inputs["sentences"], np.array(inputs["expected"])
model = SentenceTransformer(folder, device="cpu")
got = model.encode(sentences, batch_size=4)
expected /= np.linalg.norm(expected, axis=1, keepdims=True)
tokenizer = AutoTokenizer.from_pretrained(folder)
ids = tokenizer(sentences, truncation=True,
                max_length=model.max_seq_length)["input_ids"]
os.chdir(folder)
for snippet in inputs["snippets"]:
  exec(compile(snippet, "card", "exec"), {})
print(json.dumps(dict(
    cosines=np.sum(got * expected, axis=1).tolist(),
    norms=np.linalg.norm(got, axis=1).tolist(), ids=ids,
    max_seq_length=model.max_seq_length,
    modules=[type(m).__name__ for m in model],
    garden=[m for m in ("cmlm", "tensorflow") if m in sys.modules])))
"""


def _folder(export) -> str:
  return os.path.join(export.version_dir, FOLDER)


def _packed_ids(model_dir, sentences):
  params = run_dir.load_params(model_dir)
  packed = tokenization.build_wordpiece_tokenizer(
      params.task.tokenization).tokenize_and_pack(sentences)
  return [list(row[mask == 1]) for row, mask in zip(
      packed["input_word_ids"].numpy(), packed["input_mask"].numpy())]


@pytest.mark.slow
def test_the_folder_loads_without_the_garden_and_embeds_as_the_export(
    tiny_run, tiny_artifacts_export, tmp_path):
  sentences = export_helpers.ALL_SENTENCES + [
      "Literal [CLS] and [MASK] are text."]
  expected = embedders.load_embedder(
      tiny_artifacts_export.export_dir, backend="saved_model").embed(sentences)
  manifest = tiny_artifacts_export.sentence_transformers
  snippets = ["\n".join(lines[1:-1]) + "\n" for lines in
              sentence_transformers_card.usage_snippets(manifest)]
  with open(os.path.join(_folder(tiny_artifacts_export), "README.md"),
            encoding="utf-8") as f:
    card = f.read()
  assert [s for s in re.findall(r"```python\n(.*?)```", card, re.S)] == (
      snippets)
  inputs = tmp_path / "inputs.json"
  inputs.write_text(json.dumps(dict(sentences=sentences,
                                    expected=expected.tolist(),
                                    snippets=snippets)))
  completed = export_helpers.run_fresh_python(
      _FRESH, _folder(tiny_artifacts_export), str(inputs))
  lines = completed.stdout.strip().splitlines()
  dim = expected.shape[1]
  assert lines[:2] == [f"(2, {dim})", f"(2, {dim})"]  # the card's snippets
  result = json.loads(lines[-1])
  assert result["garden"] == []
  assert result["modules"] == ["Transformer", "Pooling", "Normalize"]
  assert min(result["cosines"]) >= 0.99999, result["cosines"]
  np.testing.assert_allclose(result["norms"], 1.0, atol=1e-5)
  seq_length = export_helpers.SEQ_LENGTH
  assert result["max_seq_length"] == seq_length
  # transformers' tokenizer gives the in-graph ids (the "[CLS]" of a
  # sentence is text, as the garden reads it).
  assert result["ids"] == _packed_ids(tiny_run[0], sentences)
  check = manifest["check"]
  assert check["float32_min_cosine"] >= 0.99999
  assert check["int8_min_cosine"] >= INT8_MIN_COSINE


@pytest.mark.slow
def test_the_folder_holds_the_layout_sentence_transformers_reads(
    tiny_run, tiny_artifacts_export):
  folder = _folder(tiny_artifacts_export)
  read = lambda *path: json.load(open(os.path.join(folder, *path),
                                      encoding="utf-8"))
  params = run_dir.load_params(tiny_run[0])
  encoder = params.task.model.encoder
  assert [m["type"].rsplit(".", 1)[-1] for m in read("modules.json")] == [
      "Transformer", "Pooling", "Normalize"]
  pooling = read("1_Pooling", "config.json")
  assert pooling["pooling_mode_mean_tokens"] and not (
      pooling["pooling_mode_cls_token"] or pooling["pooling_mode_max_tokens"])
  assert pooling["word_embedding_dimension"] == encoder.hidden_size
  assert read("sentence_bert_config.json")["max_seq_length"] == (
      params.task.tokenization.seq_length)
  config = read("config.json")
  assert (config["hidden_act"], config["num_hidden_layers"],
          config["hidden_size"]) == ("gelu_new", encoder.num_layers,
                                     encoder.hidden_size)
  assert read("config_sentence_transformers.json")[
      "similarity_fn_name"] == "cosine"
  # One tokenizer.json for every runtime: the folder's and the artifacts'.
  files = [os.path.join(tiny_artifacts_export.version_dir, part,
                        "tokenizer.json")
           for part in ("tflite", "onnx", FOLDER)]
  contents = {open(path, "rb").read() for path in files}
  assert len(contents) == 1
  assert all(tiny_artifacts_export.artifacts[name]["tokenizer_file"] ==
             "tokenizer.json" for name in ("tflite", "onnx"))
  with open(os.path.join(folder, "README.md"), encoding="utf-8") as f:
    card = f.read()
  assert card.startswith("---\n") and (
      "\nlibrary_name: sentence-transformers\n" in card)
  with open(os.path.join(tiny_artifacts_export.version_dir, "README.md"),
            encoding="utf-8") as f:
    assert "## sentence-transformers and Hugging Face" in f.read()
  for directory, _, names in os.walk(folder):
    for name in names:
      with open(os.path.join(directory, name), "rb") as f:
        data = f.read()
      for path in (tiny_run[0], tiny_artifacts_export.version_dir,
                   export_helpers.REPO_ROOT):
        assert path.encode() not in data, (name, path)


def _model(head="none", representation="pooled", norm_first=False,
           activation="gelu"):
  """What `check_exportable` reads of a run's `task.model`."""
  return types.SimpleNamespace(
      pooling_head=types.SimpleNamespace(type=head),
      sentence_representation=representation,
      encoder=types.SimpleNamespace(norm_first=norm_first,
                                    hidden_activation=activation))


@pytest.mark.slow
def test_an_embedding_it_cannot_express_is_refused_before_any_work(
    tiny_run, tmp_path):
  run = run_record.read_run(tiny_run[0])
  run.params.override({"task": {"model": {
      "sentence_representation": "proj"}}})
  export_dir = tmp_path / "export"
  with pytest.raises(ValueError, match=r"^--formats=sentence_transformers: "
                     r"the run's embedding is the mean of CMLM's projections"):
    exporter.export_run(tiny_run[0], str(export_dir), run=run,
                        formats=("sentence_transformers",))
  assert not export_dir.exists()
  folder_lib.check_exportable(_model())
  for model, message in [
      (_model(head="lens"), "its 'lens' pooling head"),
      (_model(norm_first=True), "norm_first"),
      (_model(activation="swish"),
       "'swish' has no Hugging Face BERT equivalent")]:
    with pytest.raises(ValueError, match=message):
      folder_lib.check_exportable(model)


@pytest.mark.slow
def test_cmlm_import_of_the_folder_gives_the_same_export(
    tiny_run, tiny_artifacts_export, tmp_path):
  from cmlm.experiments import registry_imports  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  from cmlm.training import import_run  # pylint: disable=g-import-not-at-top
  first = _folder(tiny_artifacts_export)
  imported = import_run.import_model(first, str(tmp_path / "run"))
  ours, theirs = (imported.params.task,
                  run_dir.load_params(tiny_run[0]).task)
  for key in ("lower_case", "text_normalization", "seq_length"):
    assert getattr(ours.tokenization, key) == getattr(theirs.tokenization, key)
  assert ours.model.pooling == theirs.model.pooling
  again = exporter.export_run(imported.model_dir, str(tmp_path / "export"),
                              formats=("sentence_transformers",))
  second = os.path.join(again.version_dir, FOLDER)
  for name in ("model.safetensors", "config.json", "tokenizer.json",
               "vocab.txt", "tokenizer_config.json", "modules.json",
               os.path.join("1_Pooling", "config.json"),
               "sentence_bert_config.json"):
    with open(os.path.join(first, name), "rb") as a, open(
        os.path.join(second, name), "rb") as b:
      assert a.read() == b.read(), name
  # The same weights (model.safetensors holds every transformer weight),
  # vocabulary, tokenization and pooling: the same embedding.
