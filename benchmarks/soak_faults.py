"""A soak under faults: train / export --overwrite / encode / eval / import /
fetch / mine, in cycles, each process at risk of SIGKILL or SIGTERM, on a disk that
fills and empties.

    python benchmarks/soak_faults.py [--minutes=30] [--cycles=N] [--seed=0]
        [--kill_probability=0.5] [--workdir=DIR] [--no_disk_faults]
        [--commands=train,export,...] [--results=FILE]

Every cycle runs, as the command line (`python -m cmlm ...`), each in its own
process: `train` of a tiny cmlm/tiny run 2 steps further, `export
--overwrite` of its latest checkpoint, `encode` of 200 sentences with the
export, `eval` (an STS-B style file) of the export, `import --overwrite` of
the export as a run, and `fetch` of two benchmarks (TREC, STS-B) from a
slow mirror on 127.0.0.1 (`soak_environment.py`) into one `--data_dir`, whose
published folders are removed before each cycle's fetch (its hidden
temporaries are not: the next fetch must clear or resume them), and `mine`
of the 200 sentences against themselves reversed with the export. The
commands are `COMMANDS`: one more is a line there and a `Soak.argv_NAME`
method. Each process is, with
`--kill_probability`, sent SIGKILL or SIGTERM (even odds) after a random
time within what that command took when left alone. Where this process may
mount a tmpfs (root on Linux), the work directory is a 256 MB tmpfs that a
thread fills to the last byte now and then and empties a few seconds later:
real "No space left on device" for whichever writer is at work; elsewhere
there are no disk faults (`disk_faults` says so).

At the end, with no faults: `train` once more (the run must resume and
reach its step), then each command but `eval` once; every export version
still published must load and give the embeddings of the checkpoint it
names (read from the run), the imported run must load and give the
export's embeddings, the fetched files must be the mirror's, the mined
pairs must be well formed, and no
temporary file (of a save, an export, an encode, an import, a fetch: a
`.part` or a staging folder) nor a lock file may remain. Prints the
counts as one JSON object: cycles, processes, how each ended (ok, SIGKILL,
SIGTERM, refused with one line, and the refusals by kind), disk fills,
recoveries (checkpoints moved
aside, leftovers of a killed save or export removed), and `lost`: whatever
did not hold (a traceback, an unexpected status, an export that does not
load or differs from its checkpoint, a run that does not resume, a
temporary file left). Its figures are counts, not times; it asserts nothing.
With `--results`, writes them with the command, commit, CPU model, ISA
flags, cores, date and load (`experiments/unit_provenance.py`).

A line on stderr after each cycle says how far it is and how the processes
ended so far (the JSON object is the last thing printed).
"""
import argparse
import contextlib
import dataclasses
import datetime
import importlib.util
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import soak_environment  # noqa: E402  (this folder; standard library only)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# cmlm/tiny at the tests' size: a run of a few steps takes seconds.
TINY = {
    "task": {"model": {"encoder": {"hidden_size": 16, "num_layers": 1,
                                   "num_attention_heads": 2,
                                   "intermediate_size": 32}},
             "tokenization": {"seq_length": 16},
             "objectives": {"cmlm": {"train_data": {
                 "global_batch_size": 4, "max_predictions_per_seq": 5}}}},
    "trainer": {"steps_per_loop": 1, "checkpoint_interval": 1,
                "summary_interval": 1, "max_to_keep": 6}}
STEPS_PER_CYCLE = 2


@dataclasses.dataclass(frozen=True)
class SoakCommand:
  """A command of the cycle: `Soak.argv_<name>` gives its arguments."""
  final: bool = True  # runs once more, without faults, before the checks


