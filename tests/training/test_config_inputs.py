"""`--config_file` and `--params_override` (training/config_inputs.py): each
fault is one sentence naming the flag, before anything is written; a word
where the experiment has a number, and a setting of the task's placeholder
data that no objective reads, are refused when the config is built."""
import doctest
import os

import pytest

from cmlm.experiments import registry_imports  # noqa: F401  (registers the experiments)
from cmlm.training import config_inputs
from cmlm.training import prepared_run
from cmlm.training import run_config
from cmlm.training.strategies import Hardware
from tests import helpers


@pytest.fixture(autouse=True)
def no_accelerator(monkeypatch):
  monkeypatch.setattr(run_config, "find_hardware", Hardware)


def _one_line(experiment="cmlm/tiny", config_files=(), override=""):
  with pytest.raises(ValueError) as raised:
    run_config.build_params(experiment, config_files, override, quiet=True)
  message = str(raised.value)
  assert "\n" not in message
  return message


@pytest.mark.parametrize("content, expected", [
    (None, "--config_file={path} does not exist."),
    ("directory", "--config_file={path} is a directory; give a YAML file."),
    (b"\xff\xfe task", "--config_file={path} is not a UTF-8 text file."),
    ("task:\n  seed: [1\n", "--config_file={path} is not valid YAML at "
     "line 3, column 1: expected ',' or ']', but got '<stream end>'."),
    ("- task\n- trainer\n", "--config_file={path} must hold config keys "
     "(task:, trainer:, runtime:); it holds a list."),
])
def test_a_config_file_that_cannot_be_read_is_one_line(tmp_path, content,
                                                        expected):
  path = tmp_path / "mine.yaml"
  if content == "directory":
    path.mkdir()
  elif isinstance(content, bytes):
    path.write_bytes(content)
  elif content is not None:
    path.write_text(content)
  assert _one_line(config_files=[str(path)]) == expected.format(path=path)


def test_a_config_file_key_the_config_lacks_is_one_line(tmp_path):
  path = tmp_path / "mine.yaml"
  path.write_text("task:\n  model:\n    encoder:\n      num_layer: 2\n")
  assert _one_line(config_files=[str(path)]) == (
      f"--config_file={path} sets task.model.encoder.num_layer, a key the "
      "config does not have; did you mean task.model.encoder.num_layers?")


def test_an_empty_config_file_changes_nothing(tmp_path):
  (tmp_path / "empty.yaml").write_text("# nothing yet\n")
  params = run_config.build_params("cmlm/tiny", [str(tmp_path / "empty.yaml")],
                                   quiet=True)
  assert params.as_dict() == run_config.build_params("cmlm/tiny",
                                                     quiet=True).as_dict()


def test_overrides_in_each_of_model_garden_s_forms(tmp_path):
  (tmp_path / "o.yaml").write_text("trainer:\n  train_steps: 7\n")
  for override in ("trainer.train_steps=7", "{trainer: {train_steps: 7}}",
                   '{"trainer": {"train_steps": 7}}', str(tmp_path / "o.yaml")):
    params = run_config.build_params("cmlm/tiny", params_override=override,
                                     quiet=True)
    assert params.trainer.train_steps == 7, override


@pytest.mark.parametrize("override, expected", [
    ("garbage", "--params_override=garbage is not key=value pairs "
     "(trainer.train_steps=20,task.seed=3), a YAML or JSON mapping, or a "
     "YAML file that exists."),
    ("{task:", "--params_override={task: is not valid YAML at line 1, "
     "column 7: expected the node content, but found '<stream end>'; give "
     "key=value pairs (trainer.train_steps=20,task.seed=3), a YAML or JSON "
     "mapping, or a YAML file that exists."),
    ("trainer.train_steps=abc", "trainer.train_steps must be a number, like "
     "the experiment's 2000; got 'abc'."),
    ("trainer.train_steps=1.5", "trainer.train_steps must be a whole "
     "number, like the experiment's 2000; got 1.5."),
    ("task.objectives.cmlm.train_data.seed=3.0", "task.objectives.cmlm."
     "train_data.seed must be a whole number; got 3.0."),
    ("task.model.encoder=5", "task.model.encoder must be a mapping of its "
     "fields (vocab_size, hidden_size, num_layers, ...), not a single value; "
     "got 5."),
    ("task.objectives.cmlm.train_data.drop_remainder=maybe",
     "task.objectives.cmlm.train_data.drop_remainder must be true or false, "
     "like the experiment's true; got 'maybe'."),
    ("task.train_data.global_batch_size=64", "task.train_data."
     "global_batch_size is not read: each objective reads its own data under "
     "task.objectives.<name>.train_data (this run's objectives: cmlm); set "
     "global_batch_size there."),
    ("trainer.train_step=5", "--params_override sets trainer.train_step, a "
     "key the config does not have; did you mean trainer.train_steps?"),
    ("task.objectives.cmlm.foo=1", "--params_override sets "
     "task.objectives.cmlm.foo, a key the config does not have; "
     "task.objectives.cmlm has condition, mlm_activation, "
     "mlm_initializer_range, skip, train_data, type, validation_data, "
     "weight."),
    ("task.validation_data.input_path=held_out.txt", "task.validation_data."
     "input_path is not read: each objective reads its own data under "
     "task.objectives.<name>.validation_data (this run's objectives: cmlm); "
     "set input_path there."),
])
def test_an_override_the_run_would_fail_on_or_ignore_is_one_line(
    override, expected):
  assert _one_line(override=override) == expected


@pytest.mark.parametrize("override, expected", [
    ("task.model.encoder.num_layers=0",
     "model.encoder.num_layers must be 1 or more, got 0."),
    ("task.model.encoder.num_attention_heads=5", "model.encoder.hidden_size "
     "(128) must be a multiple of model.encoder.num_attention_heads (5): "
     "each head takes an equal share."),
    ("task.model.encoder.attention_dropout_rate=1.0",
     "model.encoder.attention_dropout_rate must be in [0, 1), got 1.0."),
    ("task.model.num_projections=0", "task.objectives.cmlm conditions s2 on "
     "the projections of s1's vector (section 2): model.num_projections "
     "must be 1 or more (15 in the paper), got 0."),
    # A data config's error names where it is in the experiment.
    ("task.objectives.cmlm.train_data.global_batch_size=0",
     "task.objectives.cmlm.train_data (CmlmDataConfig): global_batch_size=0 "
     "must be 1 or more."),
])
def test_a_model_that_could_not_be_built_is_one_line_before_the_run(
    override, expected):
  """Model Garden's BERT would fail on these inside `create_trainer`, after
  the run's directory is written, with an IndexError, a ZeroDivisionError
  or a TypeError naming no field."""
  built = run_config.build_config("cmlm/tiny", params_override=override,
                                  quiet=True)
  with pytest.raises(ValueError) as raised:
    prepared_run.prepare(built)
  assert str(raised.value) == expected


def test_every_shipped_config_builds_on_its_experiment():
  """The checks refuse only what a user got wrong: experiments/configs'
  cmlm_NAME.yaml builds on cmlm/NAME."""
  folder = os.path.join(helpers.REPO_ROOT, "experiments", "configs")
  names = sorted(os.listdir(folder))
  assert names
  for name in names:
    experiment = "cmlm/" + name[len("cmlm_"):-len(".yaml")]
    run_config.build_params(experiment, [os.path.join(folder, name)],
                            quiet=True)


def test_the_module_s_examples():
  assert doctest.testmod(config_inputs).failed == 0
