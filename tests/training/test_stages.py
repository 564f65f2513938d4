"""The multistage schedules S1-S3 of section 4.2, chained by `cmlm stages`."""
import time

import numpy as np
import pytest
import tensorflow as tf
import yaml

from cmlm import pcr
from cmlm.inference import embedders
from cmlm.modeling.vectors import l2_normalize
from cmlm.experiments import cmlm_experiments
from cmlm.experiments import registry_imports  # noqa: F401  (registers the schedules)
from cmlm.export import exporter
from cmlm.training import stages


def _tiny_overrides(bitext_path):
  vocab = cmlm_experiments.EMBEDDED_VOCAB
  data = {"input_path": cmlm_experiments.EMBEDDED_CORPUS,
          "max_predictions_per_seq": 5, "global_batch_size": 4}
  return yaml.safe_dump({
      "task": {"model": {"encoder": {
          "vocab_size": cmlm_experiments.vocab_size_of(vocab),
          "hidden_size": 16, "num_layers": 1, "num_attention_heads": 2,
          "intermediate_size": 32, "max_position_embeddings": 32}},
               "tokenization": {"vocab_file": vocab, "lower_case": True,
                                "seq_length": 16},
               "objectives": {
                   "cmlm": {"train_data": data,
                            "validation_data": dict(data, is_training=False)},
                   "bitext_retrieval": {"train_data": {
                       "input_path": bitext_path, "global_batch_size": 4}}}},
      "trainer": {"steps_per_loop": 2, "checkpoint_interval": 2,
                  "summary_interval": 2,
                  "optimizer_config": {"optimizer": {"type": "adamw"}}},
      "runtime": {"distribution_strategy": "one_device", "num_gpus": 0}})


@pytest.mark.slow
def test_s3_runs_cmlm_then_cmlm_plus_bitext_from_stage_one(tmp_path):
  bitext_path = tmp_path / "pairs.tsv"
  bitext_path.write_text("".join(f"the house {i} .\tthe letter {i} .\n"
                                 for i in range(20)), encoding="utf-8")
  last = stages.run("s3", str(tmp_path / "s3"),
                    params_override=_tiny_overrides(str(bitext_path)),
                    stage_steps=(2, 2))
  stage1, stage2 = str(tmp_path / "s3" / "stage1"), last
  assert tf.train.latest_checkpoint(stage1).endswith("ckpt-2")
  assert tf.train.latest_checkpoint(stage2).endswith("ckpt-2")
  with open(f"{stage2}/params.yaml", encoding="utf-8") as f:
    params = yaml.safe_load(f)
  assert params["task"]["init_checkpoint"] == stage1
  objectives = params["task"]["objectives"]
  assert objectives["bitext_retrieval"]["weight"] == 0.2
  assert objectives["cmlm"]["weight"] == 1.0
  with open(f"{stage1}/params.yaml", encoding="utf-8") as f:
    first = yaml.safe_load(f)["task"]["objectives"]
  assert (first["cmlm"]["weight"], first["bitext_retrieval"]["weight"]) == (
      1.0, 0.0)

  # A multitask stage reads back like any run: export (with the CMLM head),
  # the run's own encoder for eval, and pcr.
  result = exporter.export_run(stage2, str(tmp_path / "export"),
                               export_mlm=True)
  sentences = ["the house 3 .", "the letter 7 .", "a war of peace ."]
  run = embedders.load_embedder(stage2)
  serving = tf.saved_model.load(result.serving_dir)
  exported = serving.signatures["serving_default"](tf.constant(sentences))
  np.testing.assert_allclose(exported["embedding"].numpy(),
                             l2_normalize(run.embed(sentences)), atol=1e-5)
  samples = tmp_path / "en.txt"
  samples.write_text("\n".join(sentences * 4), encoding="utf-8")
  pcr.fit_for_model(stage2, f"en={samples}", sample_size=12)
  assert (tmp_path / "s3" / "stage2" / "pcr_components.json").exists()


def test_a_bad_stage_two_setting_stops_before_stage_one_writes_anything(
    tmp_path):
  """Every stage is checked before the first step of stage 1: stage 2 of s3
  without its bitext data fails in seconds, and nothing is written."""
  start = time.perf_counter()
  with pytest.raises(ValueError,
                     match=r"^Stage 2 of s3: .*input_path is empty"):
    stages.run("s3", str(tmp_path / "s3"), params_override=_tiny_overrides(""),
               stage_steps=(2, 2))
  assert time.perf_counter() - start < 60
  assert not (tmp_path / "s3").exists()


def test_unknown_schedule_and_step_counts_are_clear_errors(tmp_path):
  with pytest.raises(ValueError, match="--schedule must be one of"):
    stages.run("s4", str(tmp_path))
  with pytest.raises(ValueError, match="has 2 stage"):
    stages.run("s3", str(tmp_path), stage_steps=(1,))


@pytest.mark.parametrize("content, fault", [
    (b"stages: [1, 2\n  x: y\n", "is not valid YAML at line 2, column 4: "
     "expected ',' or ']', but got ':'."),
    (b"\xcd\xff\x00stages", "is not a UTF-8 text file."),
])
def test_a_schedule_file_that_does_not_read_is_one_line_naming_the_flag(
    tmp_path, content, fault):
  path = tmp_path / "schedule.yaml"
  path.write_bytes(content)
  with pytest.raises(ValueError) as raised:
    stages.load_schedule(str(path))
  assert str(raised.value) == f"--schedule={path} {fault}"


def test_a_schedule_is_a_config_read_from_yaml(tmp_path):
  """S2 written as YAML: each stage's objectives and steps become that
  stage's config (weights of the others 0), starting from the previous
  stage's directory."""
  path = tmp_path / "my_s2.yaml"
  path.write_text(yaml.safe_dump({
      "experiment": "cmlm/multilingual_cmlm_br",
      "stages": [{"objectives": {"cmlm": 1.0}, "train_steps": 3},
                 {"objectives": {"bitext_retrieval": 1.0},
                  "train_steps": 5}]}), encoding="utf-8")
  schedule = stages.load_schedule(str(path))
  registered = stages.load_schedule("s2")
  assert [s.objectives.as_dict() for s in schedule.stages] == [
      s.objectives.as_dict() for s in registered.stages]
  second = stages.stage_params(schedule.experiment, schedule.stages[1],
                               "runs/x/stage1")
  weights = {name: getattr(second.task.objectives, name).weight
             for name in second.task.objectives.names()}
  assert weights == {"cmlm": 0.0, "bitext_retrieval": 1.0}
  assert second.task.init_checkpoint == "runs/x/stage1"
  assert second.trainer.train_steps == 5
  bad = tmp_path / "bad.yaml"
  bad.write_text(yaml.safe_dump({
      "experiment": "cmlm/multilingual_cmlm_br",
      "stages": [{"objectives": {"no_such_kind": 1.0}, "train_steps": 3}]}),
      encoding="utf-8")
  with pytest.raises(ValueError, match="no_such_kind are not objectives of"):
    stages.stage_params("cmlm/multilingual_cmlm_br",
                        stages.load_schedule(str(bad)).stages[0], "")