# The commands of a cycle, in this order. A new one (e.g. `cluster`) is a
# line here, a method `Soak.argv_cluster(self, cycle)` returning its arguments after
# `python -m cmlm`, and, for a check of what it wrote, a few lines in
# `final_checks`.
COMMANDS = {
    "train": SoakCommand(),
    "export": SoakCommand(),
    "encode": SoakCommand(),
    "eval": SoakCommand(final=False),
    "import": SoakCommand(),
    "fetch": SoakCommand(),
    "mine": SoakCommand(),
}
# What a save, an export, an encode, an import or a fetch writes under a
# temporary name, and the lock files of the writers.
TEMPORARY = re.compile(r"(^|/)(\.tmp-|\.old-|[^/]*_temp$|[^/]*\.tempstate|"
                       r"checkpoint\.tmp|[^/]*\.manifest\.json\.tmp|"
                       r"\.cmlm-[a-z]+\.lock$)")


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--minutes", type=float, default=30.0)
  parser.add_argument("--cycles", type=int, default=0,
                      help="stop after this many cycles (0: --minutes)")
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--kill_probability", type=float, default=0.5)
  parser.add_argument("--workdir", default="",
                      help="kept when given (default: a temporary one)")
  parser.add_argument("--no_disk_faults", action="store_true")
  parser.add_argument("--commands", default=",".join(COMMANDS),
                      help="the commands of a cycle, in order (a subset of "
                      f"{','.join(COMMANDS)})")
  parser.add_argument("--results", default="",
                      help="write the counts with their provenance here")
  args = parser.parse_args(argv)
  unknown = set(args.commands.split(",")) - set(COMMANDS)
  if unknown:
    parser.error(f"--commands: unknown {', '.join(sorted(unknown))}; known: "
                 f"{', '.join(COMMANDS)}")
  args.commands = [name for name in COMMANDS
                   if name in args.commands.split(",")]
  if "train" not in args.commands:
    parser.error("--commands must hold train")
  return args


