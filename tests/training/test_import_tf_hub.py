"""`python -m cmlm import --source=ENCODER_DIR[,PREPROCESSOR_DIR]`: TF-Hub
BERT-API encoders (modeling/importers/tf_hub.py) as runs.

Two sources, both written here (no downloads): our own export, which must
come back as the same model (export -> import -> export gives the same
embeddings), and a BERT written by Model Garden's own TF-Hub export
(`official/nlp/tools/export_tfhub_lib.py`), as Google published its CMLM
encoders.
"""
import os

import numpy as np
import pytest

import tensorflow as tf

from cmlm.experiments import registry_imports  # noqa: F401  (registers cmlm/en_base)
from cmlm.export import exporter
from cmlm.export import preprocessor as preprocessor_lib
from cmlm.inference import embedders
from cmlm.modeling.importers import tf_hub
from cmlm.training import import_run
from cmlm.training import run_dir
from cmlm.training import task as task_lib
from official.legacy.bert import configs as bert_configs
from official.nlp.tools import export_tfhub_lib
from tests.export import export_helpers
from tests.training import import_helpers as tiny

# The export tests' sentences and awkward inputs (less the 100,000
# characters, which only cost time here), and one in upper case.
SENTENCES = export_helpers.SENTENCES + [
    s for s in export_helpers.AWKWARD_SENTENCES if len(s) < 1000] + [
        "The cat SAT on the big mat."]


@pytest.mark.slow
def test_our_export_comes_back_as_the_same_model(tiny_run, tiny_export,
                                                 tmp_path):
  """export -> import -> export: the second export's embeddings are the
  first's, and the run records what the first was trained with."""
  # The export named as a whole stands for its encoder and preprocessor.
  assert tf_hub.split_source(tiny_export.export_dir) == tuple(
      os.path.join(tiny_export.export_dir, part)
      for part in ("encoder", "preprocessor"))
  assert tf_hub.split_source(
      f"{tiny_export.encoder_dir},{tiny_export.preprocessor_dir}") == (
          tiny_export.encoder_dir, tiny_export.preprocessor_dir)
  result = import_run.import_model(tiny_export.export_dir,
                                   str(tmp_path / "imported"))
  trained = run_dir.load_params(tiny_run[0]).task
  imported = result.params.task
  assert imported.model.encoder.as_dict() == dict(
      trained.model.encoder.as_dict(),
      dropout_rate=imported.model.encoder.dropout_rate,
      attention_dropout_rate=imported.model.encoder.attention_dropout_rate)
  assert imported.model.pooling == trained.model.pooling
  for key in ("lower_case", "text_normalization", "seq_length"):
    assert getattr(imported.tokenization, key) == getattr(
        trained.tokenization, key), key
  assert result.imported_mlm_head and not result.unused_weights
  assert not result.notes
  assert result.origin["source_format"] == "tf-hub"
  again = exporter.export_run(result.model_dir, str(tmp_path / "again"))
  first = embedders.load_embedder(tiny_export.export_dir).embed(SENTENCES)
  second = embedders.load_embedder(again.export_dir).embed(SENTENCES)
  np.testing.assert_allclose(second, first, atol=1e-5, rtol=0)


def _model_garden_hub_bert(directory, lower_case):
  """A tiny random BERT written by Model Garden's TF-Hub export, and its
  preprocessor: (encoder dir, preprocessor dir)."""
  config = bert_configs.BertConfig(
      vocab_size=len(tiny.VOCAB), hidden_size=16, num_hidden_layers=2,
      num_attention_heads=2, intermediate_size=32,
      max_position_embeddings=40, type_vocab_size=2)
  encoder = export_tfhub_lib.get_bert_encoder(config)
  rng = np.random.default_rng(5)
  for variable in encoder.variables:
    variable.assign(rng.normal(0, 0.3, variable.shape).astype(np.float32))
  checkpoint = tf.train.Checkpoint(encoder=encoder).save(
      str(directory / "pretrained" / "ckpt"))
  vocab_file = directory / "vocab.txt"
  vocab_file.write_text("\n".join(tiny.VOCAB) + "\n")
  export_tfhub_lib.export_model(
      str(directory / "encoder"), bert_config=config,
      model_checkpoint_path=checkpoint, with_mlm=False,
      vocab_file=str(vocab_file), do_lower_case=True)
  export_tfhub_lib.export_preprocessing(
      str(directory / "preprocessor"), vocab_file=str(vocab_file),
      do_lower_case=lower_case, tokenize_with_offsets=False,
      default_seq_length=24)
  return str(directory / "encoder"), str(directory / "preprocessor")


