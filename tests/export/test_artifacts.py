"""The TFLite and ONNX artifacts: the SavedModel's embeddings, with their
runtime alone (export/artifacts.py, inference/artifact_runtime.py)."""
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from cmlm.export import artifacts
from cmlm.export import exporter
from cmlm.export.cards import artifact_card
from cmlm.inference import artifact_runtime
from cmlm.inference import embedders
from cmlm.inference import encode_files
from cmlm.inference import integrity
from cmlm.inference import layout
from cmlm.modeling import length_chunks
from tests.export import export_helpers

FORMATS = ("tflite", "onnx")
# The tiny encoder's weights are barely trained (4 steps), so its
# activations are nearly alike and int8 rounding weighs more than in a
# trained model (MiniLM: see docs/encoding_and_evaluation.md#speed).
INT8_MIN_COSINE = 0.98


def unit_cosines(a, b):
  return np.sum(export_helpers.unit(a) * export_helpers.unit(b), axis=1)


@pytest.fixture(scope="module")
def saved_model_embeddings(tiny_artifacts_export):
  return embedders.load_embedder(tiny_artifacts_export.export_dir,
                                 backend="saved_model").embed(
                                     export_helpers.ALL_SENTENCES, 4)


@pytest.mark.slow
@pytest.mark.parametrize("name", FORMATS)
def test_float32_artifact_embeds_as_the_saved_model(
    tiny_artifacts_export, saved_model_embeddings, name):
  model = artifact_runtime.load(
      os.path.join(tiny_artifacts_export.export_dir, name))
  embeddings = model.embed(export_helpers.ALL_SENTENCES, batch_size=4)
  assert embeddings.shape == saved_model_embeddings.shape
  assert unit_cosines(embeddings, saved_model_embeddings).min() >= 0.9999
  manifest = tiny_artifacts_export.artifacts[name]
  assert manifest["check"]["float32_min_cosine"] >= 0.9999


@pytest.mark.slow
@pytest.mark.parametrize("name", FORMATS)
def test_int8_artifact_is_within_its_bound_and_smaller(
    tiny_artifacts_export, saved_model_embeddings, name):
  model = artifact_runtime.load(
      os.path.join(tiny_artifacts_export.export_dir, name), quantized=True)
  embeddings = model.embed(export_helpers.ALL_SENTENCES, batch_size=4)
  assert unit_cosines(embeddings, saved_model_embeddings).min() >= (
      INT8_MIN_COSINE)
  sizes = tiny_artifacts_export.artifacts[name]["bytes"]
  assert sizes["int8"] < sizes["float32"]


@pytest.mark.slow
@pytest.mark.parametrize("name", FORMATS)
@pytest.mark.parametrize("quantized", [False, True])
def test_a_sentence_alone_embeds_as_in_a_batch(tiny_artifacts_export, name,
                                                quantized):
  model = artifact_runtime.load(
      os.path.join(tiny_artifacts_export.export_dir, name), quantized)
  batch = model.embed(export_helpers.ALL_SENTENCES, batch_size=8)
  alone = np.concatenate([model.embed([s]) for s in
                          export_helpers.ALL_SENTENCES])
  # Rows of other lengths share a batch: they are read in their own
  # chunk or padded, and padding is masked out.
  assert unit_cosines(batch, alone).min() >= (0.99 if quantized else 0.99999)


