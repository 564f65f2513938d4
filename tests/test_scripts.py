"""Every shipped script starts: the benchmarks, the experiments' scripts and
each project's evidence script answer `--help` (their imports, in their own
order, and their flags: tests/scripts_help.py), and the training-step benchmark that `make bench`
runs goes through on a tiny config. A script that breaks at import (e.g.
TensorFlow imported before `cmlm` chose Keras 2) fails here, not in a
user's hands."""
import glob
import json
import os
import re
import subprocess
import sys
import time
import types

import pytest

from tests import helpers

REPO_ROOT = helpers.REPO_ROOT
def scripts():
  """The scripts a user runs: `benchmarks/*.py`, the modules of
  `experiments/` that run as `__main__`, and each project's scripts."""
  paths = (glob.glob(os.path.join(REPO_ROOT, "benchmarks", "*.py")) +
           glob.glob(os.path.join(REPO_ROOT, "experiments", "*.py")) +
           glob.glob(os.path.join(REPO_ROOT, "projects", "*", "*.py")))
  found = []
  for path in sorted(paths):
    with open(path, encoding="utf-8") as f:
      if 'if __name__ == "__main__":' in f.read():
        found.append(os.path.relpath(path, REPO_ROOT))
  return found


def _environment():
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  env.pop("TF_USE_LEGACY_KERAS", None)  # as a user's shell: unset
  return env


def test_the_scripts_are_found():
  found = scripts()
  assert os.path.join("benchmarks", "train_step.py") in found
  assert os.path.join("experiments", "cmlm_vs_mlm.py") in found
  for path in glob.glob(os.path.join(REPO_ROOT, "projects", "*",
                                     "evidence.py")):
    assert os.path.relpath(path, REPO_ROOT) in found


@pytest.mark.slow
def test_every_script_answers_help():
  """Each script's `--help` as `__main__`, one after another in one fresh
  interpreter (tests/scripts_help.py), TensorFlow loaded once: each exits 0
  with its usage, and none imports anything that loads TensorFlow before
  `cmlm`, read from the imports each one runs."""
  completed = subprocess.run(
      [sys.executable, os.path.join("tests", "scripts_help.py"), *scripts()],
      cwd=REPO_ROOT, env=_environment(), capture_output=True, text=True,
      timeout=600)
  assert completed.returncode == 0, completed.stderr[-3000:]
  ran = [json.loads(line) for line in completed.stdout.splitlines()
         if line.startswith("{")]
  assert [r["script"] for r in ran] == scripts(), completed.stderr[-3000:]
  failed = [f"{r['script']}: status {r['status']}\n{r['output']}"
            for r in ran if r["status"] != 0 or not r["usage"]]
  failed += [f"{r['script']} imports {r['loads_tensorflow_first']} before "
             "cmlm: TensorFlow would load with Keras 3"
             for r in ran if r["loads_tensorflow_first"]]
  assert not failed, "\n\n".join(failed)


def test_the_help_runner_finds_tensorflow_loaded_before_cmlm(tmp_path,
                                                              monkeypatch):
  """tests/scripts_help.py's order check, on scripts run here (TensorFlow
  long loaded): a script importing TensorFlow, or a helper of its folder
  that does, before `cmlm` is named; one importing `cmlm` first, or no
  TensorFlow at all, is not; a failing script's status and output come
  back, and its folder's helper is gone from `sys.modules` after."""
  from tests import scripts_help  # pylint: disable=g-import-not-at-top
  usage = ("import argparse\n"
           "argparse.ArgumentParser(prog='x').parse_args()\n")
  (tmp_path / "helper_first.py").write_text("import tensorflow_hub\n")
  cases = {
      "tf_first.py": "import tensorflow as tf\nimport cmlm\n",
      "helper.py": "import helper_first\nimport cmlm\n",
      "cmlm_first.py": "import cmlm\nimport tensorflow as tf\n",
      "no_tf.py": "import json\n",
      "broken.py": "raise RuntimeError('at import')\n"}
  ran = {}
  for name, code in cases.items():
    (tmp_path / name).write_text(code + usage)
    ran[name] = scripts_help.run_help(str(tmp_path / name))
  assert ran["tf_first.py"]["loads_tensorflow_first"] == "tensorflow"
  assert ran["helper.py"]["loads_tensorflow_first"] == "tensorflow_hub"
  assert ran["cmlm_first.py"]["loads_tensorflow_first"] is None
  assert ran["no_tf.py"]["loads_tensorflow_first"] is None
  assert all(ran[name]["status"] == 0 and ran[name]["usage"]
             for name in ("tf_first.py", "cmlm_first.py", "no_tf.py"))
  assert ran["broken.py"]["status"] == 1
  assert "RuntimeError: at import" in ran["broken.py"]["output"]
  assert "helper_first" not in sys.modules
  # What goes after a script: the repository's modules, never a library's,
  # even from an environment inside the checkout (make's .venv).
  import numpy  # pylint: disable=g-import-not-at-top
  assert not scripts_help._put_back("numpy", numpy, REPO_ROOT)  # pylint: disable=protected-access
  assert scripts_help._put_back("tests.helpers", helpers, REPO_ROOT)  # pylint: disable=protected-access
  assert not scripts_help._put_back("cmlm.demo", helpers, REPO_ROOT)  # pylint: disable=protected-access