class Soak:
  """The cycles and their counts."""

  def __init__(self, args, root: str):
    self.args, self.root = args, root
    self.rng = random.Random(args.seed)
    self.run_dir = os.path.join(root, "run")
    self.export_dir = os.path.join(root, "export")
    self.imported_dir = os.path.join(root, "imported")
    self.data_dir = os.path.join(root, "benchmarks")
    self.mirror = None  # soak_environment.MirrorServer, while the soak runs
    self.out_dir = os.path.join(root, "out")
    os.makedirs(self.out_dir, exist_ok=True)
    self.inputs = os.path.join(root, "inputs")
    os.makedirs(self.inputs, exist_ok=True)
    self._write_inputs()
    self.typical = {}  # command -> seconds it took when left alone
    self.counts = dict(cycles=0, processes=0, ok=0, sigkill=0, sigterm=0,
                       stopped_cleanly=0, refused_one_line=0,
                       checkpoints_moved_aside=0, save_leftovers_removed=0,
                       export_leftovers_removed=0, by_command={},
                       refusals={})
    self.lost = []

  def _write_inputs(self):
    import yaml  # pylint: disable=g-import-not-at-top
    self.config = os.path.join(self.inputs, "tiny.yaml")
    with open(self.config, "w") as f:
      yaml.safe_dump(TINY, f)
    corpus = os.path.join(REPO, "data", "corpus_en")
    sentences = []
    for name in sorted(os.listdir(corpus)):
      if name.endswith(".txt") and name != "SOURCE.txt" and len(
          sentences) < 400:
        with open(os.path.join(corpus, name), encoding="utf-8") as f:
          sentences += [line.strip() for line in f if len(line.strip()) > 20]
    sentences = sentences[:400]
    self.sentences = os.path.join(self.inputs, "sentences.txt")
    with open(self.sentences, "w", encoding="utf-8") as f:
      f.write("\n".join(sentences[:200]) + "\n")
    # mine's target side: the same sentences in reverse order.
    self.reversed_sentences = os.path.join(self.inputs, "reversed.txt")
    with open(self.reversed_sentences, "w", encoding="utf-8") as f:
      f.write("\n".join(sentences[:200][::-1]) + "\n")
    self.sts = os.path.join(self.inputs, "sts-dev.csv")
    with open(self.sts, "w", encoding="utf-8") as f:
      for i in range(100):
        f.write(f"main\tsoak\t2024\t{i:04d}\t{i % 6}.0\t{sentences[2 * i]}\t"
                f"{sentences[2 * i + 1]}\n")
    self.mirror_folders = soak_environment.write_mirror(
        os.path.join(self.inputs, "mirror"), sentences)

  def argv_train(self, cycle: int):
    steps = STEPS_PER_CYCLE * (cycle + 1)
    return ["train", "--experiment=cmlm/tiny", f"--config_file={self.config}",
            f"--params_override=trainer.train_steps={steps}",
            f"--model_dir={self.run_dir}"]

  def argv_export(self, cycle: int):
    del cycle
    return ["export", f"--model_dir={self.run_dir}",
            f"--export_dir={self.export_dir}", "--overwrite"]

  def argv_encode(self, cycle: int):
    del cycle
    return ["encode", f"--model={self.export_dir}",
            f"--input={self.sentences}",
            f"--output={self.out_dir}/embeddings.npy", "--overwrite"]

  def argv_eval(self, cycle: int):
    del cycle
    return ["eval", f"--model={self.export_dir}", "--tasks=sts-b",
            f"--task_data=sts-b={self.sts}",
            f"--report_dir={self.out_dir}/report"]

  def argv_import(self, cycle: int):
    del cycle
    return ["import", f"--source={self.export_dir}",
            f"--model_dir={self.imported_dir}", "--overwrite"]

  def argv_fetch(self, cycle: int):
    """Fetches again what the cycle before published: its folders and
    record are removed first, its hidden temporaries kept."""
    del cycle
    for name in ("transfer", "sts", "checksums.json"):
      path = os.path.join(self.data_dir, name)
      if os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)
      elif os.path.exists(path):
        os.remove(path)
    urls = ",".join(f"{name}={self.mirror.url(name)}"
                    for name in soak_environment.BENCHMARKS)
    return ["fetch", f"--benchmarks={','.join(soak_environment.BENCHMARKS)}",
            f"--data_dir={self.data_dir}", f"--source_url={urls}",
            "--noprogress"]

  def argv_mine(self, cycle: int):
    """The sentences mined against themselves reversed, with the export."""
    del cycle
    return ["mine", f"--model={self.export_dir}", f"--source={self.sentences}",
            f"--target={self.reversed_sentences}",
            f"--output={self.out_dir}/pairs.tsv", "--overwrite",
            "--noprogress"]

  def mined_pairs(self) -> dict:
    """What the last `mine` wrote: its pairs, and how many pair a
    sentence with itself (the target side is the source reversed)."""
    path = os.path.join(self.out_dir, "pairs.tsv")
    if not os.path.isfile(path):
      return {"pairs": 0, "identical": 0, "malformed": 0}
    with open(path, encoding="utf-8") as f:
      rows = [line.rstrip("\n").split("\t") for line in f]
    wellformed = [row for row in rows if len(row) == 3]
    return {"pairs": len(rows), "malformed": len(rows) - len(wellformed),
            "identical": sum(row[1] == row[2] for row in wellformed)}

  def run(self, name: str, cycle: int, faults: bool = True) -> int:
    """Runs one command, maybe killing it; counts how it ended."""
    argv = ([sys.executable, "-m", "cmlm"] +
            getattr(self, f"argv_{name}")(cycle))
    signum = None
    if faults and self.rng.random() < self.args.kill_probability:
      signum = self.rng.choice([signal.SIGKILL, signal.SIGTERM])
      delay = self.rng.uniform(0, self.typical.get(name, 15.0))
    start = time.time()
    process = subprocess.Popen(
        argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    timer = None
    if signum is not None:
      timer = threading.Timer(delay, _send, (process, signum))
      timer.start()
    output, errors = process.communicate(timeout=900)
    if timer:
      timer.cancel()
    seconds = time.time() - start
    status = process.returncode
    self._count(name, status, output, errors)
    if status == 0 and (name not in self.typical or signum is None):
      self.typical[name] = seconds
    return status

  def _count(self, name, status, output, errors):
    counts = self.counts
    counts["processes"] += 1
    by = counts["by_command"].setdefault(name, {})
    by[str(status)] = by.get(str(status), 0) + 1
    text = output + errors
    counts["checkpoints_moved_aside"] += len(re.findall(
        r"^Moved the damaged checkpoint", text, re.M))
    counts["export_leftovers_removed"] += len(re.findall(
        r"left by an interrupted export", text))
    counts["save_leftovers_removed"] += len(re.findall(
        r"left by an interrupted checkpoint save", text))
    own = [line for line in errors.splitlines()
           if line.startswith(f"cmlm {name}:")]
    if status == 0:
      counts["ok"] += 1
    elif status == -signal.SIGKILL:
      counts["sigkill"] += 1
    elif status in (-signal.SIGTERM, 143):
      counts["sigterm"] += 1
      if status == 143:
        counts["stopped_cleanly"] += 1
    elif status == 2 and len(own) == 1 and "Traceback" not in errors:
      counts["refused_one_line"] += 1
      # What was refused, without its paths and numbers.
      kind = re.sub(r"(/[^\s:;,()']+)+|\d+", "_", own[0].split(
          "error: ", 1)[-1])[:90]
      counts["refusals"][kind] = counts["refusals"].get(kind, 0) + 1
    else:
      self.lost.append(dict(command=name, status=status,
                            tail=errors.strip().splitlines()[-3:]))
    if "Traceback" in errors and status not in (-signal.SIGKILL,):
      self.lost.append(dict(command=name, status=status, traceback=True,
                            tail=errors.strip().splitlines()[-3:]))

  def temporary_files(self):
    """Every temporary or lock file the writers left in the work
    directory (the soak's inputs aside)."""
    found = []
    for root, dirs, names in os.walk(self.root):
      if root == self.root and "inputs" in dirs:
        dirs.remove("inputs")
      for name in dirs + names:
        relative = os.path.relpath(os.path.join(root, name), self.root)
        if TEMPORARY.search(relative):
          found.append(relative)
    return sorted(found)

  def fetched_as_mirrored(self) -> dict:
    """{file: "equal" | "differs" | "missing"}: each mirror file as fetch
    placed it (TREC's files as they are, STS-B's archive members)."""
    import tarfile  # pylint: disable=g-import-not-at-top
    verdicts = {}
    expected = {}
    trec = self.mirror_folders["trec"]
    for name in os.listdir(trec):
      with open(os.path.join(trec, name), "rb") as f:
        expected[f"transfer/TREC/{name}"] = f.read()
    with tarfile.open(os.path.join(self.mirror_folders["sts-b"],
                                   "Stsbenchmark.tar.gz")) as archive:
      for member in archive.getmembers():
        expected["sts/STSBenchmark/" + os.path.basename(member.name)] = (
            archive.extractfile(member).read())
    for relative, data in sorted(expected.items()):
      path = os.path.join(self.data_dir, relative)
      if not os.path.isfile(path):
        verdicts[relative] = "missing"
        continue
      with open(path, "rb") as f:
        verdicts[relative] = "equal" if f.read() == data else "differs"
    return verdicts

  def verify(self):
    """Every published version loads and equals its checkpoint: checked in
    this process when it has TensorFlow already (a test), else in a fresh
    one (`--verify_exports`)."""
    imported = (self.imported_dir if "import" in self.args.commands
                else "")
    if "tensorflow" in sys.modules:
      return verify_exports(self.run_dir, self.export_dir, self.sentences,
                            imported)
    completed = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--verify_exports",
         self.run_dir, self.export_dir, self.sentences, imported], cwd=REPO,
        capture_output=True, text=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), timeout=900)
    if completed.returncode != 0:
      self.lost.append(dict(check="exports", status=completed.returncode,
                            tail=completed.stderr.strip().splitlines()[-3:]))
      return {}
    return json.loads(completed.stdout.strip().splitlines()[-1])