@pytest.mark.slow
def test_artifacts_run_in_a_fresh_process_without_tensorflow(
    tiny_artifacts_export, saved_model_embeddings, tmp_path):
  """Each artifact loads with its runtime and the vocabulary it carries;
  the model card's int8 snippet runs verbatim."""
  export_dir = tiny_artifacts_export.export_dir
  np.save(tmp_path / "expected.npy", saved_model_embeddings)
  script = "\n".join([
      "import sys",
      "sys.modules['tensorflow'] = None  # importing it would fail",
      "import numpy as np",
      "from cmlm.inference import artifact_runtime",
      f"sentences = {export_helpers.ALL_SENTENCES!r}",
      f"expected = np.load({str(tmp_path / 'expected.npy')!r})",
      f"for name in {FORMATS!r}:",
      f"  got = artifact_runtime.load({export_dir!r} + '/' + name).embed(",
      "      sentences)",
      "  got /= np.linalg.norm(got, axis=1, keepdims=True)",
      "  ref = expected / np.linalg.norm(expected, axis=1, keepdims=True)",
      "  assert np.sum(got * ref, axis=1).min() >= 0.9999, name",
      "assert 'onnxruntime' in sys.modules",
      "print('fresh ok')"])
  env = dict(os.environ, PYTHONPATH=export_helpers.REPO_ROOT)
  completed = subprocess.run([sys.executable, "-c", script], cwd=str(tmp_path),
                             env=env, capture_output=True, text=True,
                             timeout=300)
  assert completed.returncode == 0, completed.stderr[-3000:]
  assert "fresh ok" in completed.stdout

  with open(os.path.join(export_dir, "README.md"), encoding="utf-8") as f:
    card = f.read()
  section = card[card.index("## CPU artifacts"):]
  snippet = re.search(r"```python\n(.*?)```", section, re.S).group(1)
  assert snippet.splitlines() == artifact_card.int8_snippet("tflite")[1:-1]
  completed = subprocess.run(
      [sys.executable, "-c",
       "import sys; sys.modules['tensorflow'] = None\n" + snippet],
      cwd=export_dir, env=env, capture_output=True, text=True, timeout=300)
  assert completed.returncode == 0, completed.stderr[-3000:]
  dim = saved_model_embeddings.shape[1]
  assert completed.stdout.strip() == f"(2, {dim}) float32"


@pytest.mark.slow
def test_artifacts_carry_no_path_of_the_exporting_machine(
    tiny_run, tiny_artifacts_export):
  version_dir = tiny_artifacts_export.version_dir
  for name in FORMATS:
    for file in os.listdir(os.path.join(version_dir, name)):
      with open(os.path.join(version_dir, name, file), "rb") as f:
        data = f.read()
      for path in (tiny_run[0], version_dir, export_helpers.REPO_ROOT):
        assert path.encode() not in data, (name, file, path)


@pytest.mark.slow
def test_the_default_backend_is_the_fastest_held_and_errors_are_clear(
    tiny_run, tiny_export, tiny_artifacts_export):
  export_dir = tiny_artifacts_export.export_dir
  default = embedders.load_embedder(export_dir)
  assert isinstance(default._keep_alive, artifact_runtime.ArtifactModel)  # pylint: disable=protected-access
  # (its ONNX graph is the fused one, the fastest float32 file)
  assert default._keep_alive.format == "onnx"  # pylint: disable=protected-access
  assert not default._keep_alive.quantized  # pylint: disable=protected-access
  onnx_int8 = embedders.load_embedder(export_dir, backend="onnx",
                                      quantized=True)._keep_alive  # pylint: disable=protected-access
  assert (onnx_int8.format, onnx_int8.quantized) == ("onnx", True)
  with pytest.raises(ValueError, match="float32 only"):
    embedders.load_embedder(export_dir, backend="saved_model", quantized=True)
  with pytest.raises(ValueError, match="holds none"):
    embedders.load_embedder(tiny_run[0], backend="tflite")
  with pytest.raises(ValueError, match=r"--model=.* holds none"):
    embedders.load_embedder(tiny_export.export_dir, backend="onnx")
  with pytest.raises(ValueError, match="--backend must be auto or one of"):
    embedders.load_embedder(export_dir, backend="openvino")


def test_the_float32_order_puts_onnx_first_only_for_its_fused_graph(
    tmp_path):
  assert embedders.float32_order(str(tmp_path)) == embedders.FASTEST_FIRST
  os.makedirs(tmp_path / "onnx")
  for graph, first in ((artifact_runtime.TF2ONNX_GRAPH, "tflite"),
                       (artifact_runtime.FUSED_GRAPH, "onnx")):
    with open(tmp_path / "onnx" / artifact_runtime.MANIFEST, "w",
              encoding="utf-8") as f:
      json.dump({"files": {}, "graph": graph}, f)
    assert embedders.float32_order(str(tmp_path))[0] == first


