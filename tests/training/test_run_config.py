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

from cmlm.data_pipelines import vocabulary
from cmlm.experiments import cmlm_experiments
from cmlm.experiments import registry_imports  # noqa: F401  (registers the experiments)
from cmlm.training import checkpoints
from cmlm.training import prepared_run
from cmlm.training import run_config
from cmlm.training import run_dir
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
  with pytest.raises(ValueError, match=r"^--tpu=local is read by the tpu "
                     r"strategy only; with --strategy=mirrored it would be "
                     r"ignored: drop --tpu, or give --strategy=tpu.$"):
    run_config.build_params("cmlm/tiny", strategy="mirrored", tpu="local")


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


@pytest.fixture
def counted_reads(monkeypatch):
  """{"resolved": [task.init_checkpoint paths resolved by the one resolver],
  "prefixes": [paths given to `checkpoints.resolve`], "vocab": [vocabulary
  files read from disk]}, appended to as the run goes."""
  reads = {"resolved": [], "prefixes": [], "vocab": []}

  def counting(name, module, function):
    real = getattr(module, function)

    def counted(path, *args, **kwargs):
      reads[name].append(path)
      return real(path, *args, **kwargs)
    monkeypatch.setattr(module, function, counted)
  counting("resolved", run_dir, "resolve_init_checkpoint")
  counting("prefixes", checkpoints, "resolve")
  # Every reader of a vocabulary file (read_vocabulary, load_vocab) reads
  # its bytes here.
  counting("vocab", vocabulary, "_read_bytes")
  return reads


@pytest.mark.slow
def test_a_run_resolves_its_start_and_reads_its_vocabulary_once(
    tiny_run, no_accelerator, counted_reads, tmp_path):
  """Built, checked and trained as `python -m cmlm train` does
  (`build_config`, then `train.run`): `task.init_checkpoint` is resolved
  once, for the start-run policy, the checks and the restore alike, and the
  vocabulary file is read once, for its size, the checks and the data."""
  from cmlm.training import train  # pylint: disable=g-import-not-at-top
  source_dir, _ = tiny_run
  vocab_file = cmlm_experiments.EMBEDDED_VOCAB
  overrides = helpers.tiny_run_overrides(2)
  overrides["task"]["init_checkpoint"] = source_dir
  overrides["task"]["tokenization"]["vocab_file"] = vocab_file
  built = run_config.build_config(
      "cmlm/tiny", params_override=yaml.safe_dump(overrides))
  assert built.init_checkpoint.run_dir == source_dir
  result = train.run(built, str(tmp_path / "run"))
  assert int(result.trainer.global_step.numpy()) == 2
  assert counted_reads["resolved"] == [source_dir]
  assert counted_reads["prefixes"] == [source_dir]
  assert counted_reads["vocab"] == [vocab_file]


def test_the_train_command_trains_the_config_with_what_it_read(
    no_accelerator, counted_reads, monkeypatch):
  """`python -m cmlm train` hands `train.run` the `BuiltConfig`, so the run
  takes the vocabulary (and start) the config builder read."""
  from cmlm.commands import train as train_command  # pylint: disable=g-import-not-at-top
  from cmlm.training import train  # pylint: disable=g-import-not-at-top
  given = []

  def run(params, *args, **kwargs):
    given.append(params)
    raise SystemExit(0)
  monkeypatch.setattr(train, "run", run)
  with pytest.raises(SystemExit):
    train_command.main(["--experiment=cmlm/tiny", "--model_dir=runs/x"])
  (built,) = given
  assert isinstance(built, run_config.BuiltConfig)
  assert counted_reads["vocab"] == [built.vocab.path]


def test_a_missing_start_checkpoint_is_one_line_when_the_run_is_checked(
    no_accelerator, counted_reads, tmp_path):
  """A `task.init_checkpoint` that names nothing lets the config be built
  and stops the run's check with one line; it is looked for once, and the
  vocabulary file read once (a fast check of what the slow test above
  checks through a whole run)."""
  missing = str(tmp_path / "no_run")
  built = run_config.build_config("cmlm/tiny", params_override=(
      f"task.init_checkpoint={missing}"))
  assert built.init_checkpoint.prefix is None
  with pytest.raises(FileNotFoundError) as raised:
    prepared_run.prepare(built)
  message = str(raised.value)
  assert "\n" not in message
  assert message.startswith(f"task.init_checkpoint={missing} does not exist")
  assert counted_reads["resolved"] == [missing]
  assert counted_reads["vocab"] == [built.vocab.path]


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
