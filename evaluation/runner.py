"""`python -m cmlm eval`: evaluate a sentence encoder on the paper's tasks
and on MTEB's.

    python -m cmlm eval --model=runs/tiny --tasks=sts-b,sick-r,cr,mrpc,trec \
        --data_dir=senteval_data [--report_dir=runs/eval] \
        [--max_examples=500] [--batch_size=256]
    python -m cmlm eval --model=exports/tiny --mteb_tasks=STSBenchmark,SICK-R

`--model` is a training model_dir, an export, a TF-Hub encoder + preprocessor
pair or a text-to-embedding SavedModel (`evaluation/encoders.py`). `--tasks`
names tasks of `evaluation/tasks.py` or groups (`sts`, `transfer`,
`multilingual`, `all`; a group skips the tasks whose data is absent), whose
files are read from `--data_dir` in SentEval's layout (no default:
docs/benchmark_data.md says where each benchmark comes from and the files
expected). `--mteb_tasks` names MTEB 2 tasks, which MTEB loads itself
(`evaluation/mteb_tasks.py`). Every task's data is read before the model is
loaded; then each task prints its encoding progress and figure, and
`--report_dir` receives `report.json`, `report.md` and the
language-distribution PNG.
"""
import os
import sys
import time
from typing import Callable, Dict, Optional, Sequence

from cmlm.evaluation import benchmark_sources
from cmlm.evaluation import encoders
from cmlm.evaluation import mteb_tasks as mteb_lib
from cmlm.evaluation import provenance
from cmlm.evaluation import report as report_lib
from cmlm.evaluation import tasks as tasks_lib
from cmlm.evaluation.task_data import EvalOptions
from cmlm.inference import input_paths

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA_DOC = "docs/benchmark_data.md"


def parse_assignments(text: Optional[str], flag: str) -> Dict[str, str]:
  """`a=x,b=y` -> {"a": "x", "b": "y"}."""
  result = {}
  for item in filter(None, (text or "").split(",")):
    key, equals, value = item.partition("=")
    if not equals or not key.strip() or not value.strip():
      raise ValueError(f"--{flag} takes NAME=PATH items separated by commas; "
                       f"{item!r} is not one.")
    result[key.strip()] = value.strip()
  return result


def _fetch_hint(task_name: str) -> str:
  """How `cmlm fetch` downloads a task's benchmark, if it knows it."""
  if (task_name in benchmark_sources.BENCHMARKS or
      task_name in benchmark_sources.ALIASES):
    return (f"`python -m cmlm fetch --benchmarks={task_name} --data_dir=DIR` "
            "downloads it; ")
  return ""


def resolve_tasks(names: Sequence[str], data_dir: Optional[str],
                  task_data: Dict[str, str],
                  options: Optional[EvalOptions] = None):
  """`[(task, path)]` for the names asked, and `{name: why}` skipped.

  A task named alone must have its data; a group skips what is missing. A
  task whose files are under `--data_dir` needs it (or `--task_data`).
  """
  options = options or EvalOptions()
  chosen, skipped = [], {}
  for name in names:
    if name not in tasks_lib.TASKS and name not in tasks_lib.GROUPS:
      raise ValueError(f"Unknown task {name!r} in --tasks; the tasks are "
                       f"{', '.join(tasks_lib.TASKS)} and the groups "
                       f"{', '.join(tasks_lib.GROUPS)} (MTEB's go in "
                       "--mteb_tasks).")
    in_group = name in tasks_lib.GROUPS
    for task_name in tasks_lib.GROUPS.get(name, [name]):
      task = tasks_lib.TASKS[task_name]
      path = task_data.get(task_name) or (
          os.path.join(data_dir, task.default_path)
          if task.default_path and data_dir else "")
      if task.default_path and not path:
        raise ValueError(
            f"{task_name} reads its files from --data_dir, which was not "
            f"given: pass --data_dir=DIR holding SentEval's layout (this "
            f"task's files under DIR/{task.default_path}), or --task_data="
            f"{task_name}=PATH; {_fetch_hint(task_name)}{DATA_DOC} says "
            "where each benchmark comes from.")
      missing = "" if task.default_path else task.missing(options)
      if missing and not in_group:
        raise ValueError(f"{task_name} needs {missing}; {DATA_DOC} says "
                         "where they come from.")
      if in_group and missing:
        skipped[task_name] = f"no data: it needs {missing}"
      elif in_group and path and not os.path.exists(path):
        skipped[task_name] = f"no data at {path}"
      elif task_name not in [t.name for t, _ in chosen]:
        chosen.append((task, path))
  unknown = sorted(set(task_data) - set(tasks_lib.TASKS))
  if unknown:
    raise ValueError(f"--task_data names unknown tasks: {', '.join(unknown)}.")
  asked = {task for name in names for task in tasks_lib.GROUPS.get(name, [name])}
  not_run = sorted(set(task_data) - asked)
  if not_run:  # a path given for nothing evaluated: a mistyped --tasks?
    raise ValueError(f"--task_data names {', '.join(not_run)}, which --tasks "
                     f"does not run (--tasks={','.join(names)}); add it to "
                     "--tasks or drop its path.")
  return chosen, skipped


