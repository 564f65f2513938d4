"""Preparing a corpus at scale: Beam pairs/s per worker, and the input
pipeline reading the records back against the training step.

In one run, on copies of the embedded corpus (`--copies`), the paper's unit
(consecutive sequences packed to `--seq_length`, the shipped vocabulary):
  * pairs/s of `write_pair_tfrecords` (one process, for reference);
  * pairs/s of `python -m cmlm prepare`'s pipeline (`beam_pairs`) on the
    DirectRunner with each of `--workers` processes, per worker too, and
    the marginal rate (the job less a one-file job: start-up taken out);
  * examples/s of the CMLM input pipeline streaming the records back
    (parse, swap, WordPiece, masking, batching) against examples/s of the
    CMLM training step of `--experiment` at the same shapes: the pipeline
    must stay well above the step (>= 5x).
Prints figures as it goes and a final JSON line; never asserts a time.
Run it on a quiet machine (it prints the load before and after).

  python benchmarks/prepare_pairs.py [--copies=20 --workers=1,2 ...]
"""
import argparse
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cmlm  # noqa: E402,F401  (Keras 2 first)
import train_step  # noqa: E402  (benchmarks/train_step.py: the step timing)

from cmlm.data_pipelines import beam_pairs  # noqa: E402
from cmlm.data_pipelines import cmlm_dataloader  # noqa: E402
from cmlm.data_pipelines import pair_tfrecords  # noqa: E402
from cmlm.data_pipelines import tokenization  # noqa: E402
from cmlm.objectives import base as objective_base  # noqa: E402
from cmlm.training import run_dir  # noqa: E402
from cmlm.training import task as task_lib  # noqa: E402
from official.core import exp_factory  # noqa: E402

CORPUS = os.path.join(ROOT, "data", "corpus_en")
VOCAB = os.path.join(ROOT, "data", "vocab_en_uncased.txt")


def parse_args():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--copies", type=int, default=20,
                      help="copies of data/corpus_en in the corpus")
  parser.add_argument("--seq_length", type=int, default=256)
  parser.add_argument("--workers", default="1,2",
                      help="DirectRunner worker processes to time")
  parser.add_argument("--num_shards", type=int, default=8)
  parser.add_argument("--experiment", default="cmlm/tiny",
                      help="experiment whose CMLM step is timed")
  parser.add_argument("--batch_size", type=int, default=32)
  parser.add_argument("--masked_tokens", type=int, default=80)
  parser.add_argument("--steps", type=int, default=10)
  parser.add_argument("--pipeline_batches", type=int, default=60)
  return parser.parse_args()


def load():
  return float(open("/proc/loadavg").read().split()[0])


def cpu():
  text = open("/proc/cpuinfo").read()
  model = re.search(r"model name\s*:\s*(.*)", text)
  flags = set(re.search(r"flags\s*:\s*(.*)", text).group(1).split())
  return {"model": model.group(1) if model else platform.processor(),
          "cores": os.cpu_count(),
          "flags": sorted(f for f in flags if f in (
              "avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile",
              "amx_bf16", "amx_int8"))}


def copy_corpus(directory, copies):
  for index in range(copies):
    shutil.copytree(CORPUS, os.path.join(directory, f"copy{index}"),
                    ignore=shutil.ignore_patterns("SOURCE.txt"))
  return directory


def direct_args(workers):
  args = ["--runner=DirectRunner", f"--direct_num_workers={workers}"]
  if workers > 1:
    args += ["--direct_running_mode=multi_processing",
             "--default_sdk_harness_log_level=WARNING"]
  return args


def time_beam(text, prefix, config, workers):
  start = time.perf_counter()
  result = beam_pairs.prepare_pairs(text, prefix, config, direct_args(workers),
                                    overwrite=True, stream=open(os.devnull, "w"))
  return result, time.perf_counter() - start


def pipeline_examples_per_s(prefix, tokenizing, args):
  params = cmlm_dataloader.CmlmDataConfig(
      input_path=f"{prefix}.tfrecord-*", pair_unit="sequence",
      max_predictions_per_seq=args.masked_tokens,
      global_batch_size=args.batch_size, is_training=True, seed=1)
  iterator = iter(cmlm_dataloader.build_cmlm_dataset(params, tokenizing))
  for _ in range(5):
    next(iterator)
  start = time.perf_counter()
  for _ in range(args.pipeline_batches):
    next(iterator)
  return args.pipeline_batches * args.batch_size / (
      time.perf_counter() - start)


