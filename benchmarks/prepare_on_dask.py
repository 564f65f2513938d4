"""`python -m cmlm prepare` on a Dask cluster: records/s and sentences/s
with 1 and 2 worker processes, peak memory per worker, and the projection
to the paper's ~1B pairs.

The corpus is built from the English text of `--sources` (the shipped
data/corpus_en by default): its documents (blank-line separated
paragraphs) permuted by a seeded shuffle per copy and written into files of
`--file_megabytes` until it holds `--megabytes` of text. The job is the
paper's unit (consecutive sequences packed to `--seq_length` tokens with
the shipped uncased vocabulary), run with `beam_runners.local_dask_cluster`
(the cluster `prepare --runner=DaskRunner` starts) for each of `--workers`,
and once in this process on the DirectRunner for reference. For each:

  * the job's seconds, pairs (records) and sentences per second, and the
    marginal rate (the job less a one-file job on the same warm cluster:
    scheduling and the final shuffle of a tiny job taken out);
  * the cluster's start-up (its worker processes importing Beam and
    TensorFlow), apart from the job;
  * each worker's peak resident memory (VmHWM), and before the jobs
    (Beam and TensorFlow imported), and this process's;
  * whether the shards are the bytes of the first run (they must be).

Prints the CPU model, its flags and the 1-minute load before and after,
the figures as it goes, the projection to 1e9 pairs on 16, 64 and 256
workers from the per-worker marginal rate of the largest run, and a final
JSON line. Never asserts a time; run it on a quiet machine.

  python benchmarks/prepare_on_dask.py [--megabytes=50 --workers=1,2 ...]
"""
import argparse
import json
import os
import platform
import random
import re
import resource
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import cmlm  # noqa: E402,F401  (Keras 2 first)

from cmlm.data_pipelines import beam_pairs  # noqa: E402
from cmlm.data_pipelines import beam_runners  # noqa: E402
from cmlm.data_pipelines import corpus  # noqa: E402
from cmlm.data_pipelines import tokenization  # noqa: E402

CORPUS = os.path.join(ROOT, "data", "corpus_en")
VOCAB = os.path.join(ROOT, "data", "vocab_en_uncased.txt")
FLAGS_OF_NOTE = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile",
                 "amx_bf16", "amx_int8")
PROJECTED_PAIRS = 1e9
PROJECTED_WORKERS = (16, 64, 256)


def parse_args():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--megabytes", type=float, default=50,
                      help="text in the corpus (50 or more: a worker then "
                      "has minutes of work)")
  parser.add_argument("--file_megabytes", type=float, default=1,
                      help="text per input file (a file is a Dask task)")
  parser.add_argument("--sources", default=CORPUS,
                      help="English corpora whose documents are permuted, "
                      "comma-separated (default: data/corpus_en; the "
                      "figures of docs/preparing_at_scale.md add "
                      "corpora/en of the evidence scripts' --source_data)")
  parser.add_argument("--workers", default="1,2",
                      help="local Dask worker processes to time")
  parser.add_argument("--seq_length", type=int, default=256)
  parser.add_argument("--num_shards", type=int, default=16)
  parser.add_argument("--direct", type=int, default=1,
                      help="1: time the DirectRunner in this process too")
  return parser.parse_args()


def load():
  return os.getloadavg()[0]


def cpu():
  text = open("/proc/cpuinfo", encoding="utf-8").read()
  model = re.search(r"model name\s*:\s*(.*)", text)
  flags = set(re.search(r"flags\s*:\s*(.*)", text).group(1).split())
  return {"model": model.group(1) if model else platform.processor(),
          "cores": os.cpu_count(),
          "flags": [flag for flag in FLAGS_OF_NOTE if flag in flags]}


def build_corpus(directory, sources, megabytes, file_megabytes):
  """Writes permuted copies of the sources' documents; returns (bytes,
  files, documents)."""
  documents = list(corpus.read_documents(sources, skip_invalid_lines=True))
  os.makedirs(directory)
  target, per_file = megabytes * 1e6, file_megabytes * 1e6
  written = files = count = copy = 0
  while written < target:
    order = list(documents)
    random.Random(copy).shuffle(order)
    copy += 1
    chunk, size = [], 0
    for document in order:
      chunk.append(document)
      size += len(document.encode("utf-8")) + 2
      if size >= per_file or written + size >= target:
        data = ("\n\n".join(chunk) + "\n").encode("utf-8")
        with open(os.path.join(directory, f"part{files:05d}.txt"), "wb") as f:
          f.write(data)
        written, files = written + len(data), files + 1
        count += len(chunk)
        chunk, size = [], 0
        if written >= target:
          break
  return written, files, count


def peak_memory_mb():
  """This process's peak resident memory in MB: VmHWM (Linux), which
  belongs to the process's own memory; `ru_maxrss` elsewhere, which a
  spawned worker inherits from the process that started it."""
  try:
    with open("/proc/self/status", encoding="utf-8") as f:
      peak_kib = int(re.search(r"VmHWM:\s*(\d+) kB", f.read()).group(1))
  except (OSError, AttributeError):
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
  return round(peak_kib / 1024, 1)


def shard_bytes(result):
  return [open(path, "rb").read() for path in result.shard_paths]


def time_job(spec, prefix, config, args):
  start = time.perf_counter()
  result = beam_pairs.prepare_pairs(spec, prefix, config, args,
                                    overwrite=True,
                                    stream=open(os.devnull, "w"))
  return result, time.perf_counter() - start