def verify_exports(run_dir: str, export_dir: str, sentences_file: str,
                   imported_dir: str = "") -> dict:
  """{version: "equal" | "differs" | "does not load: ..." | "checkpoint
  rotated out"}: each version of `export_dir` against the checkpoint of
  `run_dir` its export_info.json names, on 20 sentences; and, as
  "imported run", `imported_dir` (an import of the export) against the
  export's current version."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  sys.path.insert(0, REPO)
  from cmlm.inference import embedders  # pylint: disable=g-import-not-at-top
  from cmlm.inference import layout  # pylint: disable=g-import-not-at-top
  with open(sentences_file, encoding="utf-8") as f:
    sentences = f.read().split("\n")[:20]
  unit = lambda a: a / np.linalg.norm(a, axis=1, keepdims=True)
  versions = os.path.join(export_dir, "versions")
  results = {}
  for name in sorted(os.listdir(versions)):
    version = os.path.join(versions, name)
    if name.startswith(".") or not os.path.isdir(version):
      continue
    info = layout.read_info(os.path.join(version, "encoder")) or {}
    checkpoint = os.path.join(run_dir, info.get("checkpoint", "?"))
    if not os.path.exists(checkpoint + ".index"):
      results[name] = "checkpoint rotated out"
      continue
    try:
      exported = embedders.load_embedder(version)(sentences)
      trained = embedders.load_embedder(run_dir, checkpoint)(sentences)
    except Exception as error:  # pylint: disable=broad-except
      results[name] = "does not load: " + str(error).splitlines()[0]
      continue
    results[name] = ("equal" if np.allclose(unit(exported), unit(trained),
                                            atol=1e-5) else "differs")
  if imported_dir and os.path.isdir(imported_dir):
    try:
      imported = embedders.load_embedder(imported_dir)(sentences)
      exported = embedders.load_embedder(export_dir)(sentences)
      results["imported run"] = (
          "equal" if np.allclose(unit(imported), unit(exported), atol=1e-5)
          else "differs")
    except Exception as error:  # pylint: disable=broad-except
      results["imported run"] = "does not load: " + str(error).splitlines()[0]
  return results


def _send(process, signum):
  with contextlib.suppress(ProcessLookupError):
    process.send_signal(signum)


def provenance(argv, date: str, loads) -> dict:
  """command, commit, CPU model, ISA flags, cores, date and load
  (`experiments/unit_provenance.py`, loaded by its path: this process
  imports no TensorFlow)."""
  path = os.path.join(REPO, "experiments", "unit_provenance.py")
  spec = importlib.util.spec_from_file_location("unit_provenance", path)
  facts = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(facts)
  isa = facts.isa_flags()
  # The command as run, its local paths named DIR and FILE.
  local = {"--workdir": "DIR", "--results": "FILE"}
  argv = [f"{a.split('=')[0]}={local[a.split('=')[0]]}"
          if a.split("=")[0] in local and "=" in a else a for a in argv]
  return {"command": " ".join(["python", "benchmarks/soak_faults.py"] +
                              list(argv)),
          "commit": facts.head_commit(REPO),
          "code_modified": facts.modified_code(REPO),
          "cpu": facts.cpu_model(), "cpu_model": facts.cpu_model(),
          "cpu_flags": [flag for flag, present in isa.items() if present],
          "cores": os.cpu_count(), "date": date,
          "load": f"1-minute load {min(loads):.1f}-{max(loads):.1f} during "
                  "the run"}


def final_checks(soak: Soak, cycle: int) -> dict:
  """With no faults: each command once more, then what each wrote."""
  final = {}
  for name in soak.args.commands:
    if COMMANDS[name].final:
      final[name] = soak.run(name, cycle, faults=False)
      if final[name] != 0:
        soak.lost.append(dict(check=f"{name} without faults",
                              status=final[name]))
  steps = STEPS_PER_CYCLE * (cycle + 1)
  latest = os.path.join(soak.run_dir, f"ckpt-{steps}.index")
  final["train_reached_step"] = os.path.exists(latest)
  if not final["train_reached_step"]:
    soak.lost.append(dict(check="the run resumes to step", steps=steps))
  versions = soak.verify() if os.path.isdir(os.path.join(
      soak.export_dir, "versions")) else {}
  final["exports"] = versions
  for name, verdict in versions.items():
    if verdict not in ("equal", "checkpoint rotated out"):
      soak.lost.append(dict(check="export", version=name, verdict=verdict))
  if "fetch" in soak.args.commands:
    final["fetched"] = soak.fetched_as_mirrored()
    if set(final["fetched"].values()) != {"equal"}:
      soak.lost.append(dict(check="fetched files", files=final["fetched"]))
  if "mine" in soak.args.commands:
    final["mined"] = soak.mined_pairs()
    if not final["mined"]["pairs"] or final["mined"]["malformed"]:
      soak.lost.append(dict(check="mined pairs", mined=final["mined"]))
  leftovers = soak.temporary_files()
  final["temporary_files"] = leftovers
  if leftovers:
    soak.lost.append(dict(check="temporary files", files=leftovers))
  return final


def progress(soak: Soak, seconds: float, args) -> str:
  """One line after each cycle (on stderr; the result is printed last):
  how far, and what the processes ended with so far."""
  c = soak.counts
  of = (f"{c['cycles']} of {args.cycles} cycles" if args.cycles else
        f"cycle {c['cycles']}, {seconds / 60:.1f} of {args.minutes:g} min")
  return (f"{of}: {c['processes']} processes, {c['ok']} ok, "
          f"{c['sigkill']} SIGKILL, {c['sigterm']} SIGTERM, "
          f"{c['refused_one_line']} refused in one line; "
          f"{len(soak.lost)} lost")


def main(argv=None):
  args = parse_args(argv)
  root = args.workdir or tempfile.mkdtemp(prefix="cmlm-soak-")
  os.makedirs(root, exist_ok=True)
  rng = random.Random(args.seed + 1)
  disk = soak_environment.Disk(root, rng, not args.no_disk_faults)
  soak = Soak(args, root)
  date = datetime.datetime.now(datetime.timezone.utc).isoformat(
      timespec="seconds")
  loads = [os.getloadavg()[0]]
  start = time.time()
  deadline = start + 60 * args.minutes
  disk.start()
  try:
    with soak_environment.MirrorServer(os.path.join(soak.inputs, "mirror")) as (
        soak.mirror):
      cycle = 0
      while (cycle < args.cycles if args.cycles else time.time() < deadline):
        for name in args.commands:
          soak.run(name, cycle)
        cycle += 1
        soak.counts["cycles"] = cycle
        loads.append(os.getloadavg()[0])
        print(progress(soak, time.time() - start, args), file=sys.stderr,
              flush=True)
      faulted_s = time.time() - start
      disk.stop()
      print("final checks, without faults ...", file=sys.stderr, flush=True)
      final = final_checks(soak, cycle)
    loads.append(os.getloadavg()[0])
    result = dict(soak.counts, seconds_under_faults=round(faulted_s),
                  seconds=round(time.time() - start),
                  disk_faults=("tmpfs filled and emptied" if disk.mounted
                               else "none (no tmpfs could be mounted)"),
                  disk_fills=disk.fills, seed=args.seed,
                  kill_probability=args.kill_probability,
                  commands=args.commands, final=final, lost=soak.lost,
                  **provenance(sys.argv[1:] if argv is None else argv, date,
                               loads))
    print(json.dumps(result, indent=1))
    if args.results:
      with open(args.results + ".tmp", "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
      os.replace(args.results + ".tmp", args.results)
    return result
  finally:
    disk.stop()
    if not args.workdir:
      disk.unmount()
      shutil.rmtree(root, ignore_errors=True)
    elif disk.mounted:
      print(f"(the tmpfs stays mounted at {root}: umount {root})",
            file=sys.stderr)


if __name__ == "__main__":
  if sys.argv[1:2] == ["--verify_exports"]:
    print(json.dumps(verify_exports(*sys.argv[2:6])))
  else:
    main()
