"""The exported SavedModels, loaded the way TF-Hub users and TF Serving do.

One tiny model is trained and exported per session (tests/export/export_helpers.py).
"""
import contextlib
import io
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_hub as hub
import tf_keras

from cmlm.export import encoder as encoder_lib
from cmlm.export import serving
from tests.export import export_helpers as export_helpers

pytestmark = pytest.mark.slow

# What a user's process does: tensorflow, tensorflow_text, tensorflow_hub and
# tf_keras, nothing of this project. It also lists the ops of each graph that
# core TensorFlow does not register (read before tensorflow_text loads).
FRESH_PROCESS = r"""
import json, os, sys
import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2
from tensorflow.python.framework import op_def_registry

paths = json.loads(sys.argv[1])

def non_core_ops(path):
  saved_model = saved_model_pb2.SavedModel()
  with open(os.path.join(path, "saved_model.pb"), "rb") as f:
    saved_model.ParseFromString(f.read())
  ops = set()
  for meta_graph in saved_model.meta_graphs:
    ops |= {node.op for node in meta_graph.graph_def.node}
    for function in meta_graph.graph_def.library.function:
      ops |= {node.op for node in function.node_def}
  return sorted(op for op in ops if op_def_registry.get(op) is None)

report = {"non_core_ops": {name: non_core_ops(paths[name])
                           for name in ("encoder", "preprocessor", "serving")}}
import tensorflow_text  # registers the TF Text ops
import tensorflow_hub as hub
import tf_keras

with open(paths["sentences"]) as f:
  batch = tf.constant(json.load(f))
arrays = {}
text = tf_keras.Input(shape=(), dtype=tf.string)
encoder_inputs = hub.KerasLayer(paths["preprocessor"])(text)
embedding = hub.KerasLayer(paths["encoder"])(encoder_inputs)["default"]
arrays["keras_pair"] = tf_keras.Model(text, embedding)(batch).numpy()
text = tf_keras.Input(shape=(), dtype=tf.string)
arrays["keras_serving"] = tf_keras.Model(
    text, hub.KerasLayer(paths["serving"])(text))(batch).numpy()

preprocessor = tf.saved_model.load(paths["preprocessor"])
encoder = tf.saved_model.load(paths["encoder"])
inputs = preprocessor(batch)
arrays["input_word_ids"] = inputs["input_word_ids"].numpy()
arrays["loaded_pair"] = encoder(inputs)["default"].numpy()
arrays["pooled_output"] = encoder(inputs)["pooled_output"].numpy()
positions = tf.ones([batch.shape[0], 2], tf.int32)
arrays["mlm_logits"] = encoder.mlm(
    dict(inputs, masked_lm_positions=positions))["mlm_logits"].numpy()
tokens = preprocessor.tokenize(batch)
pair = preprocessor.bert_pack_inputs([tokens, tokens[::-1]],
                                     seq_length=tf.constant(24))
arrays["pair_type_ids"] = pair["input_type_ids"].numpy()
arrays["pair_pooled"] = encoder(pair)["pooled_output"].numpy()
# TF-Hub's BERT recipe for sentence pairs, in a Keras model.
segments = [tf_keras.Input(shape=(), dtype=tf.string) for _ in range(2)]
tokenize = hub.KerasLayer(preprocessor.tokenize)
pack = hub.KerasLayer(preprocessor.bert_pack_inputs,
                      arguments=dict(seq_length=24))
pooled = hub.KerasLayer(paths["encoder"])(
    pack([tokenize(segment) for segment in segments]))["pooled_output"]
arrays["keras_pair_segments"] = tf_keras.Model(segments, pooled)(
    [batch, batch[::-1]]).numpy()
serving = tf.saved_model.load(paths["serving"])
arrays["signature"] = serving.signatures["serving_default"](
    sentences=batch)["embedding"].numpy()
report["do_lower_case"] = bool(preprocessor.do_lower_case.numpy())
report["project_modules"] = sorted(
    m for m in sys.modules
    if m.split(".")[0] in ("cmlm", "modeling", "data_pipelines", "export",
                           "experiments", "official"))
np.savez(paths["arrays"], **arrays)
with open(paths["report"], "w") as f:
  json.dump(report, f)
"""

# TF Text ops in BERT tokenization since TF Text 2.4, all built into TF
# Serving, which embeds an older TF Text (2.12 in 2.18) than we train with.
# Newer ops such as TFText>RoundRobinTrim are not (tensorflow/serving#2267).
ALLOWED_NON_CORE_OPS = {"CaseFoldUTF8", "NormalizeUTF8",
                        "RegexSplitWithOffsets", "WordpieceTokenizeWithOffsets"}


@pytest.fixture(scope="module")
def fresh_process(tiny, tmp_path_factory):
  """Embeddings and facts from a process that imports nothing of ours."""
  work = tmp_path_factory.mktemp("fresh")
  result = tiny.result
  paths = dict(encoder=result.encoder_dir,
               preprocessor=result.preprocessor_dir,
               serving=result.serving_dir,
               sentences=str(work / "sentences.json"),
               arrays=str(work / "arrays.npz"),
               report=str(work / "report.json"))
  with open(paths["sentences"], "w") as f:
    json.dump(export_helpers.ALL_SENTENCES, f)
  export_helpers.run_fresh_python(FRESH_PROCESS, json.dumps(paths))
  with open(paths["report"]) as f:
    report = json.load(f)
  return dict(np.load(paths["arrays"])), report


