"""Importing a Hugging Face BERT: names, layouts, numerics, the model_dir.

The source is a tiny random BERT in sentence-transformers' layout, written by
the test with NumPy (tests/training/import_helpers.py); no torch is needed.
"""
import json
import os
import subprocess
import sys
import types

import numpy as np
import pytest

import tensorflow as tf

from cmlm.experiments import registry_imports  # noqa: F401  (registers cmlm/en_base)
from cmlm.modeling.importers import weight_files
from tests.training import import_helpers as tiny
from cmlm.training import import_run as importer
from cmlm.training import run_dir as checkpoint_lib
from cmlm.training import task as task_lib
from tests import helpers

REPO_ROOT = helpers.REPO_ROOT


def _restore(params, checkpoint_path):
  """The run's encoder and CMLM head, restored by checkpoint item name."""
  encoder, head = checkpoint_lib.restore_encoder(params, checkpoint_path,
                                                 with_mlm_head=True)
  return types.SimpleNamespace(
      encoder=encoder, head=head, projection_head=encoder.projection_head,
      variables=encoder.variables + head.variables)


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
  """A tiny HF BERT, imported; (tensors, config, ImportResult, model)."""
  root = tmp_path_factory.mktemp("import")
  tensors, config = tiny.write_tiny_bert(str(root / "hf"))
  result = importer.import_model(str(root / "hf"), str(root / "model_dir"))
  params = checkpoint_lib.load_params(result.model_dir)
  model = _restore(params, tf.train.latest_checkpoint(result.model_dir))
  return tensors, config, result, model


def _batch(config, seed=1):
  rng = np.random.default_rng(seed)
  ids = rng.integers(5, config["vocab_size"], size=(3, 9)).astype(np.int32)
  mask = np.ones_like(ids)
  mask[1, 6:], mask[2, 3:] = 0, 0
  ids[mask == 0] = 0
  return ids, mask


def _encode(model, ids, mask):
  inputs = dict(input_word_ids=tf.constant(ids), input_mask=tf.constant(mask),
                input_type_ids=tf.zeros_like(ids))
  return model.encoder(inputs, training=False)


def test_safetensors_reader_reads_what_the_format_holds(tmp_path):
  arrays = {"a": np.arange(6, dtype=np.float32).reshape(2, 3),
            "half": np.array([1.5, -2.0], np.float16),
            "ids": np.arange(4, dtype=np.int64)}
  path = str(tmp_path / "x.safetensors")
  tiny.write_safetensors(path, arrays)
  read = weight_files.read_safetensors(path)
  assert sorted(read) == sorted(arrays)
  for name, array in arrays.items():
    np.testing.assert_array_equal(read[name], array)
    assert read[name].dtype == array.dtype
  try:
    from safetensors import numpy as reference
  except ImportError:
    return
  for name, array in reference.load_file(path).items():
    np.testing.assert_array_equal(read[name], array)


def test_bfloat16_is_read_as_float32(tmp_path):
  values = np.array([1.0, -2.5, 3.140625], np.float32)
  raw = (values.view(np.uint32) >> 16).astype("<u2").tobytes()
  header = b'{"w":{"dtype":"BF16","shape":[3],"data_offsets":[0,6]}}'
  path = tmp_path / "bf16.safetensors"
  path.write_bytes(len(header).to_bytes(8, "little") + header + raw)
  np.testing.assert_array_equal(
      weight_files.read_safetensors(str(path))["w"], values)


