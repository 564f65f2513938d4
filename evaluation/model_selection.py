"""An evaluation task as a scorer for model selection during training.

SimCSE's (and CMLM-CSE's, cmlm_cse_2023.txt section 4.1) selection scores
the encoder on STS-B dev every 125 steps and keeps the best checkpoint.
`task_scorer("sts-b")` reads the task's DEV split once (never its test
file: selecting on test would leak it; a missing file stops the command
before training) and returns `scorer(embed) -> float`, the task's headline
figure (Spearman x 100 for sts-b) of the embeddings function
`embed` (sentences -> vectors), which training/best_checkpoint.py calls on
the live encoder. `python -m cmlm train` injects it when
`trainer.best_checkpoint_eval_metric` names an evaluation task.
"""
import os
from typing import Callable, List, Optional

import numpy as np

from cmlm.evaluation import encoders
from cmlm.evaluation import runner
from cmlm.evaluation import tasks as tasks_lib
from cmlm.evaluation.task_data import EvalOptions

Embed = Callable[[List[str]], np.ndarray]
# The tasks that have a development split, and its file in the task's folder.
DEV_FILES = {"sts-b": "sts-dev.csv", "sick-r": "SICK_trial.txt"}


def is_task(metric_name: str) -> bool:
  """Whether a `best_checkpoint_eval_metric` names an evaluation task."""
  return metric_name in tasks_lib.TASKS


def task_scorer(task_name: str, data_dir: Optional[str] = None,
                task_path: Optional[str] = None, batch_size: int = 256,
                max_examples: Optional[int] = None
                ) -> Callable[[Embed], float]:
  """`scorer(embed)`: the task's headline figure of `embed`'s embeddings.

  Args:
    task_name: an evaluation task with a dev split (`DEV_FILES`), e.g.
      "sts-b".
    data_dir: root of the benchmark files, in the eval command's
      `--data_dir` layout (docs/benchmark_data.md); no default: this or
      `task_path` is needed.
    task_path: the dev file (or its folder) instead of its place under
      `data_dir`.
    batch_size: sentences per call of `embed`.
    max_examples: a fixed subset, for quick runs.

  Raises:
    ValueError: unknown task, one without a dev split, or neither
      `data_dir` nor `task_path`.
    FileNotFoundError: its data is missing.
  """
  if not is_task(task_name):
    raise ValueError(f"trainer.best_checkpoint_eval_metric={task_name!r} is "
                     "not an evaluation task; the tasks are "
                     f"{', '.join(tasks_lib.TASKS)}.")
  if task_name not in DEV_FILES:
    raise ValueError(f"trainer.best_checkpoint_eval_metric={task_name!r} has "
                     "no dev split to select a checkpoint on; use one of "
                     f"{', '.join(DEV_FILES)}.")
  task = tasks_lib.TASKS[task_name]
  if not data_dir and not task_path:
    raise ValueError(
        f"trainer.best_checkpoint_eval_metric={task_name} needs its dev file: "
        "give --eval_data_dir=DIR, the folder of the benchmark files in the "
        f"eval command's --data_dir layout ({runner.DATA_DOC} says where each "
        "comes from).")
  path = task_path or os.path.join(data_dir, task.default_path)
  if os.path.isdir(path):
    path = os.path.join(path, DEV_FILES[task_name])
  if not os.path.isfile(path):
    raise FileNotFoundError(
        f"No {task_name} dev file at {path} for the best-checkpoint score; "
        "give --eval_data_dir (the eval command's --data_dir layout).")
  options = EvalOptions(batch_size=batch_size, max_examples=max_examples,
                        show_progress=False)
  data = task.read(path, options)["data"]

  def scorer(embed: Embed) -> float:
    # A fresh cache: the encoder's weights change between calls.
    encoder = encoders.CachedEncoder(embed, show_progress=False)
    return float(task.evaluate(encoder, data, options)[task.headline])

  scorer.task_name = task_name
  return scorer
