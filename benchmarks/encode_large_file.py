"""`python -m cmlm encode` on a large file: speed against the same model in
memory, and peak memory at two file sizes, in one run.

The model is `--model`, or (default) the tiny export the tests build (a
4-step cmlm/tiny run exported with `--formats=saved_model,tflite,onnx`,
kept in `--work_dir`). The file is `--lines` lines of the shipped corpus
(data/corpus_en: its non-empty lines, shuffled and repeated with seed 0).
Measured:

  in_memory      `cmlm.SentenceEncoder(model).encode(sentences, batch_size)`
                 over the whole list, in this process, warmed up: the same
                 backend (`inference.embedders.load_embedder`'s default)
                 and batch size;
  streaming      `python -m cmlm encode --input=FILE --output=OUT.npy` in a
                 fresh process; its start (importing TensorFlow, loading
                 the model) is that command's wall time on `--batch_size`
                 lines, taken off: `streaming_sent_per_s` is
                 (lines - batch_size) / (wall - start), and
                 `streaming_vs_in_memory` its ratio to in_memory (the
                 design's goal: 0.9 or more; null when the start is more
                 than half the wall time); `whole_run_sent_per_s` is
                 lines / wall; `progress_sent_per_s` the command's own
                 progress line at the end (from the model loaded to the
                 last batch: the counting pass and loading left out), and
                 `progress_vs_in_memory`;
  peak_rss_mb    the `cmlm encode` process's peak resident memory
                 (`os.wait4`'s ru_maxrss of that child alone) at each of
                 `--memory_lines` (default 20000 and --lines): the design's
                 goal is flat in the file size.

Writes `--results` (default docs/results/encode_large_file.json) with the
command, commit, code_modified, cpu, isa, cores, date, load_before and
load_after, and prints it. A run that starts above `--max_load` is refused
unless `--allow_load` (then `"quiet": false`).

  python benchmarks/encode_large_file.py [--model=EXPORT] [--lines=200000]
      [--memory_lines=20000,200000] [--batch_size=256] [--work_dir=DIR]
  python benchmarks/encode_large_file.py --lines=2000 --memory_lines=500,2000 \
      --results=check.json --allow_load          # a quick check
"""
import argparse
import datetime
import glob
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

LOAD_AT_START = os.getloadavg()[0]
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO_ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from cmlm.data_pipelines import atomic_file  # noqa: E402  (no TensorFlow)
from cmlm.experiments import unit_provenance  # noqa: E402

CORPUS = os.path.join(REPO_ROOT, "data", "corpus_en")
RESULTS = os.path.join(REPO_ROOT, "docs", "results", "encode_large_file.json")


def parse_args():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--model", default=None, help="an export (default: "
                      "the tests' tiny export, built into --work_dir)")
  parser.add_argument("--work_dir", default=None, help="keeps the tiny "
                      "export and the input files (default: a temporary "
                      "directory)")
  parser.add_argument("--lines", type=int, default=200_000)
  parser.add_argument("--memory_lines", default=None, help="comma-separated "
                      "file sizes whose peak memory is measured (default: "
                      "20000 and --lines)")
  parser.add_argument("--batch_size", type=int, default=256)
  parser.add_argument("--results", default=RESULTS)
  parser.add_argument("--max_load", type=float, default=0.5)
  parser.add_argument("--allow_load", action="store_true",
                      help="run on a loaded machine anyway (flagged)")
  args = parser.parse_args()
  args.memory_lines = sorted({int(n) for n in (
      args.memory_lines or f"{min(20_000, args.lines)},{args.lines}"
  ).split(",")} | {args.lines})
  return args


def corpus_sentences(count: int):
  """`count` non-empty lines of data/corpus_en, shuffled, repeated."""
  lines = []
  for path in sorted(glob.glob(os.path.join(CORPUS, "**", "*.txt"),
                               recursive=True)):
    if os.path.basename(path) == "SOURCE.txt":
      continue
    with open(path, encoding="utf-8") as f:
      lines.extend(line.strip() for line in f if line.strip())
  rng = random.Random(0)
  chosen = []
  while len(chosen) < count:
    rng.shuffle(lines)
    chosen.extend(lines[:count - len(chosen)])
  return chosen


def tiny_export(work_dir: str) -> str:
  """The tests' tiny export (tests/conftest.py: a 4-step cmlm/tiny run),
  with the TFLite and ONNX artifacts; kept in `work_dir`."""
  export_dir = os.path.join(work_dir, "tiny_export")
  if os.path.isdir(export_dir):
    return export_dir
  from cmlm.export import exporter  # pylint: disable=g-import-not-at-top
  from cmlm.training import train  # pylint: disable=g-import-not-at-top
  from tests import helpers  # pylint: disable=g-import-not-at-top
  model_dir = os.path.join(work_dir, "tiny_run")
  say(f"building the tiny export in {export_dir} ...")
  train.run(helpers.tiny_run_params(4), model_dir)
  exporter.export_run(model_dir, export_dir,
                      formats=("saved_model", "tflite", "onnx"))
  return export_dir