def test_fresh_process_imports_nothing_of_this_project(fresh_process):
  _, report = fresh_process
  assert report["project_modules"] == []


def test_every_way_of_loading_gives_the_in_memory_embeddings(
    tiny, fresh_process):
  arrays, _ = fresh_process
  expected = tiny.in_memory_embeddings(export_helpers.ALL_SENTENCES)
  normalized = expected / np.linalg.norm(expected, axis=1, keepdims=True)
  for name in ("keras_pair", "loaded_pair", "pooled_output"):
    np.testing.assert_allclose(arrays[name], expected, rtol=0, atol=1e-5,
                               err_msg=name)
  for name in ("keras_serving", "signature"):  # L2-normalised by default
    np.testing.assert_allclose(arrays[name], normalized, rtol=0, atol=1e-5,
                               err_msg=name)


def test_preprocessor_gives_the_training_token_ids(tiny, fresh_process):
  arrays, report = fresh_process
  expected = tiny.tokenizer.tokenize_and_pack(
      tf.constant(export_helpers.ALL_SENTENCES))["input_word_ids"]
  np.testing.assert_array_equal(arrays["input_word_ids"], expected)
  assert report["do_lower_case"] is True


def test_awkward_inputs_give_finite_embeddings_of_the_right_shape(
    fresh_process):
  arrays, _ = fresh_process
  shape = (len(export_helpers.ALL_SENTENCES), 16)
  for name in ("keras_pair", "loaded_pair", "keras_serving", "signature"):
    assert arrays[name].shape == shape, name
    assert np.isfinite(arrays[name]).all(), name


def test_mlm_and_two_segment_packing_load_without_the_project(
    fresh_process):
  arrays, _ = fresh_process
  assert arrays["mlm_logits"].shape == (len(export_helpers.ALL_SENTENCES), 2,
                                        export_helpers.tiny_params()
                                        .task.model.encoder.vocab_size)
  assert np.isfinite(arrays["mlm_logits"]).all()
  assert arrays["pair_type_ids"].shape[1] == 24
  assert arrays["pair_type_ids"][0].max() == 1  # a second segment
  np.testing.assert_allclose(arrays["keras_pair_segments"],
                             arrays["pair_pooled"], atol=1e-5, rtol=0)


def test_graphs_use_only_allowed_tf_text_ops(fresh_process):
  _, report = fresh_process
  for name, ops in report["non_core_ops"].items():
    assert set(ops) <= ALLOWED_NON_CORE_OPS, (name, ops)
  assert report["non_core_ops"]["encoder"] == []
  assert "WordpieceTokenizeWithOffsets" in report["non_core_ops"]["serving"]


def _saved_model_cli(path):
  cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
  return subprocess.Popen([cli, "show", "--dir", path, "--all"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, env=dict(os.environ,
                                              TF_CPP_MIN_LOG_LEVEL="2"))


def _saved_model_cli_signature(path, name="serving_default"):
  """What `saved_model_cli show --dir PATH --tag_set serve --signature_def
  NAME` prints (its inputs and outputs), run in this process."""
  from tensorflow.python.tools import saved_model_cli  # pylint: disable=g-import-not-at-top
  printed = io.StringIO()
  with contextlib.redirect_stdout(printed):
    saved_model_cli._show_inputs_outputs(path, "serve", name)  # pylint: disable=protected-access
  return printed.getvalue()


# docs/export.md's way to run a signature with saved_model_cli: the stock
# script has no TF Text ops, so it starts from Python after the import.
SAVED_MODEL_CLI_WITH_TF_TEXT = (
    "import sys, tensorflow_text; from tensorflow.python.tools import "
    "saved_model_cli; sys.argv[0] = 'saved_model_cli'; saved_model_cli.main()")


def _saved_model_cli_run(path):
  return subprocess.Popen(
      [sys.executable, "-c", SAVED_MODEL_CLI_WITH_TF_TEXT, "run", "--dir",
       path, "--tag_set", "serve", "--signature_def", "serving_default",
       "--input_exprs", 'sentences=["A sentence.", "Another one."]'],
      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))


def _signature(listing, name="serving_default"):
  """The `signature_def['name']` block of `saved_model_cli show --all`."""
  block = listing.split(f"signature_def['{name}']:")[1]
  return block.split("signature_def[")[0]