@pytest.mark.slow
def test_encode_writes_the_int8_artifacts_embeddings(tiny_artifacts_export,
                                                     tmp_path):
  inputs = tmp_path / "in.txt"
  inputs.write_text("\n".join(export_helpers.SENTENCES), encoding="utf-8")
  encode_files.encode_file(
      tiny_artifacts_export.export_dir, str(inputs),
      str(tmp_path / "out.npy"), backend="tflite", quantized=True,
      show_progress=False)
  written = np.load(tmp_path / "out.npy")
  expected = artifact_runtime.load(
      os.path.join(tiny_artifacts_export.export_dir, "tflite"),
      quantized=True).embed(export_helpers.SENTENCES, normalize=True)
  np.testing.assert_allclose(written, expected, atol=1e-6)


@pytest.mark.slow
def test_export_reports_an_artifact_it_cannot_make_and_writes_the_others(
    tiny_run, tmp_path, capsys, monkeypatch):
  def fails(directory, function, encoder_model):
    raise RuntimeError("tf2onnx: unsupported op 'Lens'\nConversion failed.")
  monkeypatch.setitem(artifacts._WRITERS, "onnx", fails)  # pylint: disable=protected-access
  result = exporter.export_run(tiny_run[0], str(tmp_path / "export"),
                               formats=["tflite", "onnx"], write_card=False)
  out = capsys.readouterr().out
  assert ("export: onnx not written: this model does not convert "
          "(Conversion failed.); the other formats are.") in out
  assert sorted(result.artifacts) == ["tflite"]
  assert not os.path.exists(os.path.join(result.version_dir, "onnx"))
  assert artifact_runtime.is_artifact(os.path.join(result.export_dir,
                                                   "tflite"))
  with pytest.raises(FileNotFoundError, match="--formats=saved_model,onnx"):
    embedders.load_embedder(result.export_dir, backend="onnx")


def test_unknown_formats_are_refused_before_anything_is_built():
  with pytest.raises(ValueError, match="--formats: unknown 'tfjs'"):
    artifacts.parse_formats(["saved_model", "tfjs"])
  assert artifacts.parse_formats(["onnx"]) == ("saved_model", "onnx")


def test_the_runtime_chunks_rows_as_the_saved_models_do():
  assert artifact_runtime.ENCODER_CHUNK == length_chunks.ENCODER_CHUNK


@pytest.mark.slow
def test_an_embed_call_tokenizes_each_sentence_once(tiny_artifacts_export):
  # The embedder counts tokens to order its batches, then embeds them: the
  # tokens of the count are reused (tokenizing costs ~10 us a sentence).
  embedder = embedders.load_embedder(tiny_artifacts_export.export_dir,
                                     backend="tflite")
  model = embedder._keep_alive  # pylint: disable=protected-access
  tokenized = []
  encode_one = model.tokenizer.encode_one
  model.tokenizer.encode_one = lambda s: tokenized.append(s) or encode_one(s)
  sentences = export_helpers.ALL_SENTENCES
  embeddings = embedder.embed(sentences, batch_size=2)
  assert sorted(tokenized) == sorted(sentences)
  tokenized.clear()
  assert np.array_equal(model.embed(sentences, batch_size=2), embeddings)
  assert sorted(tokenized) == sorted(sentences)


@pytest.mark.slow
def test_the_onnx_artifact_of_a_bert_encoder_is_its_fused_graph(
    tiny_artifacts_export):
  """cmlm/tiny is BERT-shaped: its ONNX artifact is written in onnxruntime's
  fused kernels (export/fused_onnx.py), which artifact.json and the card
  say; float32 and int8 embed as the SavedModel (the tests above)."""
  import onnx  # pylint: disable=g-import-not-at-top
  manifest = tiny_artifacts_export.artifacts["onnx"]
  assert manifest["graph"] == artifacts.FUSED_GRAPH
  assert "not_fused" not in manifest
  onnx_dir = os.path.join(tiny_artifacts_export.export_dir, "onnx")
  for file, attention in (("model.onnx", "Attention"),
                          ("model_int8.onnx", "QAttention")):
    ops = {node.op_type for node in
           onnx.load(os.path.join(onnx_dir, file)).graph.node}
    assert attention in ops and "SkipLayerNormalization" in ops, file
  with open(os.path.join(tiny_artifacts_export.export_dir, "README.md"),
            encoding="utf-8") as f:
    assert "| `onnx/model.onnx` | `onnxruntime`, its fused kernels |" in (
        f.read())


