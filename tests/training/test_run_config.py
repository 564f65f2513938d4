"""What a run leaves unset comes from the user's files and machine.

- The encoder's vocabulary size is the named vocabulary file's, unless the
  user gives one; a size given that disagrees with the file, and a start
  checkpoint whose embedding table disagrees, are one line each, before
  anything is written.
- The strategy is the user's (`--strategy`, the YAML, the overrides), else
  the hardware's: tpu when a TPU is configured or found, multi-worker under
  a TF_CONFIG cluster, mirrored over several GPUs, one device otherwise;
  said in the first line a training command prints. `stages` takes it too.
"""
import doctest
import os

import pytest
import yaml

from cmlm.experiments import cmlm_experiments
from cmlm.experiments import registry_imports  # noqa: F401  (registers the experiments)
from cmlm.training import prepared_run
from cmlm.training import run_config
from cmlm.training import stages
from cmlm.training import strategies
from cmlm.training import task
from cmlm.training.strategies import Hardware
from tests import helpers

EN_BASE_YAML = os.path.join(helpers.REPO_ROOT, "experiments", "configs",
                            "cmlm_en_base.yaml")
TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "of", "and"]


@pytest.fixture
def user_vocab(tmp_path):
  """A vocabulary of the user's: 8 tokens, no experiment's size."""
  path = tmp_path / "vocab.txt"
  path.write_text("\n".join(TOKENS) + "\n", encoding="utf-8")
  return str(path)


@pytest.fixture
def no_accelerator(monkeypatch):
  """The machine as CI's: no GPU, no TPU, no TF_CONFIG."""
  monkeypatch.setattr(run_config, "find_hardware", Hardware)


@pytest.mark.parametrize("strategy, tpu, num_gpus, hardware, expected", [
    ("", None, None, Hardware(), ("one_device", 0, None)),
    ("", None, None, Hardware(gpus=1), ("one_device", 1, None)),
    ("", None, None, Hardware(gpus=4), ("mirrored", 4, None)),
    ("", None, 2, Hardware(gpus=4), ("mirrored", 2, None)),
    ("", None, 0, Hardware(gpus=4), ("one_device", 0, None)),
    ("", "my-tpu", None, Hardware(gpus=4), ("tpu", 0, "my-tpu")),
    ("", None, None, Hardware(tpus=8), ("tpu", 0, "local")),
    ("", None, None, Hardware(gpus=2, workers=3),
     ("multi_worker_mirrored", 2, None)),
    ("one_device", None, None, Hardware(gpus=4), ("one_device", 1, None)),
    ("mirrored", None, None, Hardware(gpus=4), ("mirrored", 4, None)),
    ("mirrored", None, 0, Hardware(gpus=4), ("mirrored", 0, None)),
    ("tpu", "my-tpu", None, Hardware(), ("tpu", 0, "my-tpu")),
])
def test_the_strategy_is_the_user_s_else_the_hardware_s(
    strategy, tpu, num_gpus, hardware, expected):
  choice = strategies.choose(strategy, tpu, num_gpus, hardware)
  assert (choice.strategy, choice.num_gpus, choice.tpu) == expected
  line = choice.line()
  assert line.startswith(f"Strategy: {expected[0]}") and "\n" not in line
  assert ("--strategy chooses another" in line) == (not strategy)


def test_tf_config_workers_and_the_module_s_examples():
  assert strategies.workers_of("") == 1
  assert strategies.workers_of("not json") == 1
  assert strategies.workers_of(
      '{"cluster": {"chief": ["a:1"], "worker": ["b:1", "c:1"]}, '
      '"task": {"type": "worker", "index": 0}}') == 3
  assert doctest.testmod(strategies).failed == 0