@pytest.mark.slow
def test_model_garden_s_hub_bert_is_imported_from_its_savedmodels(tmp_path):
  # The encoder says do_lower_case=True; its preprocessor, which is what
  # tokenized its inputs, keeps case: the preprocessor's tokens decide.
  encoder_dir, preprocessor_dir = _model_garden_hub_bert(tmp_path, False)
  os.remove(tmp_path / "vocab.txt")  # the SavedModels' own copies are read
  result = import_run.import_model(f"{encoder_dir},{preprocessor_dir}",
                                   str(tmp_path / "run"))
  encoder = result.params.task.model.encoder
  assert (encoder.vocab_size, encoder.hidden_size, encoder.num_layers,
          encoder.num_attention_heads, encoder.intermediate_size,
          encoder.max_position_embeddings) == (len(tiny.VOCAB), 16, 2, 2, 32,
                                               40)
  tokenization = result.params.task.tokenization
  assert (tokenization.lower_case, tokenization.text_normalization,
          tokenization.seq_length) == (False, "tf_text", 24)
  assert result.imported_pooler and not result.unused_weights
  # BERT's [CLS] pooler is Model Garden's sentence vector; the run pools by
  # mean, as CMLM does, and says so.
  assert result.params.task.model.pooling == "mean"
  assert len(result.notes) == 1 and "[CLS] pooler" in result.notes[0]
  assert "note          the source's sentence vector is BERT's" in (
      import_run.describe(result))
  # The run's embeddings: the hub model's own tokens and sequence output,
  # mean-pooled over the real tokens.
  sentences = ["the cat sat on the mat", "The Dog ran fast", "a big red dog"]
  preprocessor = tf.saved_model.load(preprocessor_dir)
  inputs = preprocessor(tf.constant(sentences))
  sequence = tf.saved_model.load(encoder_dir)(
      inputs, training=False)["sequence_output"].numpy()
  mask = inputs["input_mask"].numpy()[..., np.newaxis]
  expected = (sequence * mask).sum(1) / mask.sum(1)
  ours = embedders.load_embedder(result.model_dir).embed(sentences)
  np.testing.assert_allclose(ours, expected, atol=1e-5, rtol=0)
  # A training run started from the import (`task.init_checkpoint`)
  # starts from these weights.
  task_config = result.params.task
  task_config.init_checkpoint = result.model_dir
  task = task_lib.SentenceEncoderTask(task_config)
  model = task.build_model()
  model({name: objective.dummy_features()
         for name, objective in task.objectives.items()})
  task.initialize(model)
  started = model.encoder(inputs, training=False)["default"].numpy()
  np.testing.assert_allclose(started, expected, atol=1e-5, rtol=0)


def test_what_pools_the_sentence_vector_is_read_from_the_outputs():
  inputs = tf_hub.probe_inputs(vocab_size=30, max_positions=40)
  mask = inputs["input_mask"]
  sequence = np.random.default_rng(0).normal(size=mask.shape + (4,))
  real = mask[..., np.newaxis] > 0
  mean = (sequence * real).sum(1) / real.sum(1)
  assert tf_hub.pooling_of(mean, sequence, mask) == "mean"
  assert tf_hub.pooling_of(sequence[:, 0], sequence, mask) == "cls"
  padded_max = np.where(real, sequence, -np.inf).max(1)
  assert tf_hub.pooling_of(padded_max, sequence, mask) == "max"
  # Padding must not count: the plain maximum over every position is none.
  assert tf_hub.pooling_of(sequence.max(1), sequence, mask) is None
  assert mask.sum(1).tolist() == [16, 10, 2]  # rows of three lengths


@pytest.mark.slow
def test_casing_and_normalization_are_read_from_the_preprocessor_s_tokens(
    tmp_path):
  """An uncased preprocessor with Hugging Face's normalization (an import
  of a sentence-transformers model, exported) is told from TF Text's and
  from a cased one by its tokens alone."""
  vocab_file = tmp_path / "vocab.txt"
  vocab_file.write_text("\n".join(tiny.VOCAB) + "\n")
  # The exported preprocessor's own `tokenize` (not saved: only it is read).
  preprocessor = preprocessor_lib.Preprocessor(str(vocab_file), True, 16,
                                               "huggingface")
  # Even when the SavedModel states the wrong casing (tried first).
  assert tf_hub.tokenization_of(preprocessor, str(vocab_file),
                                stated=False) == ((True, "huggingface"), 0)
  # Told to keep case, the best it can do still differs: counted.
  (casing, _), mismatch = tf_hub.tokenization_of(
      preprocessor, str(vocab_file), lower_case=False)
  assert casing is False and mismatch > 0


def test_a_source_that_is_no_bert_savedmodel_is_one_line(tmp_path):
  out = str(tmp_path / "out")
  with pytest.raises(FileNotFoundError, match="does not exist"):
    import_run.import_model(f"{tmp_path / 'enc'},{tmp_path / 'pre'}", out)
  (tmp_path / "enc").mkdir()
  (tmp_path / "pre").mkdir()
  with pytest.raises(FileNotFoundError, match=r"The encoder .*enc is not a "
                     "SavedModel"):
    import_run.import_model(f"{tmp_path / 'enc'},{tmp_path / 'pre'}", out,
                            source_format="tf_hub")
  other = tf.Module()
  other.table = tf.Variable(tf.zeros([4, 2]))
  tf.saved_model.save(other, str(tmp_path / "other"))
  with pytest.raises(ValueError, match="TF-Hub.s reusable SavedModel API"):
    import_run.import_model(str(tmp_path / "other"), out)
  assert not os.path.exists(out)
