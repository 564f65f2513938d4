"""NLI fine-tuning (section 4.3) end to end: from a CMLM run to an export.

`task.init_checkpoint` points at a CMLM model_dir; the NLI run must start
from its encoder, fine-tune it, and export like any CMLM run.
"""
import numpy as np
import pytest
import tensorflow as tf

from cmlm import train
from data_pipelines import tokenization
from experiments import cmlm_experiments
from export import checkpoint as checkpoint_lib
from export import exporter
from official.core import exp_factory
from tests import test_export_helpers as export_helpers

LEARNING_RATE = 1e-3
STEPS = 2
LABELS = ("entailment", "neutral", "contradiction")


def _nli_params(cmlm_dir: str, tsv: str):
  params = exp_factory.get_exp_config("cmlm/xnli")
  params.task.model = checkpoint_lib.load_params(cmlm_dir).task.model
  data = {"input_path": tsv, "vocab_file": cmlm_experiments.EMBEDDED_VOCAB,
          "lower_case": True, "seq_length": export_helpers.SEQ_LENGTH,
          "global_batch_size": 4}
  params.override({
      "task": {"init_checkpoint": cmlm_dir, "train_data": data,
               "validation_data": dict(data, is_training=False)},
      "trainer": {"train_steps": STEPS, "steps_per_loop": STEPS,
                  "checkpoint_interval": STEPS, "summary_interval": STEPS,
                  "optimizer_config": {
                      "learning_rate": {"polynomial": {
                          "initial_learning_rate": LEARNING_RATE,
                          "decay_steps": STEPS}},
                      "warmup": {"linear": {"warmup_steps": 0}}}},
      "runtime": {"distribution_strategy": "one_device", "num_gpus": 0}})
  return params


@pytest.mark.slow
def test_nli_fine_tuning_starts_from_cmlm_and_exports(tmp_path_factory,
                                                      tmp_path):
  cmlm_run = export_helpers.tiny_export(tmp_path_factory)
  tsv = tmp_path / "nli.tsv"
  tsv.write_text("".join(
      f"the house {i} is large .\tthe letter {i} came .\t{LABELS[i % 3]}\n"
      for i in range(16)), encoding="utf-8")
  params = _nli_params(cmlm_run.model_dir, str(tsv))
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