def run_encode(model: str, input_path: str, output: str, batch_size: int):
  """`python -m cmlm encode` in a fresh process: (wall seconds, its peak
  RSS in MiB, its stderr's last line)."""
  command = [sys.executable, "-m", "cmlm", "encode", f"--model={model}",
             f"--input={input_path}", f"--output={output}",
             f"--batch_size={batch_size}", "--overwrite"]
  with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=out,
                               stderr=err)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    err.seek(0)
    stderr = err.read().decode("utf-8", "replace").strip()
  if process.returncode:
    sys.exit(f"{' '.join(command)} failed:\n{stderr[-2000:]}")
  return wall, round(usage.ru_maxrss / 1024, 1), stderr.splitlines()[-1]


def in_memory_rate(model: str, sentences, batch_size: int):
  """(sentences/s of SentenceEncoder.encode over the list, its backend)."""
  import cmlm  # pylint: disable=g-import-not-at-top
  encoder = cmlm.SentenceEncoder(model)
  encoder.encode(sentences[:2 * batch_size], batch_size=batch_size)  # warm
  start = time.perf_counter()
  encoder.encode(sentences, batch_size=batch_size, normalize_embeddings=True)
  return (len(sentences) / (time.perf_counter() - start),
          encoder._embedder.backend)  # pylint: disable=protected-access


def say(text: str) -> None:
  """A step's start, on stderr (the results go to stdout)."""
  print(text, file=sys.stderr, flush=True)


def write_lines(path: str, sentences) -> str:
  with open(path, "w", encoding="utf-8") as f:
    f.writelines(s + "\n" for s in sentences)
  return path


def main():
  args = parse_args()
  if LOAD_AT_START > args.max_load and not args.allow_load:
    sys.exit(f"The 1-minute load average is {LOAD_AT_START:.2f}, above "
             f"--max_load={args.max_load}: other work would skew the speed "
             "(wait for a quiet machine, or pass --allow_load to flag it).")
  with tempfile.TemporaryDirectory() as temporary:
    work_dir = args.work_dir or temporary
    os.makedirs(work_dir, exist_ok=True)
    model = args.model or tiny_export(work_dir)
    sentences = corpus_sentences(args.lines)
    files = {n: write_lines(os.path.join(work_dir, f"lines_{n}.txt"),
                            sentences[:n])
             for n in set(args.memory_lines) | {args.batch_size}}
    output = os.path.join(work_dir, "embeddings.npy")
    say(f"in memory: SentenceEncoder.encode of {args.lines:,} sentences ...")
    in_memory, backend = in_memory_rate(model, sentences, args.batch_size)
    say(f"streaming: the command's start, on {args.batch_size} lines ...")
    start_s = run_encode(model, files[args.batch_size], output,
                         args.batch_size)[0]
    measured = {}
    for n in args.memory_lines:
      say(f"streaming: python -m cmlm encode of {n:,} lines ...")
      measured[n] = run_encode(model, files[n], output, args.batch_size)
  wall, _, progress_line = measured[args.lines]
  # None where the start outweighs the file (a small --lines, a noisy
  # machine): the difference of two wall times then says nothing.
  streaming = ((args.lines - args.batch_size) / (wall - start_s)
               if wall > 2 * start_s else None)
  match = re.search(r"\| (\d+) sent/s", progress_line)
  progress = float(match.group(1)) if match else None
  results = {
      "command": unit_provenance.without_local_paths(
          " ".join(["python"] + sys.argv), ("work_dir", "model", "results")),
      "commit": unit_provenance.head_commit(),
      "code_modified": unit_provenance.modified_code(),
      "cpu": unit_provenance.cpu_model(), "isa": unit_provenance.isa_flags(),
      "cores": os.cpu_count(),
      "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
          timespec="seconds"),
      "load_before": round(LOAD_AT_START, 2),
      "load_after": round(os.getloadavg()[0], 2),
      "quiet": LOAD_AT_START <= args.max_load,
      "model": args.model or "the tests' tiny export (tflite, onnx)",
      "backend": backend, "batch_size": args.batch_size, "lines": args.lines,
      "in_memory_sent_per_s": round(in_memory, 1),
      "streaming_start_s": round(start_s, 2),
      "streaming_wall_s": round(wall, 2),
      "streaming_sent_per_s": streaming and round(streaming, 1),
      "whole_run_sent_per_s": round(args.lines / wall, 1),
      "streaming_vs_in_memory": streaming and round(streaming / in_memory, 3),
      "progress_sent_per_s": progress,
      "progress_vs_in_memory": progress and round(progress / in_memory, 3),
      "streaming_progress_line": progress_line,
      "peak_rss_mb": {str(n): measured[n][1] for n in args.memory_lines},
  }
  sizes = args.memory_lines
  results["peak_rss_ratio_largest_to_smallest"] = round(
      measured[sizes[-1]][1] / measured[sizes[0]][1], 3)
  os.makedirs(os.path.dirname(os.path.abspath(args.results)), exist_ok=True)
  with atomic_file.atomic_file(args.results) as temporary:
    with open(temporary, "w", encoding="utf-8") as f:
      json.dump(results, f, indent=1)
      f.write("\n")
  print(json.dumps(results, indent=1))


if __name__ == "__main__":
  main()
