"""Sentences/s of a text-to-embedding SavedModel on CPU, tokenization included.

Loads the serving model of `python -m cmlm export` (or anything
`python -m cmlm encode --model` accepts), warms it up, then encodes real
sentences (STS-B dev, both columns) at batch sizes 1, 32 and 256, cycling
through them for at least `--min_seconds` per batch size. Prints one JSON line
per batch size with `batch_size`, `sent_per_s`, `sentences`, `seconds` and
(after batch size 1) `speedup_vs_batch_1`.

  python benchmarks/encode.py --model=exports/tiny/serving
"""
import argparse
import csv
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cmlm.export  # noqa: E402,F401  (selects Keras 2 before TensorFlow loads)
import tensorflow as tf  # noqa: E402

from cmlm.inference import embedders  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# --sentences names another file;
# STS-B dev as the garden ships it (data/sts_b_dev/, CC BY-SA 4.0).
STS_DEV = os.path.join(REPO_ROOT, "data", "sts_b_dev", "sts-dev.csv")


def parse_args():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--model", required=True,
                      help="serving SavedModel, TF Serving base path, or an "
                      "export directory")
  parser.add_argument("--sentences", default=STS_DEV,
                      help="STS-B style file: tab-separated, sentences in "
                      "columns 6 and 7")
  parser.add_argument("--batch_sizes", default="1,32,256")
  parser.add_argument("--backend", default=None, help="an export's "
                      "saved_model, tflite or onnx (default: the fastest)")
  parser.add_argument("--quantized", action="store_true",
                      help="the tflite / onnx artifact's int8 model")
  parser.add_argument("--min_seconds", type=float, default=3.0,
                      help="time spent on each batch size, at least")
  parser.add_argument("--threads", type=int, default=0,
                      help="intra-op threads (0: TensorFlow's default)")
  return parser.parse_args()


def read_sts_sentences(path):
  """Sentences of columns 6 and 7 of an STS-B file, in file order."""
  if not os.path.isfile(path):
    sys.exit(f"--sentences={path} is not a file; give an STS-B .csv file.")
  sentences = []
  with open(path, encoding="utf-8") as f:
    for row in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
      if len(row) >= 7:
        sentences.extend(row[5:7])
  if not sentences:
    sys.exit(f"--sentences={path} has no row with 7 tab-separated columns.")
  return sentences


def batches(sentences, batch_size):
  """Endless batches cycling through `sentences`."""
  start = 0
  while True:
    batch = [sentences[(start + i) % len(sentences)]
             for i in range(batch_size)]
    start = (start + batch_size) % len(sentences)
    yield batch


def time_batch_size(embed, sentences, batch_size, min_seconds):
  """(sentences encoded, seconds) over at least `min_seconds` and 3 batches."""
  source = batches(sentences, batch_size)
  for _ in range(2):  # warm-up: traces, thread pools, caches
    embed(next(source))
  count, calls = 0, 0
  start = time.perf_counter()
  while calls < 3 or time.perf_counter() - start < min_seconds:
    count += len(embed(next(source)))
    calls += 1
  return count, time.perf_counter() - start


def main():
  args = parse_args()
  if args.threads:
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
  sentences = read_sts_sentences(args.sentences)
  embed = embedders.load_embedder(args.model, backend=args.backend,
                                  quantized=args.quantized)
  baseline = None
  for batch_size in (int(b) for b in args.batch_sizes.split(",")):
    count, seconds = time_batch_size(embed, sentences, batch_size,
                                     args.min_seconds)
    rate = count / seconds
    figures = {"batch_size": batch_size, "sent_per_s": round(rate, 1),
               "sentences": count, "seconds": round(seconds, 2)}
    if batch_size == 1:
      baseline = rate
    if baseline:
      figures["speedup_vs_batch_1"] = round(rate / baseline, 2)
    print(json.dumps(figures), flush=True)


if __name__ == "__main__":
  main()
