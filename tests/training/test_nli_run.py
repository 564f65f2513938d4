"""NLI fine-tuning (section 4.3) end to end: from a CMLM run to an export.

`task.init_checkpoint` points at a CMLM model_dir; the NLI run must start
from its encoder, fine-tune it, and export like any CMLM run.
"""
import numpy as np
import pytest
import tensorflow as tf

from cmlm.data_pipelines import tokenization
from cmlm.experiments import registry_imports  # noqa: F401  (registers cmlm/xnli)
from cmlm.export import exporter
from tests.export import export_helpers as export_helpers
from cmlm.training import run_dir as checkpoint_lib
from cmlm.training import run_config
from cmlm.training import train

LEARNING_RATE = 1e-3
STEPS = 2
LABELS = ("entailment", "neutral", "contradiction")


def _nli_params(cmlm_dir: str, tsv: str):
  """cmlm/xnli as `python -m cmlm train` builds it: no model config and no
  vocabulary given, only the run to start from and the data."""
  overrides = {
      "task.init_checkpoint": cmlm_dir,
      "task.objectives.nli.train_data.input_path": tsv,
      "task.objectives.nli.train_data.global_batch_size": 4,
      "task.tokenization.seq_length": export_helpers.SEQ_LENGTH,
      "trainer.train_steps": STEPS, "trainer.steps_per_loop": STEPS,
      "trainer.checkpoint_interval": STEPS, "trainer.summary_interval": STEPS,
      "trainer.optimizer_config.learning_rate.polynomial."
      "initial_learning_rate": LEARNING_RATE,
      "trainer.optimizer_config.learning_rate.polynomial.decay_steps": STEPS,
      "trainer.optimizer_config.warmup.linear.warmup_steps": 0,
      "runtime.num_gpus": 0}
  return run_config.build_params(
      "cmlm/xnli", params_override=",".join(
          f"{k}={v}" for k, v in overrides.items()), strategy="one_device")


@pytest.mark.slow
def test_nli_fine_tuning_starts_from_cmlm_and_exports(tiny_run, tmp_path):
  cmlm_dir, cmlm_result = tiny_run  # conftest's session run: read, not written
  tsv = tmp_path / "nli.tsv"
  tsv.write_text("".join(
      f"the house {i} is large .\tthe letter {i} came .\t{LABELS[i % 3]}\n"
      for i in range(16)), encoding="utf-8")
  params = _nli_params(cmlm_dir, str(tsv))
  cmlm_params = checkpoint_lib.load_params(cmlm_dir)
  # The source's encoder, but no projection head: NLI trains none.
  model, source = (params.task.model.as_dict(),
                   cmlm_params.task.model.as_dict())
  assert (model.pop("num_projections"), source.pop("num_projections")) == (
      0, cmlm_params.task.model.num_projections)
  assert model == source
  assert params.task.tokenization.vocab_file == (
      cmlm_params.task.tokenization.vocab_file)
  nli = train.run(params, str(tmp_path / "nli")).model

  # Started from the CMLM encoder: STEPS Adam(W) steps move each weight by
  # about the learning rate at most, while a fresh encoder is far away.
  trained = {w.name: w.numpy() for w in cmlm_result.model.encoder.weights}
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
  data = params.task.tokenization
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