def run_evaluation(model: str, task_names: Sequence[str],
                   options: EvalOptions, data_dir: Optional[str] = None,
                   task_data: Optional[Dict[str, str]] = None,
                   checkpoint: Optional[str] = None,
                   encoder: Optional[encoders.Encoder] = None,
                   stream=None, command_line: Optional[str] = None,
                   mteb_task_names: Sequence[str] = (),
                   load_mteb_model: Optional[Callable[[], object]] = None
                   ) -> dict:
  """Reads every task's data, loads the encoder, evaluates, writes the report.

  Args:
    model: `--model` (also the report's title).
    task_names: task or group names of `evaluation/tasks.py`.
    options: the tasks' options; `report_dir` is where the report goes.
    data_dir: the root of the default task locations (SentEval's layout).
    task_data: `{task: path}` overriding a default location.
    checkpoint: with a model_dir, a checkpoint instead of the latest.
    encoder: an `Encoder` to use instead of loading `model` (tests).
    stream: where progress goes (stdout).
    command_line: the command that ran, for the report (default sys.argv).
    mteb_task_names: MTEB 2 task names (`evaluation/mteb_tasks.py`).
    load_mteb_model: with `mteb_task_names`, returns `model` as an MTEB
      model (`cmlm.mteb_model`), which then also encodes for `task_names`:
      the model is loaded once.

  The report also records the tool and library versions, every data
  file's SHA-256, whether examples were subsampled (`--max_examples`, which
  MTEB's tasks do not take) and each task's `main_score` (its headline
  figure, as MTEB names it).
  """
  stream = stream or sys.stdout
  if not task_names and not mteb_task_names:
    raise ValueError("--tasks or --mteb_tasks is required, e.g. --tasks=sts-b,"
                     f"cr (tasks: {', '.join(tasks_lib.TASKS)}; groups: "
                     f"{', '.join(tasks_lib.GROUPS)}) or --mteb_tasks="
                     "STSBenchmark,SICK-R.")
  if options.batch_size < 1:
    raise ValueError(f"--batch_size must be 1 or more, got "
                     f"{options.batch_size}.")
  if options.max_examples is not None and options.max_examples < 2:
    raise ValueError(f"--max_examples must be 2 or more, got "
                     f"{options.max_examples}.")
  if options.langdist_size < 2:
    raise ValueError(f"--langdist_size must be 2 or more (each language's "
                     "principal component is fitted on its sentences), got "
                     f"{options.langdist_size}.")
  report_lib.check_report_dir(options.report_dir)
  chosen, skipped = resolve_tasks(task_names, data_dir, task_data or {},
                                  options)
  mteb_tasks = mteb_lib.get_tasks(mteb_task_names) if mteb_task_names else []
  if mteb_tasks and load_mteb_model is None:
    raise ValueError("MTEB's tasks need the model as an MTEB model "
                     "(load_mteb_model).")
  for name, why in skipped.items():
    print(f"skipping {name}: {why}", file=stream)
  loaded = {}
  for task, path in chosen:  # every file is checked before the model loads
    loaded[task.name] = task.read(path, options)
  mteb_lib.load_data(mteb_tasks)  # so is MTEB's data
  start = time.perf_counter()
  mteb_model = load_mteb_model() if mteb_tasks else None
  if encoder is None and chosen:
    encoder = (encoders.CachedEncoder(_batches_of(mteb_model),
                                      options.show_progress)
               if mteb_model is not None else encoders.load_encoder(
                   model, checkpoint, options.show_progress, options.backend,
                   options.quantized))
  print(f"loaded {model} in {time.perf_counter() - start:.1f}s", file=stream)
  results = {}
  total = len(chosen) + len(mteb_tasks)
  for number, (task, _) in enumerate(chosen, start=1):
    print(f"[{number}/{total}] {task.name} ({task.paper})", file=stream,
          flush=True)
    start = time.perf_counter()
    result = task.evaluate(encoder, loaded[task.name]["data"], options)
    result.update(paper=task.paper, headline=task.headline,
                  main_score=result[task.headline],
                  card=task.card.for_task(task.name),
                  seconds=time.perf_counter() - start,
                  data=loaded[task.name]["files"])
    results[task.name] = result
    print(f"  {task.name}: {task.headline} {result[task.headline]:.2f} "
          f"({result['seconds']:.1f}s)", file=stream, flush=True)
  for number, task in enumerate(mteb_tasks, start=len(chosen) + 1):
    name = task.metadata.name
    print(f"[{number}/{total}] {name} (MTEB)", file=stream, flush=True)
    start = time.perf_counter()
    result = mteb_lib.evaluate(mteb_model, [task], options.batch_size,
                               options.show_progress)[name]
    result.update(seconds=time.perf_counter() - start, data=[])
    results[name] = result
    print(f"  {name}: {result['headline']} {result['main_score']:.2f} "
          f"({result['seconds']:.1f}s)", file=stream, flush=True)
  files = [path for task_files in (loaded[name]["files"] for name in loaded)
           for path in task_files]
  report = report_lib.build_report(model, results, {
      "command_line": command_line or provenance.command_line(),
      "environment": provenance.environment(),
      "subsample": provenance.subsample(options.max_examples),
      "data_files": provenance.file_checksums(files)})
  report["skipped"] = skipped
  paths = report_lib.write_report(report, options.report_dir)
  print(f"wrote {paths['json']} and {paths['markdown']}", file=stream)
  return report