def test_en_base_takes_the_user_s_vocabulary_size_and_the_machine_s_strategy(
    user_vocab, no_accelerator, capsys):
  """The README's recipe: cmlm/en_base with its YAML copy and the user's
  vocabulary, no --strategy: it is neither 30522 nor TPU."""
  params = run_config.build_params(
      "cmlm/en_base", [EN_BASE_YAML],
      f"task.tokenization.vocab_file={user_vocab}", lock=False)
  assert params.task.model.encoder.vocab_size == len(TOKENS)
  runtime = params.runtime
  assert (runtime.distribution_strategy, runtime.num_gpus) == ("one_device",
                                                               0)
  lines = capsys.readouterr().out.splitlines()
  assert lines[0] == ("Strategy: one_device on the CPU (no TPU configured, no "
                      "GPU found); --strategy chooses another.")
  assert f"vocab_size is {len(TOKENS)}, the size of {user_vocab}" in lines[1]
  # The run's vocabulary check passes: the sizes agree.
  task.check_vocab_matches_encoder(user_vocab, len(TOKENS))


def test_several_gpus_give_mirrored_over_them_and_flags_win(
    user_vocab, monkeypatch, capsys):
  monkeypatch.setattr(run_config, "find_hardware",
                      lambda: Hardware(gpus=2))
  override = f"task.tokenization.vocab_file={user_vocab}"
  params = run_config.build_params("cmlm/en_base", params_override=override)
  assert (params.runtime.distribution_strategy,
          params.runtime.num_gpus) == ("mirrored", 2)
  assert capsys.readouterr().out.startswith(
      "Strategy: mirrored over 2 GPUs (2 GPUs found)")
  params = run_config.build_params("cmlm/en_base", params_override=override,
                                   strategy="one_device")
  assert (params.runtime.distribution_strategy,
          params.runtime.num_gpus) == ("one_device", 1)
  params = run_config.build_params(
      "cmlm/en_base", params_override=override +
      ",runtime.distribution_strategy=mirrored,runtime.num_gpus=0")
  assert (params.runtime.distribution_strategy,
          params.runtime.num_gpus) == ("mirrored", 0)
  params = run_config.build_params("cmlm/tiny", tpu="local")
  assert params.runtime.distribution_strategy == "tpu"


def test_a_size_given_in_yaml_that_disagrees_is_one_line(
    user_vocab, no_accelerator, tmp_path):
  config = tmp_path / "mine.yaml"
  config.write_text(yaml.safe_dump({"task": {
      "model": {"encoder": {"vocab_size": 30522}},
      "tokenization": {"vocab_file": user_vocab}}}))
  params = run_config.build_params("cmlm/en_base", [str(config)])
  assert params.task.model.encoder.vocab_size == 30522
  with pytest.raises(ValueError) as raised:
    prepared_run.prepare(params, mode="eval")
  message = str(raised.value)
  assert "\n" not in message
  assert (f"{user_vocab} has {len(TOKENS)} tokens but "
          "task.model.encoder.vocab_size is 30522") in message


def test_a_start_checkpoint_of_another_vocabulary_is_one_line(
    tiny_run, user_vocab, no_accelerator, tmp_path):
  """A run that starts from another's checkpoint with a vocabulary of
  another size stops before anything is written, naming both sizes."""
  model_dir, _ = tiny_run
  params = run_config.build_params("cmlm/tiny", params_override=(
      f"task.init_checkpoint={model_dir},"
      f"task.tokenization.vocab_file={user_vocab}"))
  rows = cmlm_experiments.vocab_size_of(cmlm_experiments.EMBEDDED_VOCAB)
  with pytest.raises(ValueError) as raised:
    prepared_run.prepare(params)
  message = str(raised.value)
  assert "\n" not in message
  assert f"word embedding table of {rows} rows" in message
  assert f"{user_vocab} has {len(TOKENS)} tokens" in message


def test_every_stage_takes_the_strategy(no_accelerator, capsys):
  schedule = stages.load_schedule("s3")
  first, second = (
      stages.stage_params(schedule.experiment, stage, "", strategy="mirrored",
                          quiet=index > 1)
      for index, stage in enumerate(schedule.stages, start=1))
  assert first.runtime.distribution_strategy == "mirrored"
  assert second.runtime.distribution_strategy == "mirrored"
  # One line for the schedule, not one per stage.
  assert capsys.readouterr().out.count("Strategy: ") == 1