def test_every_hf_tensor_lands_in_its_variable(imported):
  tensors, config, _, model = imported
  heads = config["num_attention_heads"]
  variables = {v.name.split(":")[0]: v.numpy() for v in model.variables}
  get = lambda suffix: next(v for k, v in variables.items()
                            if k.endswith(suffix))
  np.testing.assert_array_equal(
      get("transformer/word_embeddings/embeddings"),
      tensors["embeddings.word_embeddings.weight"])
  np.testing.assert_array_equal(
      get("embeddings/layer_norm/gamma"),
      tensors["embeddings.LayerNorm.weight"])
  for i in range(config["num_hidden_layers"]):
    layer = f"encoder.layer.{i}."
    query = get(f"layer_{i}/self_attention/query/kernel")  # [in, heads, size]
    weight = tensors[f"{layer}attention.self.query.weight"]  # [out, in]
    size = weight.shape[0] // heads
    for head in range(heads):
      np.testing.assert_array_equal(
          query[:, head, :], weight[head * size:(head + 1) * size].T)
    output = get(f"layer_{i}/self_attention/attention_output/kernel")
    np.testing.assert_array_equal(
        output.reshape(-1, output.shape[-1]),
        tensors[f"{layer}attention.output.dense.weight"].T)
    np.testing.assert_array_equal(
        get(f"layer_{i}/intermediate/kernel"),
        tensors[f"{layer}intermediate.dense.weight"].T)
    np.testing.assert_array_equal(
        get(f"layer_{i}/output_layer_norm/beta"),
        tensors[f"{layer}output.LayerNorm.bias"])
  np.testing.assert_array_equal(get("cls/predictions/output_bias/bias"),
                                tensors["cls.predictions.bias"])


def test_imported_encoder_computes_what_hf_bert_computes(imported):
  tensors, config, _, model = imported
  ids, mask = _batch(config)
  expected = tiny.numpy_bert(tensors, config, ids, mask)
  outputs = _encode(model, ids, mask)
  sequence = outputs["sequence_output"].numpy()
  np.testing.assert_allclose(sequence[mask == 1], expected[mask == 1],
                             atol=2e-5)
  np.testing.assert_allclose(outputs["default"].numpy(),
                             tiny.mean_pool(expected, mask), atol=2e-5)


def test_exact_gelu_is_approximated_closely(tmp_path):
  tensors, config = tiny.write_tiny_bert(str(tmp_path / "hf"),
                                         config={"hidden_act": "gelu"})
  result = importer.import_model(str(tmp_path / "hf"), str(tmp_path / "out"))
  assert result.params.task.model.encoder.hidden_activation == "gelu"
  model = _restore(result.params, result.checkpoint_path)
  ids, mask = _batch(config)
  expected = tiny.mean_pool(tiny.numpy_bert(tensors, config, ids, mask), mask)
  np.testing.assert_allclose(_encode(model, ids, mask)["default"].numpy(),
                             expected, atol=2e-3)


def test_model_dir_records_the_source_tokenizer_and_pooling(tmp_path):
  tiny.write_tiny_bert(str(tmp_path / "hf"), pooling="cls", max_seq_length=20,
                       lower_case=False)
  result = importer.import_model(str(tmp_path / "hf"), str(tmp_path / "out"))
  params = checkpoint_lib.load_params(result.model_dir)  # as export reads it
  data = params.task.tokenization
  assert params.task.model.pooling == "cls"
  assert (data.seq_length, data.lower_case) == (20, False)
  assert data.vocab_file == os.path.join(result.model_dir, "vocab.txt")
  with open(data.vocab_file, encoding="utf-8") as f:
    assert f.read().split() == tiny.VOCAB
  assert params.task.model.encoder.num_layers == 2
  assert checkpoint_lib.checkpoint_step(result.checkpoint_path) == 0
  assert sorted(os.listdir(result.model_dir)) == [
      "checkpoint", "ckpt-0.data-00000-of-00001", "ckpt-0.index",
      "import_info.json", "params.yaml", "vocab.txt"]


