"""How long the demo takes: runs `python -m cmlm demo` and writes its wall
time, its training minutes, its figures and the machine to a results file.

    .venv/bin/python benchmarks/demo_time.py [--seed=0] [--train_steps=N] \
        [--output=docs/results/demo/time_<cpu>.json]

`make demo`'s main job, timed from a fresh process to its last line, on a
model directory of its own (removed afterwards). The demo's output is passed
on to stderr as it comes (its progress). The results file holds the
command, the commit, the CPU model, its ISA flags, the cores, the date, the
1-minute load at the start and the end (`quiet` when the start's is below
0.5: run it with nothing else running), the wall seconds and the demo's JSON
line (`figures`, `train_minutes` among them). When the repository holds a
results file of the same seed and step count (`docs/results/demo/seedS.json`),
`figures_differing` lists the figures (all but the minutes) that differ from
it beyond a relative 1e-6: the demo is seeded end to end, so on another CPU
this says whether its figures are the same. A file under docs/results/ (the
default) is followed by `experiments/figures.py`'s rendering of the pages.
A demo that fails writes nothing and exits with its status.
"""
import argparse
import json
import math
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from cmlm.data_pipelines.atomic_file import write_json  # noqa: E402
from cmlm.experiments import unit_provenance  # noqa: E402
from cmlm.experiments.command_runs import run_streamed  # noqa: E402
from cmlm.experiments.figures import render_pages  # noqa: E402

REPO_ROOT = unit_provenance.REPO_ROOT
QUIET_LOAD = unit_provenance.QUIET_LOAD
SEEDS_DIR = os.path.join(REPO_ROOT, "docs", "results", "demo")


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--seed", type=int, default=0,
                      help="the demo's --seed (default 0, `make demo`'s)")
  parser.add_argument("--train_steps", type=int, default=None,
                      help="the demo's --train_steps (default: the "
                      "recipe's, as `make demo` runs it)")
  parser.add_argument("--output", default=None,
                      help="the results file (default: docs/results/demo/"
                      "time_<cpu>.json, <cpu> as in time_amd_epyc.json, "
                      "with _avx2 added for a CPU without AVX-512)")
  args = parser.parse_args(argv)
  if args.seed < 0:
    parser.error(f"--seed must be 0 or more, not {args.seed}.")
  if args.train_steps is not None and args.train_steps < 1:
    parser.error(f"--train_steps must be 1 or more, not {args.train_steps}.")
  return args


def last_json_line(output: str):
  """The demo's figures: its output's last line, a JSON object (None when
  the last line is not one)."""
  lines = output.strip().splitlines()
  try:
    figures = json.loads(lines[-1]) if lines else None
  except ValueError:
    return None
  return figures if isinstance(figures, dict) else None


def differing_figures(figures: dict, committed: dict) -> list:
  """The keys of `committed` (a seed file's figures) whose value in
  `figures` differs beyond a relative 1e-6, all but the minutes."""
  def same(a, b):
    if isinstance(a, list) and isinstance(b, list):
      return len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
      return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)
    return a == b
  return sorted(key for key, value in committed.items()
                if key != "train_minutes" and not same(figures.get(key), value))


def compared_seed_file(figures: dict):
  """(the repository's results file of the same seed and steps, its
  figures) or (None, None)."""
  path = os.path.join(SEEDS_DIR, f"seed{figures.get('seed')}.json")
  if not os.path.exists(path):
    return None, None
  with open(path, encoding="utf-8") as f:
    committed = json.load(f)["figures"]
  if committed.get("train_steps") != figures.get("train_steps"):
    return None, None
  return os.path.relpath(path, REPO_ROOT).replace(os.sep, "/"), committed


def main(argv=None) -> int:
  args = parse_args(argv)
  cpu = unit_provenance.cpu_model()
  flags = [f for f, on in unit_provenance.isa_flags().items() if on]
  output = args.output or os.path.join(
      SEEDS_DIR, f"time_{unit_provenance.cpu_file_name(cpu, flags)}.json")
  commit, modified = (unit_provenance.head_commit(),
                      unit_provenance.modified_code())
  demo_flags = [f"--seed={args.seed}"] + (
      [f"--train_steps={args.train_steps}"] if args.train_steps else [])
  load_before = round(os.getloadavg()[0], 2)
  date = time.strftime("%Y-%m-%d", time.gmtime())
  with tempfile.TemporaryDirectory() as work:
    command = [sys.executable, "-m", "cmlm", "demo",
               f"--model_dir={os.path.join(work, 'demo')}", *demo_flags]
    print(f"timing python -m cmlm demo {' '.join(demo_flags)} (load "
          f"{load_before})", file=sys.stderr, flush=True)
    start = time.perf_counter()
    returncode, out = run_streamed(command)
    seconds = time.perf_counter() - start
  load_after = round(os.getloadavg()[0], 2)
  figures = last_json_line(out)
  if returncode or figures is None:
    why = (f"the demo exited with status {returncode}" if returncode else
           "the demo's last line is not its JSON figures")
    print(f"demo_time: error: {why}; {output} is left as it was.",
          file=sys.stderr)
    return returncode or 1
  compared, committed = compared_seed_file(figures)
  result = {
      "command": unit_provenance.without_local_paths(" ".join(
          ["python", "benchmarks/demo_time.py"]
          + (argv if argv is not None else sys.argv[1:])), ("output",)),
      "demo_command": "python -m cmlm demo --model_dir=DIR " + " ".join(
          demo_flags),
      "commit": commit, "code_modified": modified, "cpu": cpu,
      "cpu_flags": flags, "cores": os.cpu_count(), "date": date,
      "load": f"1-minute load {load_before} at the start, {load_after} at "
              "the end",
      "load_1min_before": load_before, "load_1min_after": load_after,
      "quiet": load_before < QUIET_LOAD,
      "wall_seconds": round(seconds), "wall_minutes": round(seconds / 60, 1),
      "seed": figures.get("seed"),
      "figures_compared_with": compared,
      "figures_differing": (differing_figures(figures, committed)
                            if committed else None),
      "figures": figures}
  os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
  write_json(output, result)
  print(f"{round(seconds)} s ({figures['train_minutes']} min of training), "
        f"load {load_before} -> {load_after}; wrote {output}",
        file=sys.stderr)
  if compared:
    differing = result["figures_differing"]
    print(f"figures against {compared}: " + (
        f"{len(differing)} differ ({', '.join(differing)})" if differing
        else "the same, all but the minutes"), file=sys.stderr)
  for page in render_pages(output):
    print(f"rewrote {page} from its results files", file=sys.stderr)
  return 0


if __name__ == "__main__":
  sys.exit(main())
