"""misad/tiny and misad/bert_base (Li et al. 2020, section 4): the recipe,
and a run that starts from another run's encoder."""
import numpy as np
import pytest

from cmlm.projects.misad import registry_imports  # noqa: F401  (registers the project)
from official.core import exp_factory
from cmlm.training import run_dir
from cmlm.training import run_config
from cmlm.training import train


def test_bert_base_is_the_paper_recipe():
  params = exp_factory.get_exp_config("misad/bert_base")
  misad = params.task.objectives.misad
  assert misad.train_data.global_batch_size == 64
  assert params.task.tokenization.seq_length == 128
  learning_rate = params.trainer.optimizer_config.learning_rate.polynomial
  assert learning_rate.initial_learning_rate == 5e-5
  assert params.trainer.optimizer_config.warmup.linear.warmup_steps == (
      params.trainer.train_steps // 10)
  assert (misad.mlm_weight, misad.misad_weight) == (1.0, 1.0)
  assert misad.normalization == "unit_renormalized_sum"
  assert misad.sentence_embedding == "cls_pooler"  # [CLS] pooled output
  assert misad.ngram_selection == "lowest_mlm_score"


@pytest.mark.slow
def test_misad_tiny_starts_from_a_trained_encoder(tiny_run, tmp_path):
  source_dir, source = tiny_run  # read, never written
  marked = tmp_path / "marked.txt"
  marked.write_text("".join(f"(it is) a truth (universally acknowledged) {i}"
                            "\n" for i in range(8)))
  overrides = {
      "task.init_checkpoint": source_dir,
      "task.objectives.misad.train_data.input_path": str(marked),
      "task.objectives.misad.train_data.global_batch_size": 4,
      "task.objectives.misad.max_predictions_per_seq": 4,
      "task.tokenization.seq_length": 16,
      "trainer.train_steps": 2, "trainer.steps_per_loop": 2,
      "trainer.summary_interval": 2, "trainer.checkpoint_interval": 2}
  params = run_config.build_params("misad/tiny", params_override=",".join(
      f"{k}={v}" for k, v in overrides.items()), strategy="one_device")
  source_params = run_dir.load_params(source_dir)
  # The source's encoder, but no CMLM projection head: MiSAD trains none.
  model, source_model = (params.task.model.as_dict(),
                         source_params.task.model.as_dict())
  assert model.pop("num_projections") == 0
  source_model.pop("num_projections")
  assert model == source_model
  result = train.run(params, str(tmp_path / "misad"))
  assert np.isfinite(result.progress.last_loss)
  assert "misad_head" in result.model.checkpoint_items
  # Started from the source encoder: two small steps stay close to it.
  trained = {w.name: w.numpy() for w in source.model.encoder.weights}
  tuned = {w.name: w.numpy() for w in result.model.encoder.weights}
  closest = max(np.max(np.abs(tuned[n] - trained[n])) for n in tuned)
  assert closest < 0.05
