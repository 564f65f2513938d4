"""How long the test suite takes: runs `make test`'s pytest command and
writes its wall time, its counts and the machine to a results file.

    .venv/bin/python benchmarks/test_suite_time.py [--workers=2] [--append] \
        [--results=docs/results/test_suite_<cpu>.json] [-- EXTRA PYTEST ARGS]

pytest's output is passed on to stderr as it comes (its progress). Run it
with the project's environment (`make .venv/.installed-test-requirements`
installs it): without pytest-xdist it is refused before anything runs, and
a pytest that ran no test (a usage error, say) leaves the results file as
it was. A results file under docs/results/ (the default) is followed by
`experiments/figures.py`'s rendering of the pages, so that BUILD.md shows
it and a second run of the same tree passes the docs' own test.

The suite's budget is 20 minutes of pytest on a quiet 2-core machine
(BUILD.md renders the figures from the results files, one per CPU:
`test_suite_intel_xeon.json`, `test_suite_amd_epyc.json`, and
`test_suite_amd_epyc_avx2.json` for an AMD EPYC without AVX-512, the Zen 3
that the budget names as the slower). Runs of one
commit on one machine can differ by a fifth, so `--append` adds a run to
its results file when the file holds runs of the same commit on the same
CPU (and refuses, before running anything, when it does not). Run it with
nothing else running: the load before and after is recorded beside the time, and
the run is flagged `quiet: false` when the 1-minute load at the start is
0.5 or more. With more than one worker it also records how long each
pytest-xdist worker was busy, when it finished (a worker that finished
long before the other is time a better order of the files would save) and
the CPU seconds it and its subprocesses spent (far fewer than its busy
seconds: its tests were waiting); the files that took longest (conftest.py
writes each test's start and end where CMLM_TEST_TIMES says; `--times`
keeps them); and the share of the CPUs' time that was busy (/proc/stat).
"""
import argparse
import importlib.util
import json
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from cmlm.experiments import unit_provenance  # noqa: E402
from cmlm.experiments.command_runs import run_streamed  # noqa: E402
from cmlm.experiments.figures import render_pages  # noqa: E402

REPO_ROOT = unit_provenance.REPO_ROOT
QUIET_LOAD = unit_provenance.QUIET_LOAD
# pytest's last line: "12 failed, 960 passed, 5 skipped in 1234.56s (...)".
SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")


# The Makefile's `test` recipe: "\t$(PY) -m pytest ARGS".
MAKE_TEST = re.compile(r"^test:.*\n\t\$\(PY\) -m pytest (.*)$", re.M)


def pytest_command(workers: int, extra) -> list:
  """`make test`'s command, read from the Makefile, with `workers` and
  `extra` arguments (and no cache written into the tree)."""
  with open(os.path.join(REPO_ROOT, "Makefile"), encoding="utf-8") as f:
    recipe = MAKE_TEST.search(f.read()).group(1)
  return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
          *recipe.replace("$(PYTEST_WORKERS)", str(workers)).split(), *extra]


def counts(output: str) -> dict:
  """The counts of pytest's summary line ({} when there is none)."""
  lines = [l for l in output.splitlines()
           if " in " in l and SUMMARY.search(l)]
  if not lines:
    return {}
  return {kind.rstrip("s") if kind.startswith("error") else kind: int(n)
          for n, kind in SUMMARY.findall(lines[-1])}


# One line of pytest's --durations list: "12.34s call     tests/x.py::test".
DURATION = re.compile(r"^\s*([\d.]+)s (call|setup|teardown)\s+(\S+)$", re.M)


def slowest(output: str) -> list:
  """pytest's --durations list: [{seconds, phase, test}], slowest first."""
  return [{"seconds": float(seconds), "phase": phase, "test": test}
          for seconds, phase, test in DURATION.findall(output)]


def read_times(folder: str) -> list:
  """conftest.py's record (CMLM_TEST_TIMES): a dict per test, its worker
  added from the file's name."""
  tests = []
  for name in sorted(os.listdir(folder)):
    with open(os.path.join(folder, name), encoding="utf-8") as f:
      tests += [dict(json.loads(line), worker=name[:-len(".jsonl")])
                for line in f]
  return tests


