"""NLI fine-tuning (section 4.3) end to end: from a CMLM run to an export.

`task.init_checkpoint` points at a CMLM model_dir; the NLI run must start
from its encoder, fine-tune it, and export like any CMLM run.
"""
import types

import numpy as np
import pytest
import tensorflow as tf

from cmlm import train
from data_pipelines import tokenization
from export import checkpoint as checkpoint_lib
from export import exporter
from tests import test_export_helpers as export_helpers

LEARNING_RATE = 1e-3
STEPS = 2
LABELS = ("entailment", "neutral", "contradiction")


class _Flags(types.SimpleNamespace):
  """Parsed absl flags, as Model Garden's ExperimentParser reads them."""

  def __contains__(self, name):
    return hasattr(self, name)


def _nli_params(cmlm_dir: str, tsv: str):
  """cmlm/xnli as `python -m cmlm train` parses it: no model config and no
  vocabulary given, only the run to start from and the data."""
  overrides = {
      "task.init_checkpoint": cmlm_dir, "task.train_data.input_path": tsv,
      "task.train_data.seq_length": export_helpers.SEQ_LENGTH,
      "task.train_data.global_batch_size": 4,
      "trainer.train_steps": STEPS, "trainer.steps_per_loop": STEPS,
      "trainer.checkpoint_interval": STEPS, "trainer.summary_interval": STEPS,
      "trainer.optimizer_config.learning_rate.polynomial."
      "initial_learning_rate": LEARNING_RATE,
      "trainer.optimizer_config.learning_rate.polynomial.decay_steps": STEPS,
      "trainer.optimizer_config.warmup.linear.warmup_steps": 0,
      "runtime.num_gpus": 0}
  flags_obj = _Flags(
      experiment="cmlm/xnli", config_file=None, tpu=None,
      tf_data_service=None, strategy="one_device",
      params_override=",".join(f"{k}={v}" for k, v in overrides.items()))
  return train.parse_params(flags_obj)


@pytest.mark.slow
def test_nli_fine_tuning_starts_from_cmlm_and_exports(tmp_path_factory,
                                                      tmp_path):
  cmlm_run = export_helpers.tiny_export(tmp_path_factory)
  tsv = tmp_path / "nli.tsv"
  tsv.write_text("".join(
      f"the house {i} is large .\tthe letter {i} came .\t{LABELS[i % 3]}\n"
      for i in range(16)), encoding="utf-8")
  params = _nli_params(cmlm_run.model_dir, str(tsv))
  cmlm_params = checkpoint_lib.load_params(cmlm_run.model_dir)
  assert params.task.model.as_dict() == cmlm_params.task.model.as_dict()
  assert params.task.train_data.vocab_file == (
      cmlm_params.task.train_data.vocab_file)
  nli = train.run(params, str(tmp_path / "nli")).model

  # Started from the CMLM encoder: STEPS Adam(W) steps move each weight by
  # about the learning rate at most, while a fresh encoder is far away.
  trained = {w.name: w.numpy() for w in cmlm_run.model.encoder.weights}
  tuned = {w.name: w.numpy() for w in nli.encoder.weights}
  assert tuned and set(tuned) <= set(trained)
  largest_move = max(np.max(np.abs(trained[name] - value))
                     for name, value in tuned.items())
  assert 0 < largest_move < 3 * STEPS * LEARNING_RATE

  # Exported like a CMLM run: the serving model embeds as the NLI encoder.
  result = exporter.export_run(str(tmp_path / "nli"), str(tmp_path / "out"))
  serving = tf.saved_model.load(result.serving_dir)
  sentences = export_helpers.SENTENCES
  exported = serving.signatures["serving_default"](
      tf.constant(sentences))
  data = params.task.train_data
  tokenizer = tokenization.WordPieceTokenizer(
      data.vocab_file, data.seq_length, lower_case=data.lower_case)
  expected = nli.encoder(tokenizer.tokenize_and_pack(tf.constant(sentences)),
                         training=False)["default"]
  expected = tf.math.l2_normalize(expected, axis=-1).numpy()
  np.testing.assert_allclose(exported["embedding"].numpy(), expected,
                             atol=1e-5)
  with pytest.raises(ValueError, match="no trained MLM head"):
    exporter.export_run(str(tmp_path / "nli"), str(tmp_path / "mlm"),
                        export_mlm=True)
  assert not (tmp_path / "mlm").exists()
