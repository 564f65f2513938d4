"""Evidence at small scale for contextual lensing (Kiros et al. 2020): lenses
vs MeanPool on the same frozen core, on this machine.

  1. The core: all-MiniLM-L6-v2 imported (`python -m cmlm import`, sequence
     length 64; `--core=RUN` takes any run or import of ours instead), and
     optionally a CMLM run of the garden (`--cmlm_core=RUN`).
  2. Lenses trained over the frozen core (its variables stay bit-identical;
     checked here on the checkpoints):
       * `nli_simple`, `nli_gated_conv`: the Classifier (`lensing/nli`,
         two-layer network on [u, v, |u-v|, u*v]) on the partial SNLI of
         ../shared (dev + test, ~2.5k pairs: MultiNLI and the full SNLI are
         not offline), Simple (D=1024) and GatedConv (D=1024, gating 256,
         M=1, width 3) lenses;
       * `translate_simple`: the Ranker (`lensing/translate`, VSE++ margin
         0.2) on Multi30k train en|de and en|fr, a Simple lens (D=1024).
  3. `cmlm eval` of the core itself (MeanPool: the imported pooling is the
     mean) and of every lens: STS-B dev, SICK-R (trial), the transfer tasks
     CR, MRPC, TREC, SST-2 (`--max_examples` per split, default 1500),
     Tatoeba (deu, fra, spa, ita) with cosine and, at `--binary_threshold`
     (1.0), Hamming and Jaccard on the lens's sparse binary vectors, and
     BUCC-style mining (cosine vs ratio margin) on the synthetic test built
     from Multi30k val de-en, held apart from the Ranker's training split.

Prints one table per family and a final JSON line (also written to
`<work_dir>/results.json`).

  python projects/contextual_lensing/evidence.py [--steps=300] [--batch_size=32]
      [--core=RUN] [--cmlm_core=RUN] [--work_dir=runs/lensing_evidence]
"""
import argparse
import json
import os
import sys
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO_ROOT)


from cmlm.experiments.command_runs import cmlm  # noqa: E402
from cmlm.experiments.command_runs import import_minilm  # noqa: E402

SHARED = os.path.join(os.path.dirname(REPO_ROOT), "shared", "data")
SNLI = os.path.join(SHARED, "nli", "snli_partial")
MULTI30K = os.path.join(SHARED, "bitext", "multi30k")
STS_TASKS = ["sts-b", "sick-r"]
TRANSFER_TASKS = ["cr", "mrpc", "trec", "sst2"]
TATOEBA_LANGUAGES = "deu,fra,spa,ita"


def parse_args():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--steps", type=int, default=300)
  parser.add_argument("--batch_size", type=int, default=32)
  parser.add_argument("--learning_rate", type=float, default=1e-3)
  parser.add_argument("--core", default="", help="A run or import to lens "
                      "(default: all-MiniLM-L6-v2, imported).")
  parser.add_argument("--cmlm_core", default="", help="Also lens this CMLM "
                      "run of the garden with the NLI Simple lens.")
  parser.add_argument("--work_dir", default=os.path.join(
      REPO_ROOT, "runs", "lensing_evidence"))
  parser.add_argument("--max_examples", type=int, default=1500)
  parser.add_argument("--binary_threshold", type=float, default=1.0)
  parser.add_argument("--seed", type=int, default=1)
  return parser.parse_args()


def snli_pairs(work_dir):
  """The partial SNLI's dev and test in one jsonl (the Classifier's data)."""
  path = os.path.join(work_dir, "snli_partial.jsonl")
  if not os.path.exists(path):
    with open(path, "w", encoding="utf-8") as out:
      for name in ("snli_1.0_dev.jsonl", "snli_1.0_test.jsonl"):
        with open(os.path.join(SNLI, name), encoding="utf-8") as f:
          for line in f:
            if line.strip():
              out.write(line.rstrip("\n") + "\n")
  return path


LENSES = {
    "nli_simple": ("lensing/nli", "classifier",
                   {"type": "simple", "output_size": 1024,
                    "dropout_rate": 0.1}),
    "nli_gated_conv": ("lensing/nli", "classifier",
                       {"type": "gated_conv", "output_size": 1024,
                        "gating_size": 256, "num_conv_layers": 1,
                        "dropout_rate": 0.1}),
    "translate_simple": ("lensing/translate", "ranker",
                         {"type": "simple", "output_size": 1024,
                          "dropout_rate": 0.1}),
}


def core_seq_length(core):
  """64 tokens, or fewer where the core's positions end sooner."""
  from cmlm.training import run_dir  # pylint: disable=g-import-not-at-top
  return min(64, run_dir.load_params(core).task.tokenization.seq_length)