def _batches_of(mteb_model):
  """The MTEB model as a function of one batch, for the garden's tasks."""
  def embed(sentences):
    return mteb_model.encode(list(sentences), batch_size=max(1, len(sentences)),
                             show_progress_bar=False)
  return embed


def evaluate(model: str, task_names: Sequence[str], options: EvalOptions,
             data_dir: Optional[str] = None,
             task_data: Optional[Dict[str, str]] = None,
             checkpoint: Optional[str] = None,
             command_line: Optional[str] = None,
             mteb_task_names: Sequence[str] = (),
             load_mteb_model: Optional[Callable[[], object]] = None) -> dict:
  """`python -m cmlm eval`: `run_evaluation`, then the headline table printed.

  `data_dir` has no default: the tasks whose files are under it need it.
  """
  if data_dir and not os.path.isdir(data_dir):
    raise FileNotFoundError(f"--data_dir={data_dir} is not a directory; it "
                            "should hold the benchmarks in SentEval's layout "
                            f"({DATA_DOC}).")
  if not model:
    raise ValueError(f"--model is required: {input_paths.MODEL_KINDS}.")
  report = run_evaluation(model, task_names, options, data_dir, task_data,
                          checkpoint=checkpoint, command_line=command_line,
                          mteb_task_names=mteb_task_names,
                          load_mteb_model=load_mteb_model)
  print(report_lib.markdown_table(report).split("\n\n## ")[0])
  return report
