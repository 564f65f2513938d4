"""What tf.data's autotuning model costs a process that goes on after
training: the release of a finished run's input iterator, and the input
pipeline's speed, with the model and without it
(training/task.without_autotuning_model), side by side in one run.

For each `--waits` value, `--trials` times per arm, the arms alternated:
a fresh process trains a tiny run (cmlm/tiny, `--steps` steps), goes on
for that many seconds, then its garbage collector releases the run; the
release's wall seconds and CPU seconds are recorded. The model's thread
sleeps between its optimisations; the release waits for that sleep to end
while holding the GIL, so the wall seconds exceed the CPU seconds by the
wait. `--busy` processes spin beside it (default one per core), as the
other worker of a test session or any other work on the machine does: on
an idle machine the wait is rare. Then the input pipeline of `--experiment`
alone, in examples/s over `--pipeline_batches` batches, the arms
alternated (no spinning processes).

  python benchmarks/input_release.py [--waits=5] [--trials=4] [--busy=2] \
      [--results=docs/results/input_release.json]
"""
import argparse
import datetime
import gc
import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

import cmlm  # noqa: E402,F401  (selects Keras 2 before TensorFlow loads)
from cmlm import registry_imports  # noqa: E402,F401  (registers everything)
from cmlm.data_pipelines import atomic_file  # noqa: E402
from cmlm.experiments import unit_provenance  # noqa: E402
from cmlm.training import task as task_lib  # noqa: E402
from cmlm.training import train  # noqa: E402
from official.core import exp_factory  # noqa: E402
from tests import helpers  # noqa: E402  (the tests' tiny run)

ARMS = {"autotuning model": lambda dataset: dataset,
        "no autotuning model": task_lib.without_autotuning_model}


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--waits", default="5",
                      help="seconds the process goes on before the release")
  parser.add_argument("--trials", type=int, default=4)
  parser.add_argument("--busy", type=int, default=os.cpu_count() or 1,
                      help="processes that spin beside each trial")
  parser.add_argument("--one_trial", default=None, choices=list(ARMS),
                      help=argparse.SUPPRESS)  # a trial's own process
  parser.add_argument("--steps", type=int, default=4)
  parser.add_argument("--experiment", default="cmlm/demo",
                      help="experiment whose input pipeline is timed")
  parser.add_argument("--pipeline_batches", type=int, default=200)
  parser.add_argument("--results", default=None,
                      help="also write the JSON here (relative to the "
                      "repository)")
  args = parser.parse_args(argv)
  try:
    args.waits = [float(w) for w in args.waits.split(",")]
  except ValueError:
    parser.error(f"--waits must be seconds separated by commas, got "
                 f"{args.waits!r}.")
  if args.trials < 1 or args.steps < 1 or args.pipeline_batches < 1:
    parser.error("--trials, --steps and --pipeline_batches must be 1 or "
                 "more.")
  if args.busy < 0:
    parser.error(f"--busy must be 0 or more, got {args.busy}.")
  return args


def release_seconds(steps: int, wait: float):
  """(wall, CPU) seconds of collecting a finished in-process run after the
  process went on for `wait` seconds."""
  with tempfile.TemporaryDirectory(prefix="cmlm-release-") as directory:
    result = train.run(helpers.tiny_run_params(steps),
                       os.path.join(directory, "run"))
    del result
    time.sleep(wait)
    wall, cpu = time.perf_counter(), time.process_time()
    gc.collect()
    return time.perf_counter() - wall, time.process_time() - cpu


def trial_in_a_fresh_process(arm: str, steps: int, wait: float, busy: int):
  """(wall, CPU) seconds of the release in a new process of this script,
  `busy` spinning processes beside it."""
  spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
              for _ in range(busy)]
  try:
    completed = subprocess.run(
        [sys.executable, os.path.abspath(__file__), f"--one_trial={arm}",
         f"--steps={steps}", f"--waits={wait}"], capture_output=True,
        text=True, check=False, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  finally:
    for spinner in spinners:
      spinner.kill()
      spinner.wait()
  if completed.returncode:
    raise SystemExit(f"the {arm} trial failed with status "
                     f"{completed.returncode}:\n"
                     + completed.stderr.strip()[-2000:])
  return json.loads(completed.stdout.strip().splitlines()[-1])


def pipeline_examples_per_s(experiment: str, batches: int) -> float:
  params = exp_factory.get_exp_config(experiment)
  task = task_lib.SentenceEncoderTask(params.task)
  iterator = iter(task.build_inputs(params.task.train_data))
  batch = next(iterator)  # the pipeline started
  size = int(next(iter(batch.values()))["s1_input_word_ids"].shape[0])
  start = time.perf_counter()
  for _ in range(batches):
    next(iterator)
  seconds = time.perf_counter() - start
  del iterator
  gc.collect()
  return batches * size / seconds


def main(argv=None):
  args = parse_args(argv)
  if args.one_trial:
    task_lib.without_autotuning_model = ARMS[args.one_trial]
    print(json.dumps(release_seconds(args.steps, args.waits[0])))
    return None
  load_before = os.getloadavg()[0]
  commit = unit_provenance.head_commit(REPO)
  code_modified = unit_provenance.modified_code(REPO)
  date = datetime.datetime.now(datetime.timezone.utc).isoformat(
      timespec="seconds")
  kept = task_lib.without_autotuning_model
  releases, pipeline = [], {arm: [] for arm in ARMS}
  try:
    for wait in args.waits:
      for trial in range(args.trials):
        for arm in ARMS:
          wall, cpu = trial_in_a_fresh_process(arm, args.steps, wait,
                                               args.busy)
          row = dict(arm=arm, wait_s=wait, trial=trial,
                     release_wall_s=round(wall, 3),
                     release_cpu_s=round(cpu, 3))
          print(json.dumps(row), flush=True)
          releases.append(row)
    for _ in range(2):  # ABAB: each arm twice, alternated
      for arm, options in ARMS.items():
        task_lib.without_autotuning_model = options
        pipeline[arm].append(round(pipeline_examples_per_s(
            args.experiment, args.pipeline_batches), 1))
        print(json.dumps({"arm": arm, "pipeline_examples_per_s":
                          pipeline[arm][-1]}), flush=True)
  finally:
    task_lib.without_autotuning_model = kept
  isa = unit_provenance.isa_flags()
  result = {
      "command": " ".join(["python", "benchmarks/input_release.py"] + (
          sys.argv[1:] if argv is None else list(argv))),
      "commit": commit, "code_modified": code_modified,
      "cpu": unit_provenance.cpu_model(),
      "cpu_flags": [flag for flag, present in isa.items() if present],
      "cores": os.cpu_count(), "date": date,
      "load": f"1-minute load {load_before:.2f} before, "
              f"{os.getloadavg()[0]:.2f} after",
      "steps": args.steps, "busy": args.busy, "experiment": args.experiment,
      "pipeline_batches": args.pipeline_batches,
      "releases": releases, "pipeline_examples_per_s": pipeline}
  if args.results:
    atomic_file.write_json(os.path.join(REPO, args.results), result)
    print(f"wrote {args.results}", file=sys.stderr)
  return result


if __name__ == "__main__":
  main()
