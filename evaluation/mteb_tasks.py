"""MTEB 2 tasks by name, run through MTEB's own loaders (`eval --mteb_tasks`).

    python -m cmlm eval --model=exports/tiny --mteb_tasks=STSBenchmark,SICK-R

`get_tasks(names)` finds each task in MTEB's registry (`mteb.get_task`) and
`load_data` has MTEB load its data: from the Hugging Face Hub, into the
`datasets` cache, the first time; an unknown name or a dataset that cannot
be loaded is one line, before the model loads. `evaluate(model, tasks)`
runs `mteb.evaluate` on an MTEB model (`cmlm.mteb_model`: any model kind of
the garden) without MTEB's result cache (a run evaluated twice under one
name is measured twice) and gives each task's result in the report's form:

    main_score    MTEB's main score x 100, in the units of the garden's
                  other figures (a Spearman x 100, an accuracy in %)
    headline      MTEB's name of it (`cosine_spearman`, `accuracy`, ...)
    evaluated_on  "MTEB <splits>"
    mteb          MTEB's own record: `scores` (per split and subset, its
                  units), `type` (the task's MTEB type: STS, ...),
                  `dataset` (Hub path and revision), `mteb_version`

mteb is not a dependency of the garden: `pip install mteb` (the tests run
`mteb==2.26.*`, requirements-test.txt).
"""
import re
from typing import Dict, List, Sequence

PAPER = ""  # MTEB's tasks reproduce no table of the CMLM paper
SCALE = 100.0  # MTEB's scores are fractions; the garden reports percents


def _mteb():
  try:
    import mteb  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise ValueError("--mteb_tasks needs the mteb package: pip install mteb "
                     "(the garden's tests use mteb 2.26).") from None
  return mteb


def get_tasks(names: Sequence[str]) -> List:
  """MTEB's task objects of `names`, in order; an unknown name is a
  ValueError with MTEB's nearest name."""
  mteb = _mteb()
  tasks = []
  for name in dict.fromkeys(names):
    try:
      tasks.append(mteb.get_task(name))
    except KeyError as error:
      close = re.search(r"Did you mean: '([^']+)'", str(error))
      hint = f"; did you mean {close.group(1)!r}?" if close else "."
      raise ValueError(
          f"Unknown MTEB task {name!r} in --mteb_tasks{hint} MTEB names its "
          "tasks as in its registry, e.g. STSBenchmark, SICK-R, STS12; "
          "`mteb available-tasks` (MTEB's own command, installed with it) "
          "lists them, `--task-types STS` those of one type.") from None
  return tasks


def load_data(tasks: Sequence) -> None:
  """Has MTEB load each task's data (downloading it once); one line for a
  task whose data cannot be had."""
  for task in tasks:
    if task.data_loaded:
      continue
    try:
      task.load_data()
    except Exception as error:  # pylint: disable=broad-except
      # Hub, network and dataset errors have many types; the user needs
      # one line that names the task and MTEB's reason.
      reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
      raise ValueError(
          f"MTEB could not load the data of {task.metadata.name} "
          f"({task.metadata.dataset.get('path', '')}): {reason} (MTEB "
          "reads its tasks from the Hugging Face Hub, or from its cache "
          "when offline).") from error


def evaluate(model, tasks: Sequence, batch_size: int = 256,
             show_progress: bool = True) -> Dict[str, dict]:
  """`{task name: result}` of `mteb.evaluate(model, tasks)` (module
  docstring); `model` is an MTEB model (`cmlm.mteb_model(path)`)."""
  mteb = _mteb()
  evaluated = mteb.evaluate(
      model, tasks=list(tasks), cache=None, co2_tracker=False,
      encode_kwargs={"batch_size": batch_size},
      show_progress_bar=show_progress)
  by_name = {task.metadata.name: task for task in tasks}
  results = {}
  for task_result in evaluated.task_results:
    metadata = by_name[task_result.task_name].metadata
    score = SCALE * float(task_result.get_score())
    results[task_result.task_name] = {
        metadata.main_score: score, "main_score": score,
        "headline": metadata.main_score, "paper": PAPER,
        "evaluated_on": "MTEB " + ", ".join(task_result.scores),
        "mteb": {"scores": task_result.scores, "type": metadata.type,
                 "dataset": dict(metadata.dataset),
                 "mteb_version": task_result.mteb_version}}
  return results