def test_model_dir_records_the_source_s_name_and_license(tmp_path):
  """import_info.json: the source by name (never a path of this machine),
  its kind, and what its README.md states, for the export's model card."""
  tiny.write_tiny_bert(str(tmp_path / "hf"))
  (tmp_path / "hf" / "README.md").write_text(
      "---\nlicense: Apache-2.0\nlanguage: [en, de]\ndatasets: s2orc\n---\n"
      "\n# tiny-test-bert\n\n```bibtex\n@misc{tiny}\n```\n")
  result = importer.import_model(str(tmp_path / "hf"), str(tmp_path / "out"))
  with open(os.path.join(result.model_dir, checkpoint_lib.IMPORT_INFO_FILE)) as f:
    info = json.load(f)
  assert info == {"source_name": "tiny-test-bert",
                  "source_format": "sentence-transformers", "url": "",
                  "license": "apache-2.0", "language": ["en", "de"],
                  "datasets": ["s2orc"], "citation": ["@misc{tiny}"]}
  assert "origin        tiny-test-bert (sentence-transformers), license " \
      "apache-2.0" in importer.describe(result)
  from cmlm.inference import run_record  # pylint: disable=g-import-not-at-top
  # The card reads the same file back: the run record's origin is this.
  origin = run_record.read_run(result.model_dir, find_report=False).origin
  assert origin == dict(info, imported_here=True)
  # A Hugging Face cache's owner/name, a Hub link; flags win over README.md.
  cache = tmp_path / "models--someone--tiny-bert" / "snapshots" / "0a1b"
  tiny.write_tiny_bert(str(cache))
  info = importer.source_info(str(cache), source_license="mit")
  assert (info["source_name"], info["url"], info["license"]) == (
      "someone/tiny-bert", "https://huggingface.co/someone/tiny-bert", "mit")
  assert importer.source_info(str(cache), "org/x")["source_name"] == "org/x"
  assert importer.source_info(str(tmp_path / "hf"))["source_name"] == (
      "tiny-test-bert")
  os.remove(tmp_path / "hf" / "README.md")
  assert importer.source_info(str(tmp_path / "hf"))["source_name"] == "hf"
  with pytest.raises(ValueError, match="--source_name=/data/x must be the "
                     "source's name"):
    importer.import_model(str(tmp_path / "hf"), str(tmp_path / "out2"),
                          source_name="/data/x")
  assert not (tmp_path / "out2").exists()


def test_a_bad_source_license_is_one_line_before_any_work(tmp_path):
  from cmlm.commands import import_model as import_command  # pylint: disable=g-import-not-at-top
  with pytest.raises(ValueError) as error:
    import_command.main([f"--source={tmp_path / 'none'}",
                         f"--model_dir={tmp_path / 'out'}",
                         "--source_license=apache"])
  assert str(error.value).startswith("--source_license='apache' is not a "
                                     "license a hub takes")
  assert "\n" not in str(error.value)


def test_bert_prefix_and_pytorch_bin_give_the_same_weights(tmp_path, imported):
  torch = pytest.importorskip("torch", reason="pytorch_model.bin needs torch")
  tensors, config, _, model = imported
  directory = tmp_path / "hf"
  tiny.write_tiny_bert(str(directory), tensors=tensors)
  os.remove(directory / "model.safetensors")
  torch.save({f"bert.{k}" if not k.startswith("cls.") else k:
              torch.from_numpy(np.array(v)) for k, v in tensors.items()},
             directory / "pytorch_model.bin")
  result = importer.import_model(str(directory), str(tmp_path / "out"))
  again = _restore(result.params, result.checkpoint_path)
  for ours, theirs in zip(model.encoder.transformer.variables,
                          again.encoder.transformer.variables):
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_training_starts_from_the_import(imported):
  """`task.init_checkpoint=<model_dir>` restores the imported weights."""
  _, _, result, model = imported
  task_config = result.params.task
  task_config.init_checkpoint = result.model_dir
  task = task_lib.SentenceEncoderTask(task_config)
  fresh = task.build_model()
  fresh({name: objective.dummy_features()
         for name, objective in task.objectives.items()})
  task.initialize(fresh)
  # The encoder (projection head included) and the imported MLM head.
  imported_variables = (model.encoder.variables +
                        model.projection_head.variables + model.head.variables)
  restored_variables = (fresh.encoder.variables +
                        fresh.encoder.projection_head.variables +
                        fresh.heads["cmlm"].variables)
  assert len(imported_variables) == len(restored_variables)
  for ours, restored in zip(imported_variables, restored_variables):
    np.testing.assert_array_equal(ours.numpy(), restored.numpy())


def _edit_json(path, **changes):
  with open(path, encoding="utf-8") as f:
    content = json.load(f)
  content.update(changes)
  with open(path, "w", encoding="utf-8") as f:
    json.dump(content, f)


