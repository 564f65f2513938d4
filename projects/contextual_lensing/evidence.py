"""Evidence at small scale for contextual lensing (Kiros 2020): MeanPool vs
a Simple and a GatedConv lens over the same frozen core, under the evidence
protocol (`experiments/evidence_protocol.py`).

  1. The cores: `cmlm` (a CMLM run of the garden; by default the CMLM arm of
     experiments/cmlm_vs_mlm.py, seed 1: cmlm/demo's encoder, 2 layers,
     hidden 128, length 48) and `minilm` (all-MiniLM-L6-v2 imported with
     length 64; `--minilm=RUN` takes another run or import).
  2. Per core and seed of `--seeds` (`task.seed`: the lens's and the
     classifier's initialisation, data order, the lens's embedding
     dropout), the Classifier (`lensing/nli`: a hidden layer of 512 over
     [u, v, |u-v|, u*v]) trains a lens for `--steps` steps of `--batch_size`
     sentence pairs on a partial SNLI (`--snli_dir`: the first ~1.3k lines
     of SNLI 1.0's snli_1.0_dev.jsonl and snli_1.0_test.jsonl, ~2.5k pairs
     together, CC BY-SA 4.0, https://nlp.stanford.edu/projects/snli/),
     Adam 1e-3 with 10%
     warm-up:
       * `Simple` (D=1024) and `GatedConv` (D=1024, gating 256, M=1, width
         3), embedding dropout 0.1: the same core passes (2 sentences a
         pair, the core frozen: forward only);
       * `MeanPool` (the control, the paper's BOW baseline): the
         parameter-free `mean` lens, i.e. the core's token states averaged;
         nothing of the vector is trained (one Classifier step is run to
         write the run; the vector does not depend on it, or on the seed).
     Every run's core variables are checked equal to the core's, bit for
     bit.
  3. Every lens is scored on dev data none trained on
     (`evidence_measures`): STS-B dev and SICK-R trial (Spearman x 100), CR,
     MRPC, TREC (a fixed 10% of their training files) and SST-2 dev
     (logistic regression on the vectors; at most `--max_train` fitting
     examples).

Prints one table per core (mean ± std over seeds, each lens's difference
to MeanPool with its 95% t-interval over seeds, which gives the verdict,
and the paired bootstrap 95% interval over seeds and examples beside it)
and writes `<work_dir>/<core>/lensing_evidence.json`; each (arm, seed) is
cached, so `--cores`, `--arms` and `--seeds` split the work.

  python projects/contextual_lensing/evidence.py [--steps=200] [--batch_size=32]
      [--cmlm=RUN] [--minilm=RUN] [--cores=cmlm,minilm] [--seeds=1,2,3]
      [--work_dir=runs/lensing_evidence]
"""
import argparse
import json
import os
import sys
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO_ROOT)


from cmlm.evaluation import encoders  # noqa: E402
from cmlm.experiments import evidence_measures  # noqa: E402
from cmlm.experiments import evidence_protocol as protocol  # noqa: E402
from cmlm.experiments.command_runs import cmlm  # noqa: E402
from cmlm.experiments.command_runs import import_minilm  # noqa: E402
from cmlm.projects.contextual_lensing import registry_imports  # noqa: E402,F401  (reads its runs)

CONTROL = "MeanPool"
LENSES = {
    CONTROL: {"type": "mean"},
    "Simple": {"type": "simple", "output_size": 1024, "dropout_rate": 0.1},
    "GatedConv": {"type": "gated_conv", "output_size": 1024,
                  "gating_size": 256, "num_conv_layers": 1,
                  "dropout_rate": 0.1},
}
ARMS = tuple(LENSES)
MEASURES = ("sts-b", "sick-r", "cr", "mrpc", "trec", "sst2")
CORES = ("cmlm", "minilm")


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--steps", type=int, default=200)
  parser.add_argument("--batch_size", type=int, default=32)
  parser.add_argument("--learning_rate", type=float, default=1e-3)
  parser.add_argument("--cmlm", default=os.path.join(
      REPO_ROOT, "runs", "cmlm_vs_mlm", "CMLM", "seed1", "run"),
      help="a CMLM run of the garden to lens")
  parser.add_argument("--minilm", default="", help="a run or import to "
                      "lens (default: all-MiniLM-L6-v2, imported)")
  parser.add_argument("--cores", default=",".join(CORES))
  parser.add_argument("--max_train", type=int, default=5000,
                      help="at most this many fitting examples per transfer "
                      "task (a fixed subset)")
  parser.add_argument("--work_dir", default=os.path.join(
      REPO_ROOT, "runs", "lensing_evidence"))
  parser.add_argument("--snli_dir", default=None,
                      help="The folder of SNLI 1.0's snli_1.0_dev.jsonl and "
                      "snli_1.0_test.jsonl (whole or their first lines; "
                      "https://nlp.stanford.edu/projects/snli/), the "
                      "Classifier's training pairs; needed unless "
                      "--report_only.")
  protocol.add_arguments(parser, ARMS)
  args = parser.parse_args(argv)
  args.cores = [c.strip() for c in args.cores.split(",") if c.strip()]
  if not args.cores or set(args.cores) - set(CORES):
    parser.error(f"--cores must be some of {','.join(CORES)}.")
  protocol.check_counts(parser, args, ("steps", "batch_size"))
  protocol.check_selection(parser, args, ARMS)
  return args


def core_seq_length(core):
  """64 tokens, or fewer where the core's positions end sooner."""
  from cmlm.training import run_dir  # pylint: disable=g-import-not-at-top
  return min(64, run_dir.load_params(core).task.tokenization.seq_length)


