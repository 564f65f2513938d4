"""Multistage training: a schedule is a config, a sequence of objective sets.

A `ScheduleConfig` names a base experiment (which configures every objective
the schedule uses: data, hyperparameters) and its stages; each stage is a set
of objectives with their weights and a number of steps. Stage k trains in
`<model_dir>/stage<k>` with exactly its objectives (the others' weights set to
0, so their data is not even read) and starts from stage k-1's checkpoint
(`task.init_checkpoint`: the encoder and every head both stages share).
Running the command again resumes whichever stage was interrupted (a
finished stage ends at once).

The paper's schedules of section 4.2 are registered in
`experiments/schedules.py`; a YAML file of the same shape is a schedule too:

    experiment: cmlm/multilingual_cmlm_br
    stages:
    - {objectives: {cmlm: 1.0}, train_steps: 1500000}
    - {objectives: {cmlm: 1.0, bitext_retrieval: 0.2}, train_steps: 1000000}
"""
import contextlib
import dataclasses
import os
from typing import Dict, Optional, Sequence, Tuple

import tensorflow as tf

from official.core import config_definitions as cfg
from official.core import exp_factory
from official.modeling import hyperparams
from official.modeling.hyperparams import base_config
from cmlm.training import config_inputs
from cmlm.training import run_lock
from cmlm.training import prepared_run
from cmlm.training import run_config
from cmlm.training import train

_SCHEDULES: Dict[str, "ScheduleConfig"] = {}


class ObjectiveWeights(base_config.Config):
  """{objective name: weight}, a mapping whose keys the stage chooses."""

  def _override(self, override_dict, is_strict=True):
    del is_strict  # any objective name may be given; checked when run
    for name, weight in override_dict.items():
      if name in self.RESERVED_ATTR:
        continue
      if isinstance(weight, bool) or not isinstance(weight, (int, float)):
        raise ValueError(f"A stage's objective weight must be a number; "
                         f"{name}: {weight!r}.")
      self.__dict__[name] = float(weight)


@dataclasses.dataclass
class StageConfig(base_config.Config):
  objectives: ObjectiveWeights = dataclasses.field(
      default_factory=ObjectiveWeights)
  train_steps: int = 0


@dataclasses.dataclass
class ScheduleConfig(base_config.Config):
  experiment: str = ""
  stages: Tuple[StageConfig, ...] = ()


def register_schedule(name: str, schedule: ScheduleConfig) -> None:
  _SCHEDULES[name] = schedule


def registered_schedules():
  return sorted(_SCHEDULES)


def load_schedule(name_or_path: str) -> ScheduleConfig:
  """A registered schedule by name, or one read from a YAML file."""
  if name_or_path in _SCHEDULES:
    return _SCHEDULES[name_or_path]
  if not (name_or_path.endswith((".yaml", ".yml")) and
          tf.io.gfile.exists(name_or_path)):
    raise ValueError(f"--schedule must be one of "
                     f"{', '.join(registered_schedules())} or a YAML file of "
                     f"a schedule, got {name_or_path!r}.")
  content = config_inputs.read_yaml(name_or_path,
                                    f"--schedule={name_or_path}") or {}
  stages = content.get("stages") if isinstance(content, dict) else None
  if not isinstance(stages, list) or not stages:
    raise ValueError(f"{name_or_path} must give `experiment:` and a list of "
                     "`stages:` ({objectives: {name: weight}, train_steps}).")
  try:
    parsed = []
    for index, stage in enumerate(stages, start=1):
      if not isinstance(stage, dict):
        raise ValueError(
            f"stage {index} is {stage!r}, not {{objectives: {{name: "
            "weight}, train_steps: N}} (is the file complete?)")
      parsed.append(StageConfig())
      parsed[-1].override(stage, is_strict=True)
    return ScheduleConfig(experiment=content.get("experiment", ""),
                          stages=tuple(parsed))
  except (KeyError, TypeError, ValueError, AttributeError) as error:
    raise ValueError(f"{name_or_path}: {error}") from None


def stage_params(experiment: str, stage: StageConfig, init_checkpoint: str,
                 config_files: Sequence[str] = (),
                 params_override: str = "",
                 tpu: Optional[str] = None, strategy: Optional[str] = None,
                 quiet: bool = False) -> cfg.ExperimentConfig:
  """One stage's config: the experiment + the user's YAML and overrides
  (and `strategy`, `tpu`: runtime.distribution_strategy and runtime.tpu;
  `run_config.build_config`, which `quiet` keeps from printing), with
  exactly the stage's objectives and steps."""
  return stage_config(experiment, stage, init_checkpoint, config_files,
                      params_override, tpu, strategy, quiet).params