def worker_times(folder: str, top: int = 15) -> dict:
  """From conftest.py's record of each test's start and end per pytest-xdist
  worker (CMLM_TEST_TIMES): each worker's seconds busy, when it finished
  after the first test started and the CPU seconds it and its subprocesses
  spent, and the `top` files that took longest."""
  tests = read_times(folder)
  if not tests:
    return {}
  first = min(t["start"] for t in tests)
  workers, files = {}, {}
  for t in tests:
    figure = workers.setdefault(t["worker"], {
        "busy_s": 0.0, "finished_at_s": 0.0, "cpu_s": 0.0,
        "subprocess_cpu_s": 0.0})
    figure["busy_s"] += t["end"] - t["start"]
    figure["cpu_s"] += t.get("cpu_s", 0.0)
    figure["subprocess_cpu_s"] += t.get("subprocess_cpu_s", 0.0)
    figure["finished_at_s"] = max(figure["finished_at_s"], t["end"] - first)
    path = t["test"].split("::")[0]
    files[path] = files.get(path, 0.0) + t["end"] - t["start"]
  return {"workers": {w: {k: round(v, 1) for k, v in f.items()}
                      for w, f in sorted(workers.items())},
          "slowest_files": [{"file": path, "seconds": round(seconds, 1)}
                            for path, seconds in sorted(
                                files.items(), key=lambda x: -x[1])[:top]]}


def check_workers(workers: int) -> None:
  """ValueError (one sentence) when `workers` is below 1, or above 1 and
  this Python has no pytest-xdist to run them."""
  if workers < 1:
    raise ValueError("--workers must be 1 or more.")
  if workers > 1 and importlib.util.find_spec("xdist") is None:
    raise ValueError(
        f"--workers={workers} needs pytest-xdist, which {sys.executable} "
        "does not have: run this with the project's environment "
        "(.venv/bin/python benchmarks/test_suite_time.py), which `make "
        ".venv/.installed-test-requirements` installs.")


def cpu_times():
  """(busy, total) jiffies of all CPUs since boot (/proc/stat), or None."""
  try:
    with open("/proc/stat", encoding="ascii") as f:
      fields = [int(x) for x in f.readline().split()[1:]]
  except (OSError, ValueError):
    return None
  idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
  return sum(fields) - idle, sum(fields)


def busy_share(before, after):
  """The share of the CPUs' time that was busy between two `cpu_times()`."""
  if before is None or after is None or after[1] == before[1]:
    return None
  return round((after[0] - before[0]) / (after[1] - before[1]), 3)


cpu_name = unit_provenance.cpu_name


def results_name(model: str, flags) -> str:
  """The default results file's name for a CPU model and its ISA flags:
  `test_suite_<cpu>.json` (`unit_provenance.cpu_file_name`: `_avx2` added
  for a CPU without AVX-512)."""
  return f"test_suite_{unit_provenance.cpu_file_name(model, flags)}.json"


# What makes two runs comparable: the same code on the same machine.
IDENTITY = ("commit", "code_modified", "cpu", "cpu_flags", "cores")


def check_appendable(previous: dict, identity: dict) -> None:
  """ValueError (one sentence) when `previous` (a results file) and a run
  of `identity` differ in commit, modified code, CPU, its flags or cores."""
  for key in IDENTITY:
    if previous.get(key) != identity.get(key):
      raise ValueError(
          f"--append adds runs of one commit on one CPU, but the results "
          f"file's {key} is {previous.get(key)!r} and this run's is "
          f"{identity.get(key)!r}: write to another --results file.")