def step_examples_per_s(args):
  params = exp_factory.get_exp_config(args.experiment)
  model_config = params.task.model
  model_config.encoder.max_position_embeddings = max(
      model_config.encoder.max_position_embeddings,
      args.seq_length + model_config.num_projections)
  name = run_dir.cmlm_objective_name(params)
  objective = getattr(params.task.objectives, name)
  objective.weight = 1.0
  objective.train_data.max_predictions_per_seq = args.masked_tokens
  objective.train_data.global_batch_size = args.batch_size
  params.task.tokenization.seq_length = args.seq_length
  task = task_lib.SentenceEncoderTask(task_lib.SentenceEncoderTaskConfig(
      model=model_config, tokenization=params.task.tokenization,
      objectives=objective_base.ObjectivesConfig({name: objective})))
  model = task.build_model()
  features = {name: train_step.random_features(
      args.batch_size, args.seq_length, args.masked_tokens,
      model_config.encoder.vocab_size, ("s1_", "s2_"))}
  seconds = train_step.time_steps(
      train_step.compiled_train_step(task, model, features), features,
      args.steps)
  return args.batch_size / seconds, model_config.encoder


def main():
  args = parse_args()
  load_before = load()
  print(f"load before: {load_before}; cpu: {cpu()}", flush=True)
  tokenizing = tokenization.TokenizationConfig(vocab_file=VOCAB,
                                               seq_length=args.seq_length)
  figures = {"seq_length": args.seq_length, "copies": args.copies}
  with tempfile.TemporaryDirectory() as work:
    text = copy_corpus(os.path.join(work, "corpus"), args.copies)
    one_file = os.path.join(work, "one")
    shutil.copytree(os.path.join(CORPUS, "inaugural"), one_file)

    start = time.perf_counter()
    _, stats = pair_tfrecords.write_pair_tfrecords(
        text, os.path.join(work, "one_process"), args.num_shards,
        pair_unit="sequence", tokenization_config=tokenizing)
    seconds = time.perf_counter() - start
    figures["one_process_pairs_per_s"] = round(stats.pairs / seconds, 1)
    figures["pairs"] = stats.pairs
    print(f"one-process writer: {stats.pairs} pairs in {seconds:.1f}s, "
          f"{stats.pairs / seconds:.0f} pairs/s", flush=True)

    config = beam_pairs.PairsConfig(
        pair_unit="sequence", tokenization_config=tokenizing,
        num_shards=args.num_shards, seed=0)
    prefix = os.path.join(work, "beam", "pairs")
    for workers in [int(w) for w in args.workers.split(",")]:
      small, fixed_s = time_beam(one_file, os.path.join(work, "small", "p"),
                                 config, workers)
      result, seconds = time_beam(text, prefix, config, workers)
      rate = result.pairs / seconds
      # The marginal rate: the big job less a one-file job (start-up and
      # the fixed cost of every stage cancel out).
      if seconds <= fixed_s * 1.5:
        raise SystemExit(f"The corpus is too small to tell the job from its "
                         f"start-up ({seconds:.1f}s vs {fixed_s:.1f}s for one "
                         "file): raise --copies.")
      steady = (result.pairs - small.pairs) / (seconds - fixed_s)
      figures[f"beam_{workers}_workers"] = {
          "seconds": round(seconds, 1), "pairs_per_s": round(rate, 1),
          "pairs_per_s_per_worker": round(rate / workers, 1),
          "one_file_seconds": round(fixed_s, 1),
          "steady_pairs_per_s": round(steady, 1),
          "steady_pairs_per_s_per_worker": round(steady / workers, 1)}
      print(f"beam, DirectRunner, {workers} worker(s): {result.pairs} pairs "
            f"in {seconds:.1f}s = {rate:.0f} pairs/s ({rate / workers:.0f} "
            f"per worker); a one-file job takes {fixed_s:.1f}s; the marginal "
            f"rate {steady:.0f} pairs/s ({steady / workers:.0f} per worker)",
            flush=True)

    reading = pipeline_examples_per_s(prefix, tokenizing, args)
  training, encoder = step_examples_per_s(args)
  figures.update(
      pipeline_examples_per_s=round(reading, 1),
      train_examples_per_s=round(training, 1),
      pipeline_to_train_ratio=round(reading / training, 2),
      experiment=args.experiment, hidden_size=encoder.hidden_size,
      num_layers=encoder.num_layers, batch_size=args.batch_size,
      load_before=load_before, load_after=load(), cpu=cpu())
  print(f"input pipeline reading the records: {reading:.0f} examples/s; "
        f"{args.experiment} CMLM step: {training:.1f} examples/s; ratio "
        f"{reading / training:.1f}x", flush=True)
  print(json.dumps(figures))


if __name__ == "__main__":
  main()
