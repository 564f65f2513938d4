"""CMLM vs MLM at equal encoder compute (paper section 3.2, table 1's claim).

Trains the same small encoder (cmlm/tiny's) on the same text twice:
  * CMLM: s2's masked tokens predicted given the sentence vector of s1
    (batch B, T steps: two encoder passes per example, s1 and s2);
  * MLM: the same model with the conditioning removed
    (`task.objectives.cmlm.condition=false`: s2 read alone, same head, same
    masks), with batch 2B for the same T steps, so both run the encoder on
    2 x B x T sequences (CMLM's s2 pass also reads the N = 15 projections);
then evaluates both frozen encoders with `cmlm eval` (evaluation.runner) on
STS-B dev, SICK-R, CR, MRPC, TREC and SST-2, and prints one table and a
final JSON line. PCR (section 5.2) removes a language's own component from
multilingual embeddings; with one language it does not apply to these
English tasks, so no "+PCR" rows are run.

  python experiments/cmlm_vs_mlm.py [--steps=2000] [--batch_size=32]
      [--work_dir=runs/cmlm_vs_mlm] [--max_examples=N]
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import legacy_keras  # noqa: E402,F401  (selects Keras 2 before TensorFlow loads)

from evaluation import runner  # noqa: E402
from evaluation.task_data import EvalOptions  # noqa: E402
from experiments import cmlm_experiments  # noqa: E402
from experiments import registry  # noqa: E402,F401  (registers experiments)
from official.core import exp_factory  # noqa: E402
from training import train  # noqa: E402

TASKS = ("sts-b", "sick-r", "cr", "mrpc", "trec", "sst2")


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--steps", type=int, default=2000)
  parser.add_argument("--batch_size", type=int, default=32,
                      help="CMLM's batch; MLM gets twice this.")
  parser.add_argument("--work_dir", default=os.path.join(
      cmlm_experiments.REPO_ROOT, "runs", "cmlm_vs_mlm"))
  parser.add_argument("--max_examples", type=int, default=None,
                      help="At most this many examples per eval split.")
  args = parser.parse_args(argv)
  if args.steps < 1 or args.batch_size < 1:
    parser.error("--steps and --batch_size must be 1 or more.")
  return args


def experiment(condition: bool, steps: int, batch_size: int):
  """cmlm/tiny, with or without the conditioning, at equal encoder compute."""
  params = exp_factory.get_exp_config("cmlm/tiny")
  batch = batch_size if condition else 2 * batch_size
  params.override({
      "task": {"objectives": {"cmlm": {
          "condition": condition,
          "train_data": {"global_batch_size": batch}}}},
      "trainer": {"train_steps": steps, "checkpoint_interval": steps,
                  "validation_interval": steps,
                  "optimizer_config": {"learning_rate": {"polynomial": {
                      "decay_steps": steps}}}}})
  return params


def main(argv=None):
  args = parse_args(argv)
  start = time.perf_counter()
  reports = {}
  for name, condition in (("CMLM", True), ("MLM", False)):
    model_dir = os.path.join(args.work_dir, name.lower())
    params = experiment(condition, args.steps, args.batch_size)
    print(f"== {name}: {args.steps} steps, batch "
          f"{params.task.objectives.cmlm.train_data.global_batch_size}",
          flush=True)
    train.run(params, model_dir, mode="train")
    options = EvalOptions(report_dir=os.path.join(model_dir, "eval"),
                          max_examples=args.max_examples)
    reports[name] = runner.evaluate(model_dir, TASKS, options)
  figures = {name: {task: round(result["tasks"][task][
      result["tasks"][task]["headline"]], 2)
                    for task in TASKS if task in result["tasks"]}
             for name, result in reports.items()}
  print(f"\nCMLM vs MLM, equal encoder compute ({args.steps} steps; CMLM "
        f"batch {args.batch_size}, MLM batch {2 * args.batch_size}):")
  print("model " + " ".join(f"{task:>7}" for task in TASKS))
  for name, values in figures.items():
    print(f"{name:<5} " + " ".join(f"{values.get(task, float('nan')):7.2f}"
                                   for task in TASKS))
  print(f"({(time.perf_counter() - start) / 60:.1f} min)")
  print(json.dumps({"steps": args.steps, "cmlm_batch": args.batch_size,
                    "mlm_batch": 2 * args.batch_size, "figures": figures}))


if __name__ == "__main__":
  main()