@pytest.mark.slow
def test_every_projection_of_the_int8_onnx_model_is_int8(
    tiny_artifacts_export):
  # tf2onnx writes the attention's projections as Gemm, which onnxruntime's
  # dynamic quantization leaves float32: the export rewrites them first
  # (tests/export/test_fused_onnx.py: the tf2onnx graph of an encoder the
  # fused graph does not take).
  import onnx  # pylint: disable=g-import-not-at-top
  model = onnx.load(os.path.join(tiny_artifacts_export.export_dir, "onnx",
                                 "model_int8.onnx"))
  float_kernels = {t.name for t in model.graph.initializer
                   if t.data_type == onnx.TensorProto.FLOAT
                   and len(t.dims) >= 2}
  float_products = [node.name for node in model.graph.node
                    if node.op_type in ("MatMul", "Gemm")
                    and float_kernels.intersection(node.input)]
  assert not float_products
  assert any(node.op_type == "MatMulInteger" for node in model.graph.node)


def _damage(path, how):
  """Truncates `path` to half, or flips one bit in its middle (same size)."""
  size = os.path.getsize(path)
  with open(path, "r+b") as f:
    if how == "truncate":
      f.truncate(size // 2)
    else:
      f.seek(size // 2)
      byte = f.read(1)[0]
      f.seek(size // 2)
      f.write(bytes([byte ^ 1]))


@pytest.mark.slow
def test_a_damaged_file_of_any_backend_is_named_with_the_export_to_rerun(
    tiny_artifacts_export, tmp_path):
  """artifact.json and the version's checksums.json record each file's size
  and SHA-256: a truncated or altered model file of every backend (and an
  artifact's vocabulary) is refused before it runs, in one line naming the
  file and the export command that writes it again. A file an older export
  recorded no SHA-256 of that does not load is named the same way."""
  result = tiny_artifacts_export
  cases = [("tflite/model.tflite", "tflite", False, "truncate"),
           ("tflite/model_int8.tflite", "tflite", True, "flip"),
           ("onnx/model.onnx", "onnx", False, "flip"),
           ("onnx/model_int8.onnx", "onnx", True, "truncate"),
           ("onnx/vocab.txt", "onnx", False, "flip"),
           ("encoder/variables/variables.data-00000-of-00001", "saved_model",
            False, "flip"),
           ("preprocessor/saved_model.pb", "saved_model", False, "truncate")]
  for index, (name, backend, quantized, how) in enumerate(cases):
    export_dir = os.path.realpath(tmp_path / str(index))
    shutil.copytree(result.export_dir, export_dir, symlinks=True)
    version_dir = layout.resolve(export_dir)
    _damage(os.path.join(version_dir, name), how)
    with pytest.raises(integrity.DamagedModel) as raised:
      embedders.load_embedder(export_dir, backend=backend, quantized=quantized)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"{os.path.join(version_dir, name)} is damaged: "
                              ), message
    assert ("holds" if how == "truncate" else "is altered") in message
    assert message.endswith(
        f"write it again: python -m cmlm export --model_dir=RUN --checkpoint="
        f"RUN/ckpt-{result.step} --export_dir={export_dir} --formats="
        "saved_model,tflite,onnx,sentence_transformers --overwrite (RUN: the "
        "training run it was exported from)"), message  # the fixture's formats
  # An export of before the SHA-256 records: a file of the recorded size
  # that its runtime cannot load.
  export_dir = os.path.realpath(tmp_path / "older")
  shutil.copytree(result.export_dir, export_dir, symlinks=True)
  version_dir = layout.resolve(export_dir)
  os.remove(os.path.join(version_dir, integrity.CHECKSUMS_FILE))
  manifest_path = os.path.join(version_dir, "onnx", artifact_runtime.MANIFEST)
  with open(manifest_path) as f:
    manifest = json.load(f)
  del manifest["sha256"]
  with open(manifest_path, "w") as f:
    json.dump(manifest, f)
  for name in ("onnx/model.onnx", "encoder/saved_model.pb"):
    path = os.path.join(version_dir, name)
    with open(path, "r+b") as f:
      f.write(b"\xff" * 64)  # the same size, not a model
  for backend, words in (("onnx", "the onnx model does not load ("),
                         ("saved_model", "the SavedModel does not load (")):
    with pytest.raises(integrity.DamagedModel, match=re.escape(words)):
      embedders.load_embedder(export_dir, backend=backend)