@pytest.mark.slow
def test_the_train_step_benchmark_runs_on_a_tiny_config():
  """`make bench`'s script, two steps of each: its JSON line is whole and
  its figures are positive (never a time asserted)."""
  completed = subprocess.run(
      [sys.executable, "benchmarks/train_step.py", "--experiment=cmlm/tiny",
       "--batch_size=2", "--steps=2", "--pipeline_batches=2"],
      cwd=REPO_ROOT, env=_environment(), capture_output=True, text=True,
      timeout=600)
  assert completed.returncode == 0, completed.stderr[-3000:]
  figures = json.loads(completed.stdout.strip().splitlines()[-1])
  assert figures["cmlm_step_s"] > 0 and figures["mlm_step_s"] > 0
  assert figures["pipeline_examples_per_s"] > 0


def _benchmark(name):
  """benchmarks/`name`.py, loaded as a module."""
  import importlib.util  # pylint: disable=g-import-not-at-top
  path = os.path.join(REPO_ROOT, "benchmarks", f"{name}.py")
  spec = importlib.util.spec_from_file_location(name, path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def _suite_timer():
  return _benchmark("test_suite_time")


def test_the_suite_timer_runs_the_makefile_s_test_command():
  """What benchmarks/test_suite_time.py times is `make test`'s pytest
  command as the Makefile holds it, with the workers asked for."""
  command = _suite_timer().pytest_command(3, ["-x"])
  assert command[:3] == [sys.executable, "-m", "pytest"]
  assert command[-1] == "-x"
  assert command[command.index("-n") + 1] == "3"
  for flag in ("--dist", "loadfile", "--no-loadscope-reorder",
               "--durations=30"):
    assert flag in command


def test_the_suite_timer_sums_each_worker_s_tests_and_files(tmp_path):
  """Each worker's busy seconds and when it finished, from conftest.py's
  record of the tests' starts and ends; the files by their seconds."""
  def write(worker, *tests):
    (tmp_path / f"{worker}.jsonl").write_text("".join(
        json.dumps({"test": name, "start": start, "end": end, "cpu_s": 1.0,
                    "subprocess_cpu_s": 0.5}) + "\n"
        for name, start, end in tests))
  write("gw0", ("a.py::x", 100.0, 110.0), ("b.py::y", 111.0, 112.5))
  write("gw1", ("c.py::z", 100.5, 130.0), ("a.py::w", 130.0, 131.0))
  figures = _suite_timer().worker_times(str(tmp_path), top=2)
  assert figures["workers"] == {
      "gw0": {"busy_s": 11.5, "finished_at_s": 12.5, "cpu_s": 2.0,
              "subprocess_cpu_s": 1.0},
      "gw1": {"busy_s": 30.5, "finished_at_s": 31.0, "cpu_s": 2.0,
              "subprocess_cpu_s": 1.0}}
  assert figures["slowest_files"] == [{"file": "c.py", "seconds": 29.5},
                                      {"file": "a.py", "seconds": 11.0}]


def test_the_suite_timer_s_cpu_share_is_busy_over_all_time():
  """(busy, total) jiffies: the share busy between two readings."""
  timer = _suite_timer()
  assert timer.busy_share((100, 400), (250, 600)) == 0.75
  assert timer.busy_share(None, (1, 2)) is None
  busy, total = timer.cpu_times()
  assert 0 <= busy <= total


def test_conftest_records_each_test_of_a_worker(tmp_path, monkeypatch):
  """conftest.py's hook around each test: in a pytest-xdist worker, with
  CMLM_TEST_TIMES set, the test's start and end go to the worker's file,
  which the suite timer reads; outside a worker, nothing is written."""
  import conftest  # pylint: disable=g-import-not-at-top
  monkeypatch.setattr(conftest, "_TEST_TIMES", str(tmp_path))

  def run(nodeid, **config):
    item = types.SimpleNamespace(nodeid=nodeid,
                                 config=types.SimpleNamespace(**config))
    hook = conftest.pytest_runtest_protocol(item, None)
    next(hook)
    time.sleep(0.1)  # the test
    with pytest.raises(StopIteration):
      next(hook)
  run("tests/a.py::one", workerinput={"workerid": "gw1"})
  run("tests/a.py::two")  # not a worker: pytest without -n
  with open(tmp_path / "gw1.jsonl", encoding="utf-8") as f:
    (recorded,) = [json.loads(line) for line in f]
  # A sleeping test spends (almost) no CPU in the worker or a subprocess.
  assert 0 <= recorded["cpu_s"] < recorded["end"] - recorded["start"]
  assert recorded["subprocess_cpu_s"] == 0
  figures = _suite_timer().worker_times(str(tmp_path))
  assert list(figures["workers"]) == ["gw1"]
  assert figures["workers"]["gw1"]["busy_s"] >= 0.1
  assert figures["slowest_files"] == [
      {"file": "tests/a.py", "seconds": figures["workers"]["gw1"]["busy_s"]}]


def test_the_suite_timer_reads_pytest_s_counts_and_slowest_tests():
  """benchmarks/test_suite_time.py's parsers on pytest's own output."""
  timer = _suite_timer()
  output = ("=== slowest 30 durations ===\n"
            "192.69s call     tests/a.py::test_one\n"
            "73.68s setup    tests/b.py::test_two[tflite]\n"
            "0.54s teardown tests/c.py::test_three\n"
            "=== 2 failed, 1066 passed, 1 skipped in 2003.49s (0:33:23) ===\n")
  assert timer.counts(output) == {"failed": 2, "passed": 1066, "skipped": 1}
  assert timer.counts("=== 3 failed in 9.10s ===\n") == {"failed": 3}
  assert timer.counts("=== no tests ran in 0.01s ===\n") == {}
  assert timer.slowest(output) == [
      {"seconds": 192.69, "phase": "call", "test": "tests/a.py::test_one"},
      {"seconds": 73.68, "phase": "setup",
       "test": "tests/b.py::test_two[tflite]"},
      {"seconds": 0.54, "phase": "teardown", "test": "tests/c.py::test_three"}]


def test_the_suite_timer_names_its_results_file_by_the_cpu():
  """One results file per CPU family, named from /proc/cpuinfo's model."""
  name = _suite_timer().cpu_name
  assert name("Intel(R) Xeon(R) Processor") == "intel_xeon"
  assert name("AMD EPYC") == name("AMD EPYC 7B13") == "amd_epyc"
  assert name("") == "unknown"
  results = _suite_timer().results_name
  assert results("AMD EPYC", ["avx2", "avx512f", "avx512_vnni"]) == (
      "test_suite_amd_epyc.json")
  # A Zen 3 (AVX2 only) reports the model name of a Zen 4: kept apart.
  assert results("AMD EPYC", ["avx2"]) == "test_suite_amd_epyc_avx2.json"
  assert results("Intel(R) Xeon(R) Processor", []) == (
      "test_suite_intel_xeon_no_avx2.json")


def test_the_suite_timer_appends_only_runs_of_one_commit_and_cpu(
    tmp_path, capsys):
  """`--append` adds a run after the file's runs (each its load, the file
  quiet only when every run was); a file of another commit or CPU is
  refused in one sentence before the suite runs."""
  timer = _suite_timer()
  def result(commit, cpu, seconds, quiet):
    return {"commit": commit, "code_modified": [], "cpu": cpu,
            "cpu_flags": ["avx2"], "cores": 2, "date": "2026-11-27",
            "quiet": quiet, "load": "x",
            "runs": [{"seconds": seconds, "load": f"{seconds} load"}]}
  first = result("abc", "AMD EPYC", 800, True)
  merged = timer.appended(first, dict(result("abc", "AMD EPYC", 810, False),
                                      date="2026-11-28"))
  assert [run["seconds"] for run in merged["runs"]] == [800, 810]
  assert merged["load"] == "800 load (run 1); 810 load (run 2)"
  assert merged["quiet"] is False and merged["date"] == "2026-11-28"
  assert first["runs"] == [{"seconds": 800, "load": "800 load"}]
  for other in (result("def", "AMD EPYC", 1, True),
                result("abc", "Intel(R) Xeon(R) Processor", 1, True)):
    with pytest.raises(ValueError, match="--append adds runs of one commit"):
      timer.appended(first, other)
  results = tmp_path / "suite.json"
  cpu = timer.unit_provenance.cpu_model()
  results.write_text(json.dumps(result("not-this-commit", cpu, 1, True)))
  with pytest.raises(SystemExit) as exit_info:
    timer.main(["--append", f"--results={results}"])
  assert exit_info.value.code == 2
  assert "results file's commit is 'not-this-commit'" in capsys.readouterr().err


def test_the_suite_timer_refuses_a_python_without_xdist_and_keeps_a_results_file_of_no_test(
    tmp_path, monkeypatch, capsys):
  """Two workers need pytest-xdist: a Python without it is refused in one
  sentence before anything runs; a pytest that ran no test (here a usage
  error) leaves the results file as it was, and says so."""
  timer = _suite_timer()
  results = tmp_path / "suite.json"
  results.write_text("{}")
  assert timer.check_workers(2) is None  # this environment has it
  monkeypatch.setattr(timer.importlib.util, "find_spec", lambda name: None)
  timer.check_workers(1)  # one worker runs without it
  with pytest.raises(SystemExit) as exit_info:
    timer.main(["--workers=2", f"--results={results}"])
  assert exit_info.value.code == 2
  assert "--workers=2 needs pytest-xdist" in capsys.readouterr().err
  monkeypatch.undo()
  with pytest.raises(SystemExit):
    timer.main(["--workers=0", f"--results={results}"])
  status = timer.main(["--workers=1", f"--results={results}", "--",
                       "--no-such-option"])
  assert status == 4  # pytest's usage error
  err = capsys.readouterr().err
  # pytest's own output passed on as it came, then the timer's line.
  assert "unrecognized arguments: --no-such-option" in err
  assert err.index("unrecognized arguments") < err.index(
      "pytest ran no test (exit status 4)")
  assert results.read_text() == "{}"


def test_the_suite_timer_renders_the_pages_of_a_results_file_it_wrote_in_docs(
    tmp_path):
  """A results file written under the tree's docs/results/ is followed by
  the pages' rendering, so that BUILD.md shows it (and a second run of the
  same tree passes the docs' test); a file elsewhere renders nothing."""
  timer = _suite_timer()
  (tmp_path / "README.md").write_text("# A page without figures\n")
  block = ("<!-- figures:test_suite docs/results/test_suite_x.json -->\n"
           "stale\n<!-- /figures -->\n")
  (tmp_path / "BUILD.md").write_text("# Build\n\n" + block)
  (tmp_path / "docs" / "results").mkdir(parents=True)
  results = tmp_path / "docs" / "results" / "test_suite_x.json"
  results.write_text(json.dumps({
      "command": "python benchmarks/test_suite_time.py", "commit": "abc",
      "code_modified": [], "cpu": "AMD EPYC", "cpu_flags": ["avx2"],
      "cores": 2, "date": "2026-11-29", "load": "0.1 at the start",
      "quiet": True, "runs": [{"command": "make test", "passed": 3,
                               "tests": 3, "exit_status": 0, "seconds": 61,
                               "load": "0.1 at the start"}]}))
  elsewhere = tmp_path / "suite.json"
  elsewhere.write_text(results.read_text())
  assert timer.render_pages(str(elsewhere), root=str(tmp_path)) == []
  assert "stale" in (tmp_path / "BUILD.md").read_text()
  assert timer.render_pages(str(results), root=str(tmp_path)) == ["BUILD.md"]
  page = (tmp_path / "BUILD.md").read_text()
  assert "stale" not in page and "| 1 min 1 s |" in page
  assert timer.render_pages(str(results), root=str(tmp_path)) == []


def test_the_demo_timer_compares_the_figures_with_the_seed_s_file():
  """benchmarks/demo_time.py: a figure that moves (a number, an interval's
  end) is listed, the minutes never; the seed's committed file is compared
  only for its own seed and step count."""
  timer = _benchmark("demo_time")
  path, committed = timer.compared_seed_file({"seed": 0, "train_steps": 2000})
  assert path == "docs/results/demo/seed0.json"
  figures = json.loads(json.dumps(committed))
  figures["train_minutes"] += 5
  assert timer.differing_figures(figures, committed) == []
  figures["stsb_dev_trained"] *= 1 + 1e-7  # within a relative 1e-6
  assert timer.differing_figures(figures, committed) == []
  figures["stsb_dev_trained"] *= 1 + 1e-4
  figures["retrieval_mrr_gain_ci95"][1] += 1e-3
  del figures["heldout_pairs"]
  assert timer.differing_figures(figures, committed) == [
      "heldout_pairs", "retrieval_mrr_gain_ci95", "stsb_dev_trained"]
  assert timer.compared_seed_file({"seed": 0, "train_steps": 20}) == (None,
                                                                      None)
  assert timer.compared_seed_file({"seed": 99, "train_steps": 2000}) == (
      None, None)


def test_the_demo_timer_writes_its_file_only_from_a_demo_that_ended(
    tmp_path, monkeypatch, capsys):
  """A failed demo, or one whose last line is not its JSON figures, leaves
  no results file and exits non-zero in one line; a finished one writes
  the machine, the load, the wall time and the figures, its output path
  not named in the command; a bad --seed is refused before anything runs."""
  timer = _benchmark("demo_time")
  output = tmp_path / "time.json"
  figures = {"seed": 3, "train_steps": 20, "train_minutes": 0.1,
             "stsb_dev_trained": 40.0}
  for status, out, said in (
      (1, "Traceback ...\n", "the demo exited with status 1"),
      (0, "trained\nnot json\n", "last line is not its JSON figures")):
    monkeypatch.setattr(timer, "run_streamed", lambda command, s=status,
                        o=out: (s, o))
    assert timer.main(["--seed=3", f"--output={output}"]) == 1
    assert said in capsys.readouterr().err and not output.exists()
  commands = []
  monkeypatch.setattr(timer, "run_streamed", lambda command: (
      commands.append(command) or (0, "steps\n" + json.dumps(figures))))
  assert timer.main(["--seed=3", "--train_steps=20",
                     f"--output={output}"]) == 0
  assert commands[0][1:4] == ["-m", "cmlm", "demo"]
  assert commands[0][-2:] == ["--seed=3", "--train_steps=20"]
  result = json.loads(output.read_text())
  assert result["command"] == ("python benchmarks/demo_time.py --seed=3 "
                               "--train_steps=20 --output=OUTPUT")
  assert result["figures"] == figures and result["seed"] == 3
  assert result["figures_compared_with"] is None  # no seed3.json
  assert result["quiet"] == (result["load_1min_before"] < 0.5)
  assert {"commit", "cpu", "cpu_flags", "cores", "date", "load",
          "wall_seconds"} <= set(result)
  with pytest.raises(SystemExit) as exit_info:
    timer.main(["--seed=-1"])
  assert exit_info.value.code == 2
  assert "--seed must be 0 or more" in capsys.readouterr().err


def test_the_recipe_cost_times_each_loop_but_the_first(capfd):
  """benchmarks/recipe_cost.py reads `train`'s progress lines as they come:
  the first loop (tracing) is left out, each other loop's seconds per step
  is kept and said on stderr; a failed or too short run is an error."""
  cost = _benchmark("recipe_cost")
  train = ("import sys, time\n"
           "for step in (10, 20, 30):\n"
           "  print(f'step {step}/30 (1%) | loss 7.1', flush=True)\n"
           "  time.sleep(0.3)\n"
           "sys.exit(int(sys.argv[1]))\n")
  per_step = cost.seconds_per_step(["python", "-c", train, "0"])
  assert len(per_step) == 2 and min(per_step) >= 0.025  # 0.3 s / 10 steps
  err = capfd.readouterr().err
  assert "step 10/30: the first loop, not timed" in err
  assert re.search(r"step 30/30: \d+\.\d{3} s/step", err)
  with pytest.raises(SystemExit, match="train failed with status 3"):
    cost.seconds_per_step(["python", "-c", train, "3"])
  with pytest.raises(SystemExit, match="Too few loops to time"):
    cost.seconds_per_step(["python", "-c", "print('step 10/10 (100%)')"])