def compute(name, args, seq_length):
  if name == CONTROL:
    return None
  return protocol.Compute(args.steps, (protocol.Work(
      "premise + hypothesis through the frozen core (forward only)",
      2 * args.batch_size, seq_length, 1, 0),))


def arms(args, seq_length):
  return [protocol.Arm(name, compute(name, args, seq_length),
                       control=name == CONTROL,
                       description="" if name != CONTROL else
                       "parameter-free mean of the core's states")
          for name in ARMS]


def snli_pairs(work_dir, snli_dir):
  """The partial SNLI's dev and test in one jsonl (the Classifier's data;
  `snli_dir`: `--snli_dir`)."""
  path = os.path.join(work_dir, "snli_partial.jsonl")
  if not os.path.exists(path):
    os.makedirs(work_dir, exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
      for name in ("snli_1.0_dev.jsonl", "snli_1.0_test.jsonl"):
        with open(os.path.join(snli_dir, name), encoding="utf-8") as f:
          out.writelines(line.rstrip("\n") + "\n" for line in f
                         if line.strip())
  return path


def override(name, core, seed, data, args):
  steps = 1 if name == CONTROL else args.steps
  return {
      "task": {"seed": seed, "init_checkpoint": core,
               "tokenization": {"seq_length": core_seq_length(core)},
               "model": {"pooling_head": LENSES[name]},
               "objectives": {"classifier": {
                   "train_data": {"input_path": data,
                                  "global_batch_size": args.batch_size},
                   "validation_data": {"input_path": ""}}}},
      "trainer": {"train_steps": steps,
                  "steps_per_loop": max(1, steps // 4),
                  "summary_interval": max(1, steps // 4),
                  "checkpoint_interval": steps,
                  "validation_interval": steps,
                  "optimizer_config": {
                      "learning_rate": {"polynomial": {
                          "initial_learning_rate": args.learning_rate,
                          "decay_steps": steps}},
                      "warmup": {"linear": {
                          "warmup_steps": max(1, steps // 10)}}}}}


def core_unchanged(core, model_dir):
  """Whether every core variable of the lens run equals the core's."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  from cmlm.inference import run_record  # pylint: disable=g-import-not-at-top
  start, lensed = (run_record.read_run(core).restore_encoder(),
                   run_record.read_run(model_dir).restore_encoder())
  return all(np.array_equal(a.numpy(), b.numpy()) for a, b in zip(
      start.transformer.weights, lensed.transformer.weights))


def run_unit(name, seed, core, args, store, data):
  model_dir = os.path.join(store.directory(name, seed), "run")
  began = time.perf_counter()
  cmlm("train", "--experiment=lensing/nli", "--mode=train",
       "--strategy=one_device", f"--model_dir={model_dir}",
       f"--params_override={json.dumps(override(name, core, seed, data, args))}")
  seconds = time.perf_counter() - began
  encoder = encoders.load_encoder(model_dir, show_progress=False)
  samples = evidence_measures.evaluate(encoder, MEASURES, args.data_dir,
                                       max_train=args.max_train)
  return {"measures": samples, "train_seconds": seconds,
          "core_unchanged": core_unchanged(core, model_dir)}


def core_dir(name, args):
  if name == "cmlm":
    return args.cmlm
  path = args.minilm or os.path.join(args.work_dir, "minilm_import")
  if not args.report_only and not os.path.exists(
      os.path.join(path, "params.yaml")):
    import_minilm(path, seq_length=64)
  return path


def run_core(name, args):
  core = core_dir(name, args)
  if not os.path.exists(os.path.join(core, "params.yaml")):
    raise SystemExit(f"The {name} core {core} is not a run directory (no "
                     "params.yaml); train or import it first.")
  seq_length = core_seq_length(core)
  all_arms = arms(args, seq_length)
  protocol.check_equal_compute(all_arms)
  store = protocol.UnitStore(os.path.join(args.work_dir, name))
  if not args.report_only:
    data = snli_pairs(args.work_dir, args.snli_dir)
    for seed in args.seeds:
      for arm in args.arms:
        if store.load(arm, seed) is not None:
          continue
        done = store.load(CONTROL, args.seeds[0]) if arm == CONTROL else None
        store.save(arm, seed, done or run_unit(arm, seed, core, args, store,
                                               data))
  results = store.results(all_arms, args.seeds)
  frozen = {f"{a}/seed{s}": (store.load(a, s) or {}).get("core_unchanged")
            for a in results for s in results[a]}
  print(f"\ncore variables unchanged: {frozen}")
  return protocol.report(
      f"Contextual lensing over the frozen {name} core ({core}): {args.steps} "
      f"Classifier steps of {args.batch_size} SNLI pairs; dev measures",
      all_arms, list(MEASURES), results,
      os.path.join(args.work_dir, name, "lensing_evidence.json"),
      {"core": core, "steps": args.steps, "batch_size": args.batch_size,
       "learning_rate": args.learning_rate, "seeds": args.seeds,
       "max_train": args.max_train, "core_unchanged": frozen},
      resamples=args.resamples)


def main(argv=None):
  args = parse_args(argv)
  args.data_dir = protocol.data_dir(args)
  protocol.data_folder(args, "snli_dir", "the folder of SNLI 1.0's "
                       "snli_1.0_dev.jsonl and snli_1.0_test.jsonl")
  return {core: run_core(core, args) for core in args.cores}


if __name__ == "__main__":
  main()
