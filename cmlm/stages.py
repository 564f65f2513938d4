"""`python -m cmlm stages`: the multistage schedules of section 4.2.

  s1  CMLM + BR from the start                     stage1 only
  s2  CMLM (stage1), then BR alone (stage2)
  s3  CMLM (stage1), then CMLM + BR (stage2)       the paper's choice

Stage k trains in `<model_dir>/stage<k>`; stage 2 starts from stage 1's
checkpoint (`task.init_checkpoint`), restoring the encoder, the projection
head and the MLM head. Running the command again resumes whichever stage was
interrupted (a finished stage 1 ends at once). `--params_override` and
`--config_file` apply to every stage (e.g. the data paths); a schedule can
start from any encoder checkpoint of ours with `task.init_checkpoint` (the
paper's f-mBERT: mBERT imported with `python -m cmlm import`).
"""
import os

from cmlm import train
from experiments import cmlm_experiments  # noqa: F401  (registers the experiments)
from official.core import exp_factory
from official.modeling import hyperparams

SCHEDULES = {
    "s1": ("cmlm/multilingual_cmlm_br",),
    "s2": ("cmlm/multilingual", "cmlm/multilingual_br"),
    "s3": ("cmlm/multilingual", "cmlm/multilingual_cmlm_br"),
}
# The paper's steps (section 4.4): 1.5M then 1M; S1 trains 2M.
DEFAULT_STEPS = {"s1": (2_000_000,), "s2": (1_500_000, 1_000_000),
                 "s3": (1_500_000, 1_000_000)}


def stage_params(flags_obj, experiment: str, steps: int, init_checkpoint: str):
  """One stage's config: its experiment + the user's YAML and overrides."""
  params = exp_factory.get_exp_config(experiment)
  for config_file in flags_obj.config_file or []:
    params = hyperparams.override_params_dict(params, config_file,
                                              is_strict=True)
  if flags_obj.params_override:
    params = hyperparams.override_params_dict(
        params, flags_obj.params_override, is_strict=True)
  params.override({
      "task": {"init_checkpoint": init_checkpoint or
                                  params.task.init_checkpoint},
      "trainer": {"train_steps": steps, "optimizer_config": {
          "learning_rate": {"polynomial": {"decay_steps": steps}}}}})
  params.validate()
  params.lock()
  return params


def run(flags_obj, schedule: str, stage_steps=None):
  """Runs the stages of `schedule` one after the other."""
  if schedule not in SCHEDULES:
    raise ValueError(f"--schedule must be one of {', '.join(SCHEDULES)}, "
                     f"got {schedule!r}.")
  if not flags_obj.model_dir:
    raise ValueError("--model_dir is required: stage<k>/ goes under it.")
  steps = stage_steps or DEFAULT_STEPS[schedule]
  if len(steps) != len(SCHEDULES[schedule]):
    raise ValueError(f"Schedule {schedule} has {len(SCHEDULES[schedule])} "
                     f"stage(s); --stage_steps gave {len(steps)} numbers.")
  previous = ""
  for index, (experiment, count) in enumerate(zip(SCHEDULES[schedule],
                                                  steps), start=1):
    stage_dir = os.path.join(flags_obj.model_dir, f"stage{index}")
    params = stage_params(flags_obj, experiment, count, previous)
    print(f"== {schedule} stage {index}: {experiment}, {count} steps, in "
          f"{stage_dir}" + (f", from {previous}" if previous else ""),
          flush=True)
    train.run(params, stage_dir, mode="train")
    previous = stage_dir
  return previous