def appended(previous: dict, result: dict) -> dict:
  """`previous` (a results file) with `result`'s run added after its runs
  (`check_appendable` first)."""
  check_appendable(previous, result)
  merged = dict(previous, runs=previous["runs"] + result["runs"],
                quiet=previous["quiet"] and result["quiet"],
                date=result["date"])
  merged["load"] = "; ".join(f"{run['load']} (run {i})" for i, run in
                             enumerate(merged["runs"], 1))
  return merged


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--workers", type=int, default=2)
  parser.add_argument(
      "--results", default=None,
      help="the results file (default: docs/results/test_suite_<cpu>.json, "
      "<cpu> as in test_suite_intel_xeon.json, with _avx2 added for a CPU "
      "without AVX-512)")
  parser.add_argument("--append", action="store_true",
                      help="add this run to the results file's runs of the "
                      "same commit and CPU instead of replacing them")
  parser.add_argument("--log", default=None,
                      help="also write pytest's output to this file")
  parser.add_argument("--times", default=None,
                      help="also write each test's worker, start and end "
                      "(JSON lines) to this file")
  parser.add_argument("extra", nargs="*", help="more pytest arguments")
  args = parser.parse_args(argv)
  try:
    check_workers(args.workers)
  except ValueError as e:
    parser.error(str(e))
  cpu = unit_provenance.cpu_model()
  identity = {"commit": unit_provenance.head_commit(),
              "code_modified": unit_provenance.modified_code(), "cpu": cpu,
              "cpu_flags": [f for f, on in unit_provenance.isa_flags().items()
                            if on],
              "cores": os.cpu_count()}
  results = args.results or os.path.join(
      REPO_ROOT, "docs", "results",
      results_name(cpu, identity["cpu_flags"]))
  previous = None
  if args.append and os.path.exists(results):
    with open(results, encoding="utf-8") as f:
      previous = json.load(f)
    try:  # refused now, not after the suite's minutes
      check_appendable(previous, identity)
    except ValueError as e:
      parser.error(str(e))
  load_before = round(os.getloadavg()[0], 2)
  command = pytest_command(args.workers, args.extra)
  print(f"running {' '.join(command[1:])} (load {load_before})",
        file=sys.stderr, flush=True)
  with tempfile.TemporaryDirectory() as times:
    cpu_before, start = cpu_times(), time.perf_counter()
    returncode, output = run_streamed(
        command, env=dict(os.environ, CMLM_TEST_TIMES=times))
    seconds = time.perf_counter() - start
    cpu_busy = busy_share(cpu_before, cpu_times())
    per_worker = worker_times(times)
    if args.times:
      with open(args.times, "w", encoding="utf-8") as out:
        out.writelines(json.dumps(test) + "\n" for test in read_times(times))
  if args.log:
    with open(args.log, "w", encoding="utf-8") as f:
      f.write(output)
  if not counts(output):  # a usage error, no test collected: no figure
    print(f"pytest ran no test (exit status {returncode}); {results} "
          "is left as it was.", file=sys.stderr)
    return returncode or 1
  load = (f"{load_before} at the start, {round(os.getloadavg()[0], 2)} at "
          "the end")
  result = {
      "command": unit_provenance.without_local_paths(
          " ".join(["python", "benchmarks/test_suite_time.py"]
                   + (argv if argv is not None else sys.argv[1:])),
          ("log", "results", "times")),
      **identity,
      "date": time.strftime("%Y-%m-%d", time.gmtime()),
      "load": load, "quiet": load_before < QUIET_LOAD,
      "runs": [dict({"command": "make test", "workers": args.workers,
                     "seconds": round(seconds), "exit_status": returncode,
                     "load": load},
                    **counts(output))]}
  result["runs"][0]["slowest"] = slowest(output)
  result["runs"][0].update(per_worker, cpu_busy=cpu_busy)
  result["runs"][0]["tests"] = sum(
      result["runs"][0].get(k, 0) for k in ("passed", "failed", "skipped",
                                             "error"))
  if previous is not None:
    result = appended(previous, result)
  tmp = results + f".tmp-{os.getpid()}"
  with open(tmp, "w", encoding="utf-8") as f:
    json.dump(result, f, indent=1)
    f.write("\n")
  os.replace(tmp, results)
  print(f"{round(seconds)} s, exit status {returncode}; wrote "
        f"{results}", file=sys.stderr)
  for page in render_pages(results):
    print(f"rewrote {page} from its results files", file=sys.stderr)
  return returncode


if __name__ == "__main__":
  sys.exit(main())