def test_saved_model_cli_lists_the_documented_signatures(tiny):
  result = tiny.result
  runs = {"serving": _saved_model_cli(result.serving_dir),
          "run": _saved_model_cli_run(result.serving_dir)}
  # The encoder's and the preprocessor's signatures, listed meanwhile by
  # the same code of saved_model_cli in this process (the commands above
  # are the documented ones; each start of the tool costs ~10 CPU-s).
  listings = {name: _saved_model_cli_signature(path) for name, path in (
      ("encoder", result.encoder_dir),
      ("preprocessor", result.preprocessor_dir))}
  listings.update((name, run.communicate(timeout=300)[0])
                  for name, run in runs.items())
  # The documented `run` gives one embedding a sentence.
  with open(os.path.join(export_helpers.REPO_ROOT, "docs", "export.md"),
            encoding="utf-8") as f:
    documented = " ".join(f.read().replace("\\\n", " ").split())
  assert " ".join(SAVED_MODEL_CLI_WITH_TF_TEXT.split()) in documented
  ran = listings["run"].split("Result for output key embedding:")
  assert len(ran) == 2, listings["run"][-2000:]
  printed = ran[1][:ran[1].index("]]") + 2]  # NumPy's print of the array
  numbers = re.findall(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?", printed)
  rows = np.array(numbers, float).reshape(printed.count("[") - 1, -1)
  assert rows.shape == (2, 16), printed
  np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1, atol=1e-5)
  served = " ".join(_signature(listings["serving"]).split())
  assert ("inputs['sentences'] tensor_info: dtype: DT_STRING shape: (-1)"
          in served)
  assert ("outputs['embedding'] tensor_info: dtype: DT_FLOAT shape: (-1, 16)"
          in served)
  assert "tensorflow/serving/predict" in served
  encoded = " ".join(listings["encoder"].split())
  for name in encoder_lib.INPUT_NAMES:
    assert (f"inputs['{name}'] tensor_info: dtype: DT_INT32 shape: (-1, -1)"
            in encoded)
  for name in ("default", "pooled_output", "sequence_output",
               "encoder_outputs_0"):
    assert f"outputs['{name}'] tensor_info: dtype: DT_FLOAT" in encoded
  packed = " ".join(listings["preprocessor"].split())
  assert "inputs['sentences'] tensor_info: dtype: DT_STRING" in packed
  for name in encoder_lib.INPUT_NAMES:
    assert (f"outputs['{name}'] tensor_info: dtype: DT_INT32 shape: "
            f"(-1, {export_helpers.SEQ_LENGTH})") in packed


def test_fine_tuning_through_keras_layer_changes_weights_and_lowers_loss(tiny):
  tf_keras.utils.set_random_seed(0)
  result = tiny.result
  preprocessor = hub.load(result.preprocessor_dir)
  encoder = hub.KerasLayer(result.encoder_dir, trainable=True)
  inputs = {name: tf_keras.Input(shape=(None,), dtype=tf.int32, name=name)
            for name in encoder_lib.INPUT_NAMES}
  score = tf_keras.layers.Dense(1)(encoder(inputs)["default"])
  model = tf_keras.Model(inputs, score)
  model.compile(tf_keras.optimizers.Adam(3e-3), loss="mse")
  features = preprocessor(tf.constant(export_helpers.SENTENCES * 2))
  targets = np.array([[-1.0], [0.0], [1.0]] * 2, np.float32)  # per sentence
  names = [w.name for w in encoder.trainable_weights]
  assert names and not any("pooler" in name for name in names)
  before = [w.numpy() for w in encoder.trainable_weights]
  first_loss = model.evaluate(features, targets, verbose=0)
  model.fit(features, targets, epochs=15, batch_size=6, verbose=0)
  assert model.evaluate(features, targets, verbose=0) < 0.5 * first_loss
  changed = [not np.allclose(b, w.numpy())
             for b, w in zip(before, encoder.trainable_weights)]
  assert sum(changed) > len(changed) // 2


def test_serving_records_its_normalisation(tiny):
  loaded = tf.saved_model.load(tiny.result.serving_dir)
  assert bool(loaded.l2_normalized.numpy())
  assert tiny.result.serving_dir.endswith(os.path.join(
      "serving", str(tiny.result.step)))
  assert serving.SIGNATURE_NAME in loaded.signatures


def test_the_documented_hub_load_of_a_serving_version_runs_as_written(tiny):
  """docs/export.md's `hub.load` snippet, with its one path replaced by the
  tiny export's `serving/<version>`, runs in a fresh interpreter that cannot
  import the garden and has no Keras 2 selected: one version is a
  SavedModel, and `import tensorflow_text` is all it needs."""
  with open(os.path.join(export_helpers.REPO_ROOT, "docs", "export.md"),
            encoding="utf-8") as f:
    blocks = re.findall(r"^```python\n(.*?)^```", f.read(), re.M | re.S)
  snippet, = [block for block in blocks if "hub.load(" in block]
  documented = "exports/tiny/serving/2000"
  assert documented in snippet and "import tensorflow_text" in snippet
  script = snippet.replace(documented, tiny.result.serving_dir)
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
  env.pop("PYTHONPATH", None)
  env.pop("TF_USE_LEGACY_KERAS", None)
  completed = subprocess.run([sys.executable, "-c", script], env=env,
                             cwd="/", capture_output=True, text=True,
                             timeout=300)
  assert completed.returncode == 0, completed.stderr[-3000:]
  assert "shape=(2, 16)" in completed.stdout, completed.stdout[-2000:]