def rates(name, result, seconds, small, small_seconds, workers):
  sentences = result.counts.get("sentences")
  marginal = (result.pairs - small.pairs) / max(seconds - small_seconds, 1e-9)
  figures = {
      "workers": workers, "seconds": round(seconds, 2),
      "records": result.pairs, "sentences": sentences,
      "records_per_s": round(result.pairs / seconds, 1),
      "sentences_per_s": round(sentences / seconds, 1),
      "one_file_seconds": round(small_seconds, 2),
      "marginal_records_per_s": round(marginal, 1),
      "marginal_records_per_s_per_worker": round(marginal / workers, 1)}
  if seconds <= small_seconds * 1.5:
    figures["marginal_unreliable"] = True
    print(f"{name}: the corpus is too small to tell the job from a one-file "
          f"job ({seconds:.1f}s vs {small_seconds:.1f}s): the marginal rate "
          "below is noise; raise --megabytes.", flush=True)
  print(f"{name}: {result.pairs} records, {sentences} sentences in "
        f"{seconds:.1f}s = {figures['records_per_s']:.0f} records/s, "
        f"{figures['sentences_per_s']:.0f} sentences/s; a one-file job "
        f"{small_seconds:.1f}s; marginal {marginal:.0f} records/s "
        f"({marginal / workers:.0f} per worker)", flush=True)
  return figures


def main():
  args = parse_args()
  import distributed  # pylint: disable=g-import-not-at-top
  figures = {"load_before": load(), "cpu": cpu(),
             "megabytes_asked": args.megabytes,
             "seq_length": args.seq_length, "num_shards": args.num_shards}
  print(f"load before: {figures['load_before']}; cpu: {figures['cpu']}",
        flush=True)
  tokenizing = tokenization.TokenizationConfig(vocab_file=VOCAB,
                                               seq_length=args.seq_length)
  config = beam_pairs.PairsConfig(pair_unit="sequence",
                                  tokenization_config=tokenizing,
                                  num_shards=args.num_shards, seed=0)
  with tempfile.TemporaryDirectory() as work:
    text = os.path.join(work, "corpus")
    size, files, documents = build_corpus(text, args.sources, args.megabytes,
                                          args.file_megabytes)
    one_file = os.path.join(text, "part00000.txt")
    figures.update(corpus_bytes=size, corpus_files=files,
                   corpus_documents=documents, sources=args.sources)
    print(f"corpus: {size / 1e6:.1f} MB in {files} files, {documents} "
          f"documents (permuted copies of {args.sources})", flush=True)
    first = None
    if args.direct:
      in_process = ["--runner=DirectRunner", "--direct_num_workers=1"]
      small, small_s = time_job(one_file, os.path.join(work, "s", "p"),
                                config, in_process)
      result, seconds = time_job(text, os.path.join(work, "d", "p"), config,
                                 in_process)
      figures["direct_in_process"] = rates(
          "DirectRunner, in this process", result, seconds, small, small_s, 1)
      first = shard_bytes(result)
    for workers in [int(w) for w in args.workers.split(",")]:
      start = time.perf_counter()
      with beam_runners.local_dask_cluster(workers) as address, \
          distributed.Client(address, set_as_default=False) as client:
        startup = time.perf_counter() - start
        floor = sorted(client.run(peak_memory_mb).values())
        on_dask = ["--runner=DaskRunner", f"--dask_client_address={address}"]
        small, small_s = time_job(one_file, os.path.join(work, "s", "p"),
                                  config, on_dask)
        result, seconds = time_job(text, os.path.join(work, "k", "p"),
                                   config, on_dask)
        peaks = sorted(client.run(peak_memory_mb).values())
      run = rates(f"DaskRunner, {workers} worker(s)", result, seconds, small,
                  small_s, workers)
      first = first or shard_bytes(result)
      run.update(cluster_start_seconds=round(startup, 1),
                 worker_peak_memory_mb=peaks,
                 worker_memory_before_jobs_mb=floor,
                 same_bytes_as_first_run=shard_bytes(result) == first)
      print(f"  cluster start-up {startup:.1f}s; peak memory per worker "
            f"{peaks} MB ({floor} MB before the jobs: Beam and TensorFlow "
            f"imported); same shards as the first run: "
            f"{run['same_bytes_as_first_run']}", flush=True)
      figures[f"dask_{workers}_workers"] = run
  figures.update(launcher_peak_memory_mb=peak_memory_mb(), load_after=load())
  largest = figures[f"dask_{max(int(w) for w in args.workers.split(','))}"
                    "_workers"]
  per_worker = largest["marginal_records_per_s_per_worker"]
  text_per_record = size / max(largest["records"], 1)
  figures["text_bytes_per_record"] = round(text_per_record, 1)
  if largest.get("marginal_unreliable"):
    figures["projection_hours_for_1e9_pairs"] = None
    print("no projection: the corpus is too small to give a marginal rate",
          flush=True)
  else:
    projection = {str(n): round(PROJECTED_PAIRS / (per_worker * n) / 3600, 2)
                  for n in PROJECTED_WORKERS}
    figures["projection_hours_for_1e9_pairs"] = projection
    print(f"projection at {per_worker:.0f} records/s per worker "
          f"({text_per_record:.0f} bytes of text per record): 1e9 pairs take "
          + ", ".join(f"{hours:.1f} h on {n} workers"
                      for n, hours in projection.items())
          + " (plus start-up and the final shuffle)", flush=True)
  print(f"load after: {figures['load_after']}", flush=True)
  print(json.dumps(figures))


if __name__ == "__main__":
  main()