def stage_config(experiment: str, stage: StageConfig, init_checkpoint: str,
                 config_files: Sequence[str] = (),
                 params_override: str = "",
                 tpu: Optional[str] = None, strategy: Optional[str] = None,
                 quiet: bool = False) -> run_config.BuiltConfig:
  """`stage_params`, with what building it read (`run_config.BuiltConfig`)
  for the stage's check to take rather than read again."""
  built = run_config.build_config(experiment, config_files,
                                  params_override, strategy=strategy,
                                  tpu=tpu, lock=False, quiet=quiet)
  params = built.params
  weights = stage.objectives.as_dict()
  names = params.task.objectives.names()
  unknown = sorted(set(weights) - set(names))
  if unknown:
    raise ValueError(f"The stage's objectives {', '.join(unknown)} are not "
                     f"objectives of {experiment} ({', '.join(names)}).")
  for name in names:
    getattr(params.task.objectives, name).weight = weights.get(name, 0.0)
  steps = stage.train_steps
  params.override({
      "task": {"init_checkpoint": init_checkpoint or
                                  params.task.init_checkpoint},
      "trainer": {"train_steps": steps, "optimizer_config": {
          "learning_rate": {"polynomial": {"decay_steps": steps}}}}})
  params.validate()
  params.lock()
  return built


def run(schedule: str, model_dir: str, config_files: Sequence[str] = (),
        params_override: str = "",
        stage_steps: Optional[Sequence[int]] = None,
        tpu: Optional[str] = None, strategy: Optional[str] = None) -> str:
  """Runs the stages of `schedule` (a name or YAML path) one after another.

  `stage_steps` replaces the schedule's steps; `strategy` and `tpu` are
  every stage's runtime.distribution_strategy and runtime.tpu (unset: the
  hardware's, `run_config.build_config`). Returns the last stage's
  directory.

  Examples:
    >>> last = run("s3", "runs/multi", params_override=(
    ...     "task.tokenization.vocab_file=vocab.txt,"
    ...     "task.objectives.cmlm.train_data.input_path=corpus/,"
    ...     "task.objectives.bitext_retrieval.train_data.input_path=en-de.tsv"),
    ...     stage_steps=[1000, 500])
    >>> last
    'runs/multi/stage2'
  """
  config = load_schedule(schedule)
  if not model_dir:
    raise ValueError("--model_dir is required: stage<k>/ goes under it.")
  stages = list(config.stages)
  if stage_steps:
    if len(stage_steps) != len(stages):
      raise ValueError(f"Schedule {schedule} has {len(stages)} stage(s); "
                       f"--stage_steps gave {len(stage_steps)} numbers.")
    stages = [StageConfig(objectives=stage.objectives.as_dict(),
                          train_steps=int(steps))
              for stage, steps in zip(stages, stage_steps)]
  for index, stage in enumerate(stages, start=1):
    if stage.train_steps < 1:
      raise ValueError(f"Stage {index} of {schedule} has train_steps="
                       f"{stage.train_steps}; give 1 or more.")
  # Every stage is built and checked before the first step of stage 1 (its
  # config, objectives, data, vocabulary; a later stage's init_checkpoint is
  # the directory the stage before it writes), so that a mistake in a late
  # stage costs seconds, not the earlier stages' training. The strategy
  # comes first (a multi-worker one must exist before any TensorFlow op)
  # and serves every stage.
  runs = []
  previous = ""
  for index, stage in enumerate(stages, start=1):
    stage_dir = os.path.join(model_dir, f"stage{index}")
    with _naming_the_stage(index, schedule):
      built = stage_config(config.experiment, stage, previous, config_files,
                           params_override, tpu, strategy, quiet=index > 1)
    runs.append((index, stage, stage_dir, previous, built))
    previous = stage_dir
  strategy = train.make_strategy(runs[0][-1].params)
  prepared = []
  for index, stage, stage_dir, init_stage, built in runs:
    with _naming_the_stage(index, schedule):
      prepared.append(prepared_run.prepare(
          built, "train", init_checkpoint_from_earlier_stage=bool(init_stage)))
  print(f"== {schedule}: {len(runs)} stage(s) checked (config, objectives, "
        "data, vocabulary).", flush=True)
  # One `stages` per directory (the chief's; each stage's own directory is
  # locked again by `train.run`).
  lock = (run_lock.hold(model_dir) if run_lock.is_chief_from_tf_config()
          else contextlib.nullcontext())
  with lock:
    for (index, stage, stage_dir, init_stage, _), run_of_stage in zip(
        runs, prepared):
      objectives = ", ".join(f"{name} x{weight:g}" for name, weight in
                             stage.objectives.as_dict().items())
      print(f"== {schedule} stage {index}: {objectives}, {stage.train_steps} "
            f"steps, in {stage_dir}" +
            (f", from {init_stage}" if init_stage else ""), flush=True)
      train.run(run_of_stage, stage_dir, strategy=strategy)
  return runs[-1][2]


@contextlib.contextmanager
def _naming_the_stage(index: int, schedule: str):
  """A user error raised in the body names the stage it is about."""
  try:
    yield
  except (ValueError, FileNotFoundError) as error:
    try:
      named = type(error)(f"Stage {index} of {schedule}: {error}")
    except TypeError:  # an error class with arguments of its own
      raise error from None
    raise named from None