def train(name, core, model_dir, data, args):
  experiment, objective, lens = LENSES[name]
  override = {
      "task": {"init_checkpoint": core,
               "tokenization": {"seq_length": core_seq_length(core)},
               "model": {"lens": lens},
               "objectives": {objective: {
                   "train_data": {"input_path": data,
                                  "global_batch_size": args.batch_size,
                                  "seed": args.seed},
                   "validation_data": {"input_path": ""}}}},
      "trainer": {"train_steps": args.steps,
                  "steps_per_loop": max(1, args.steps // 6),
                  "summary_interval": max(1, args.steps // 6),
                  "checkpoint_interval": args.steps,
                  "validation_interval": args.steps,
                  "optimizer_config": {
                      "learning_rate": {"polynomial": {
                          "initial_learning_rate": args.learning_rate,
                          "decay_steps": args.steps}},
                      "warmup": {"linear": {
                          "warmup_steps": max(1, args.steps // 10)}}}}}
  start = time.perf_counter()
  cmlm("train", f"--experiment={experiment}", "--mode=train",
       "--strategy=one_device", f"--model_dir={model_dir}",
       f"--params_override={json.dumps(override)}")
  return time.perf_counter() - start


def core_unchanged(core, model_dir):
  """Whether every core variable of the lens run equals the core's."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  from cmlm.training import run_dir  # pylint: disable=g-import-not-at-top
  start, lensed = run_dir.load_run(core), run_dir.load_run(model_dir)
  return all(np.array_equal(a.numpy(), b.numpy()) for a, b in zip(
      start.encoder.transformer.weights, lensed.encoder.transformer.weights))


def evaluate(model, report_dir, tasks, args):
  cmlm("eval", f"--model={model}", f"--tasks={','.join(tasks)}",
       f"--data_dir={os.path.join(SHARED, 'eval')}",
       f"--bitext_dir={os.path.join(SHARED, 'bitext')}",
       f"--tatoeba_languages={TATOEBA_LANGUAGES}",
       f"--max_examples={args.max_examples}",
       f"--binary_threshold={args.binary_threshold}",
       f"--report_dir={report_dir}")
  with open(os.path.join(report_dir, "report.json"), encoding="utf-8") as f:
    return json.load(f)["tasks"]


def summary(tasks):
  """The figures of one model's report."""
  row = {}
  for name, result in tasks.items():
    headline = result.get("headline", "")
    row[name] = result.get(headline)
    binary = result.get("binary")
    if binary:
      row[f"{name}_jaccard"] = binary["jaccard"]
      row[f"{name}_hamming"] = binary["hamming"]
      row[f"{name}_active"] = 100 * binary["active_fraction"]
    if name == "mining":
      row["mining_cosine"] = result["cosine"]["f1"]
  return row


def table(title, rows, columns):
  print(f"\n{title}")
  print("| model | " + " | ".join(columns) + " |")
  print("|---|" + "---:|" * len(columns))
  for name, row in rows.items():
    cells = [("" if row.get(c) is None else f"{row[c]:.2f}") for c in columns]
    print(f"| {name} | " + " | ".join(cells) + " |")


def main():
  args = parse_args()
  os.makedirs(args.work_dir, exist_ok=True)
  core = args.core or os.path.join(args.work_dir, "minilm")
  if not args.core and not os.path.exists(os.path.join(core, "params.yaml")):
    import_minilm(core)
  data = {"classifier": snli_pairs(args.work_dir),
          "ranker": ",".join(
              f"{MULTI30K}/train.en.gz|{MULTI30K}/train.{language}.gz"
              for language in ("de", "fr"))}
  cores = {"minilm": core}
  if args.cmlm_core:
    cores["cmlm"] = args.cmlm_core
  runs, seconds, frozen = {}, {}, {}
  for core_name, core_dir in cores.items():
    runs[f"{core_name}_meanpool"] = core_dir
    names = list(LENSES) if core_name == "minilm" else ["nli_simple"]
    for name in names:
      model_dir = os.path.join(args.work_dir, f"{core_name}_{name}")
      if not os.path.exists(os.path.join(model_dir,
                                         f"ckpt-{args.steps}.index")):
        seconds[f"{core_name}_{name}"] = train(
            name, core_dir, model_dir, data[LENSES[name][1]], args)
      frozen[f"{core_name}_{name}"] = core_unchanged(core_dir, model_dir)
      runs[f"{core_name}_{name}"] = model_dir
  results = {}
  all_tasks = STS_TASKS + TRANSFER_TASKS + ["tatoeba", "mining"]
  for name, model in runs.items():
    tasks = all_tasks if name.startswith("minilm") else (STS_TASKS +
                                                         TRANSFER_TASKS)
    results[name] = summary(evaluate(
        model, os.path.join(args.work_dir, f"eval_{name}"), tasks, args))
  print(f"\nContextual lensing evidence: {args.steps} steps of batch "
        f"{args.batch_size}; core variables unchanged: {frozen}")
  table("STS (Spearman x 100; binary: Jaccard / Hamming at threshold "
        f"{args.binary_threshold}) and transfer (accuracy)", results,
        ["sts-b", "sick-r", "sts-b_jaccard", "sts-b_active"] +
        TRANSFER_TASKS)
  table("Tatoeba (mean accuracy, 4 languages) and mining F1 on Multi30k val "
        "de-en", {k: v for k, v in results.items() if "tatoeba" in v},
        ["tatoeba", "tatoeba_jaccard", "tatoeba_hamming", "tatoeba_active",
         "mining", "mining_cosine"])
  output = {"steps": args.steps, "batch_size": args.batch_size,
            "learning_rate": args.learning_rate, "cores": cores,
            "max_examples": args.max_examples,
            "binary_threshold": args.binary_threshold,
            "train_seconds": seconds, "core_unchanged": frozen,
            "results": results}
  with open(os.path.join(args.work_dir, "results.json"), "w",
            encoding="utf-8") as f:
    json.dump(output, f, indent=1)
  print(json.dumps(output))


if __name__ == "__main__":
  main()
