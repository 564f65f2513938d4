"""The multistage schedules of section 4.2, as configs.

  s1  CMLM + BR from the start                     (2M steps)
  s2  CMLM (1.5M steps), then BR alone (1M)
  s3  CMLM (1.5M steps), then CMLM + BR (1M)       the paper's choice

Each is a base experiment (`cmlm/multilingual_cmlm_br`, which configures both
objectives) and a sequence of objective sets; `python -m cmlm stages
--schedule=s3` runs one (training/stages.py). A YAML file of the same shape
is a schedule too (`--schedule=my_schedule.yaml`).
"""
from cmlm.training.stages import ScheduleConfig
from cmlm.training.stages import StageConfig
from cmlm.training.stages import register_schedule

_EXPERIMENT = "cmlm/multilingual_cmlm_br"
_CMLM = {"cmlm": 1.0}
_CMLM_BR = {"cmlm": 1.0, "bitext_retrieval": 0.2}  # alpha = 0.2
_BR = {"bitext_retrieval": 1.0}


def _schedule(*stages) -> ScheduleConfig:
  return ScheduleConfig(experiment=_EXPERIMENT, stages=tuple(
      StageConfig(objectives=weights, train_steps=steps)
      for weights, steps in stages))


# The paper's steps (section 4.4): 1.5M then 1M; S1 trains 2M.
register_schedule("s1", _schedule((_CMLM_BR, 2_000_000)))
register_schedule("s2", _schedule((_CMLM, 1_500_000), (_BR, 1_000_000)))
register_schedule("s3", _schedule((_CMLM, 1_500_000), (_CMLM_BR, 1_000_000)))
