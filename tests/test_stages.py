"""The multistage schedules S1-S3 of section 4.2, chained by `cmlm stages`."""
import types

import pytest
import tensorflow as tf
import yaml

from cmlm import stages
from experiments import cmlm_experiments


def _tiny_overrides(bitext_path):
  vocab = cmlm_experiments.EMBEDDED_VOCAB
  data = {"input_path": cmlm_experiments.EMBEDDED_CORPUS, "vocab_file": vocab,
          "lower_case": True, "seq_length": 16, "max_predictions_per_seq": 5,
          "global_batch_size": 4}
  return yaml.safe_dump({
      "task": {"model": {"encoder": {
          "vocab_size": cmlm_experiments.vocab_size_of(vocab),
          "hidden_size": 16, "num_layers": 1, "num_attention_heads": 2,
          "intermediate_size": 32, "max_position_embeddings": 32}},
               "train_data": data,
               "validation_data": dict(data, is_training=False),
               "bitext_data": {"input_path": bitext_path, "vocab_file": vocab,
                               "lower_case": True, "seq_length": 16,
                               "global_batch_size": 4}},
      "trainer": {"steps_per_loop": 2, "checkpoint_interval": 2,
                  "summary_interval": 2,
                  "optimizer_config": {"optimizer": {"type": "adamw"}}},
      "runtime": {"distribution_strategy": "one_device", "num_gpus": 0}})


@pytest.mark.slow
def test_s3_runs_cmlm_then_cmlm_plus_bitext_from_stage_one(tmp_path):
  bitext_path = tmp_path / "pairs.tsv"
  bitext_path.write_text("".join(f"the house {i} .\tthe letter {i} .\n"
                                 for i in range(20)), encoding="utf-8")
  flags_obj = types.SimpleNamespace(
      model_dir=str(tmp_path / "s3"), config_file=None,
      params_override=_tiny_overrides(str(bitext_path)))
  last = stages.run(flags_obj, "s3", stage_steps=(2, 2))
  stage1, stage2 = str(tmp_path / "s3" / "stage1"), last
  assert tf.train.latest_checkpoint(stage1).endswith("ckpt-2")
  assert tf.train.latest_checkpoint(stage2).endswith("ckpt-2")
  with open(f"{stage2}/params.yaml", encoding="utf-8") as f:
    params = yaml.safe_load(f)
  assert params["task"]["init_checkpoint"] == stage1
  assert params["task"]["bitext_weight"] == 0.2
  assert params["task"]["cmlm_weight"] == 1.0


def test_unknown_schedule_and_step_counts_are_clear_errors(tmp_path):
  flags_obj = types.SimpleNamespace(model_dir=str(tmp_path), config_file=None,
                                    params_override="")
  with pytest.raises(ValueError, match="--schedule must be one of"):
    stages.run(flags_obj, "s4")
  with pytest.raises(ValueError, match="has 2 stage"):
    stages.run(flags_obj, "s3", stage_steps=(1,))
