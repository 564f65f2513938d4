"""The registered experiments, their YAML files and the train entry point."""
import os

import pytest

from cmlm.experiments import cmlm_experiments
from cmlm.experiments import registry_imports  # noqa: F401  (registers the experiments)
from official.core import exp_factory
from official.modeling import hyperparams
from tests import helpers

CONFIGS = os.path.join(cmlm_experiments.REPO_ROOT, "experiments", "configs")


@pytest.mark.parametrize("name,yaml_file", [
    ("cmlm/tiny", "cmlm_tiny.yaml"), ("cmlm/en_base", "cmlm_en_base.yaml"),
    ("cmlm/en_workstation", "cmlm_en_workstation.yaml")])
def test_yaml_files_restate_the_registered_experiments(name, yaml_file):
  registered = exp_factory.get_exp_config(name)
  from_yaml = hyperparams.override_params_dict(
      exp_factory.get_exp_config(name), os.path.join(CONFIGS, yaml_file),
      is_strict=True)
  assert from_yaml.as_dict() == registered.as_dict()


def test_en_base_is_the_papers_recipe():
  params = exp_factory.get_exp_config("cmlm/en_base")
  model, data = params.task.model, params.task.objectives.cmlm.train_data
  assert (model.encoder.hidden_size, model.encoder.num_layers) == (768, 12)
  assert model.num_projections == 15 and model.pooling == "mean"
  assert params.task.objectives.names() == ["cmlm"]
  assert params.task.objectives.cmlm.weight == 1.0
  assert params.task.tokenization.seq_length == 256
  assert data.max_predictions_per_seq == 80
  assert data.global_batch_size == 2048
  optimizer = params.trainer.optimizer_config
  assert optimizer.optimizer.type == "lamb"
  assert (optimizer.optimizer.lamb.beta_1,
          optimizer.optimizer.lamb.beta_2) == (0.9, 0.999)
  assert optimizer.learning_rate.polynomial.initial_learning_rate == 1e-3
  assert optimizer.learning_rate.polynomial.decay_steps == 1_000_000
  assert optimizer.learning_rate.polynomial.power == 1.0
  assert optimizer.warmup.linear.warmup_steps == 10_000


def test_en_workstation_is_en_base_s_objective_on_a_small_bert():
  """The workstation recipe changes the scale, not the method: section 3's
  objective (N, pairs of consecutive sequences, the share of s2 masked,
  the order swap) with a smaller encoder, batch and step count."""
  base = exp_factory.get_exp_config("cmlm/en_base")
  small = exp_factory.get_exp_config("cmlm/en_workstation")
  assert small.task.model.num_projections == base.task.model.num_projections
  assert small.task.model.pooling == base.task.model.pooling
  base_data = base.task.objectives.cmlm.train_data
  data = small.task.objectives.cmlm.train_data
  for key in ("pair_unit", "masking_rate", "swap_order_probability"):
    assert getattr(data, key) == getattr(base_data, key), key
  seq_length = small.task.tokenization.seq_length
  # 80 of a full 256-token s2: the same share of a full s2 here.
  assert data.max_predictions_per_seq == round(seq_length * 80 / 256)
  encoder = small.task.model.encoder
  assert encoder.max_position_embeddings >= (
      seq_length + small.task.model.num_projections)
  assert encoder.num_layers * encoder.hidden_size ** 2 < (
      base.task.model.encoder.num_layers
      * base.task.model.encoder.hidden_size ** 2)
  pairs = data.global_batch_size * small.trainer.train_steps
  assert pairs * 1000 < base_data.global_batch_size * base.trainer.train_steps
  schedule = small.trainer.optimizer_config.learning_rate.polynomial
  assert schedule.decay_steps == small.trainer.train_steps


def test_tiny_vocab_size_matches_the_embedded_vocabulary():
  params = exp_factory.get_exp_config("cmlm/tiny")
  with open(cmlm_experiments.EMBEDDED_VOCAB, encoding="utf-8") as f:
    assert params.task.model.encoder.vocab_size == len(f.read().splitlines())


def test_tiny_builds_without_its_vocabulary_and_takes_the_user_s(
    monkeypatch, tmp_path):
  """A config reads no file that may be absent (a garden installed without
  its data, a moved checkout): cmlm/tiny builds, the user's overrides
  apply, and the encoder takes their vocabulary's size unless they give
  one, which training then checks against the file, in one line."""
  from cmlm.training import prepared_run  # pylint: disable=g-import-not-at-top
  from cmlm.training import run_config  # pylint: disable=g-import-not-at-top
  monkeypatch.setattr(cmlm_experiments, "EMBEDDED_VOCAB",
                      str(tmp_path / "missing" / "vocab.txt"))
  assert cmlm_experiments.cmlm_tiny().task.model.encoder.vocab_size == 0
  vocab = tmp_path / "my_vocab.txt"
  vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\nof\n",
                   encoding="utf-8")
  override = f"task.tokenization.vocab_file={vocab}"
  params = run_config.build_params("cmlm/tiny", params_override=override,
                                   lock=False)
  assert params.task.tokenization.vocab_file == str(vocab)
  assert params.task.model.encoder.vocab_size == 7
  params = run_config.build_params(
      "cmlm/tiny", params_override=override +
      ",task.model.encoder.vocab_size=9", lock=False)
  assert params.task.model.encoder.vocab_size == 9
  with pytest.raises(ValueError, match="has 7 tokens but "
                     "task.model.encoder.vocab_size is 9; make them equal"):
    prepared_run.prepare(params)


@pytest.mark.parametrize("override,expected", [
    ("task.objectives.cmlm.train_data.input_path=/no/such/corpus",
     "/no/such/corpus"),
    ("task.objectives.cmlm.train_data.max_predictions_per_seq=60",
     "max_predictions_per_seq"),
    ("task.objectives.no_such_kind.weight=1",
     "Unknown objective type 'no_such_kind'"),
    ("task.model.pooling=median", "pooling"),
])
def test_train_rejects_bad_input_in_one_line_and_writes_nothing(
    tmp_path, capsys, override, expected):
  """Through the command line's `main`, in this process (one `train` in a
  fresh process is tests/training/test_run_guards.py's)."""
  model_dir = tmp_path / "run"
  status, lines = helpers.run_command(
      ["train", "--experiment=cmlm/tiny", f"--model_dir={model_dir}",
       f"--params_override={override}"], capsys)
  assert status == 2
  errors = [l for l in lines if l.startswith("cmlm ")]
  assert len(errors) == 1 and expected in errors[0], lines[-20:]
  assert not any("Traceback" in line for line in lines)
  assert not model_dir.exists()


def test_demo_is_cmlm_tiny_with_max_pooling():
  demo = exp_factory.get_exp_config("cmlm/demo").as_dict()
  tiny = exp_factory.get_exp_config("cmlm/tiny").as_dict()
  assert (demo["task"]["model"]["pooling"],
          tiny["task"]["model"]["pooling"]) == ("max", "mean")
  demo["task"]["model"]["pooling"] = "mean"
  assert demo == tiny