@pytest.mark.parametrize("damage, error, message", [
    ("no source", FileNotFoundError, "does not exist"),
    ("source not given", ValueError, "^--source is required: "),
    ("roberta", ValueError, "only 'bert' can be imported"),
    ("foreign tensor", ValueError, "not those of a BERT encoder"),
    ("no vocab", FileNotFoundError, "needs its WordPiece vocab.txt"),
    ("vocab size", ValueError, "says vocab_size=99"),
    ("sqrt pooling", ValueError, "only one of cls, mean or max"),
    ("dense module", ValueError, "has a Dense module"),
    ("torch bin, no torch", ValueError, "needs PyTorch"),
])
def test_bad_sources_fail_clearly_and_write_nothing(
    tmp_path, monkeypatch, damage, error, message):
  source = tmp_path / "hf"
  tensors, _ = tiny.write_tiny_bert(str(source))
  if damage == "no source":
    source = tmp_path / "missing"
  elif damage == "source not given":
    source = ""
  elif damage == "roberta":
    _edit_json(source / "config.json", model_type="roberta")
  elif damage == "foreign tensor":
    tensors["encoder.layer.0.attention.self.rotary.weight"] = np.zeros(
        [2], np.float32)
    tiny.write_safetensors(str(source / "model.safetensors"), tensors)
  elif damage == "no vocab":
    os.remove(source / "vocab.txt")
  elif damage == "vocab size":
    _edit_json(source / "config.json", vocab_size=99)
  elif damage == "sqrt pooling":
    _edit_json(source / "1_Pooling" / "config.json",
               pooling_mode_mean_tokens=False,
               pooling_mode_mean_sqrt_len_tokens=True)
  elif damage == "dense module":
    with open(source / "modules.json", "w", encoding="utf-8") as f:
      json.dump([{"idx": 2, "name": "2", "path": "2_Dense",
                  "type": "sentence_transformers.models.Dense"}], f)
  elif damage == "torch bin, no torch":
    os.remove(source / "model.safetensors")
    (source / "pytorch_model.bin").write_bytes(b"not read")
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch fails
  with pytest.raises(error, match=message):
    importer.import_model(source and str(source),
                          str(tmp_path / "out" / "model"))
  assert not (tmp_path / "out").exists()


def test_existing_model_dir_is_kept_unless_overwrite(tmp_path):
  tiny.write_tiny_bert(str(tmp_path / "hf"))
  out = tmp_path / "out"
  out.mkdir()
  (out / "keep.txt").write_text("mine")
  with pytest.raises(FileExistsError, match="pass --overwrite"):
    importer.import_model(str(tmp_path / "hf"), str(out))
  assert os.listdir(out) == ["keep.txt"]
  importer.import_model(str(tmp_path / "hf"), str(out), overwrite=True)
  assert "keep.txt" not in os.listdir(out)


def test_a_failed_write_leaves_nothing(tmp_path, monkeypatch):
  tiny.write_tiny_bert(str(tmp_path / "hf"))
  def fail(*args, **kwargs):
    raise OSError("disk full")
  monkeypatch.setattr(tf.train.CheckpointManager, "save", fail)
  with pytest.raises(OSError, match="disk full"):
    importer.import_model(str(tmp_path / "hf"), str(tmp_path / "a" / "b"))
  assert not (tmp_path / "a").exists()


@pytest.mark.slow
def test_cli_imports_and_reports_errors_in_one_line(tmp_path, capsys):
  tiny.write_tiny_bert(str(tmp_path / "hf"))
  command = [sys.executable, "-m", "cmlm", "import",
             f"--source={tmp_path / 'hf'}", f"--model_dir={tmp_path / 'out'}"]
  done = subprocess.run(command, capture_output=True, text=True,
                        cwd=REPO_ROOT, check=False)
  assert done.returncode == 0, done.stderr
  assert "projection head new (15 projections)" in done.stdout
  # Again, through the command line's own `main` in this process.
  status, stderr = helpers.run_command(command[3:], capsys)
  assert status == 2
  errors = [line for line in stderr if line.startswith("cmlm import: error:")]
  assert len(errors) == 1 and "already exists" in errors[0]


def test_seq_length_must_leave_positions_for_the_projections(tmp_path):
  tiny.write_tiny_bert(str(tmp_path / "hf"))  # 40 positions
  with pytest.raises(ValueError, match="between 3 and 25"):
    importer.import_model(str(tmp_path / "hf"), str(tmp_path / "out"),
                          seq_length=30)
  result = importer.import_model(str(tmp_path / "hf"), str(tmp_path / "out"),
                                 seq_length=25)
  assert result.params.task.tokenization.seq_length == 25
