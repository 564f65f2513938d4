"""Evidence at small scale for CMLM-CSE vs SimCSE (cmlm_cse_2023.txt).

From each starting encoder, (a) all-MiniLM-L6-v2 imported with `cmlm import`
and (b) a `cmlm/tiny` run of the garden, trains at equal steps, batch and
sequence length (32), on the de-duplicated sentences of shipped English text
(not STS-B):
  * SimCSE (`simcse/...`), one run per seed;
  * CMLM-CSE (`cmlm_cse/...`, lambda 0.005, 15% masking), one run per seed;
  * SimCSE with dropout off (the collapse check), one run per seed;
and evaluates STS-B dev and SICK-R (SICK_trial.txt; Spearman x 100,
`cmlm eval`) before and after, both at the training length (32 tokens): the
"before" figure is the starting checkpoint read through a trained run's
config (`cmlm eval --model=RUN --checkpoint=START_CKPT`), so before and after
differ only by the training. Runs go seed by seed (every variant of seed 1,
then seed 2...), so a cut-off invocation leaves balanced seeds. Prints one
table (mean +- sample standard deviation over seeds, and each seed) and a
final JSON line; `--report_only` tabulates what is finished without training.
Finished runs and reports in `--work_dir` are reused, so an interrupted
invocation resumes.

  python projects/simcse_cse/evidence.py --minilm=runs/minilm --cmlm=runs/cmlm_tiny_for_cse
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON = sys.executable
TASKS = ("sts-b", "sick-r")
DEFAULT_CORPUS = os.path.join(ROOT, "data", "corpus_en")


def _run(args, log_path):
  """Runs `python -m cmlm ARGS` at low priority; fails loudly with its log."""
  started = time.time()
  with open(log_path, "w", encoding="utf-8") as log:
    code = subprocess.call(["nice", "-n", "19", PYTHON, "-m", "cmlm", *args],
                           cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
  if code:
    raise SystemExit(f"cmlm {' '.join(args)} failed (exit {code}); see "
                     f"{log_path}")
  return time.time() - started


def evaluate(model, report_dir, checkpoint=None, report_only=False):
  """{task: Spearman x 100} of `model` (a run directory), cached.

  With `checkpoint`, that checkpoint's `encoder` item read through `model`'s
  config (tokenization, length). None when `report_only` and not cached.
  """
  path = os.path.join(report_dir, "report.json")
  if not os.path.exists(path):
    if report_only:
      return None
    os.makedirs(report_dir, exist_ok=True)
    _run(["eval", f"--model={model}", f"--tasks={','.join(TASKS)}",
          f"--report_dir={report_dir}"] +
         ([f"--checkpoint={checkpoint}"] if checkpoint else []),
         os.path.join(report_dir, "eval.log"))
  with open(path, encoding="utf-8") as f:
    tasks = json.load(f)["tasks"]
  return {task: tasks[task]["spearman"] for task in TASKS}


def train(experiment, model_dir, overrides):
  """Trains unless `model_dir` already holds the final checkpoint."""
  if os.path.exists(os.path.join(model_dir, "done")):
    return
  os.makedirs(model_dir, exist_ok=True)
  seconds = _run(["train", f"--experiment={experiment}",
                  f"--model_dir={model_dir}", "--strategy=one_device",
                  "--params_override=" + ",".join(overrides)],
                 os.path.join(model_dir, "train.log"))
  with open(os.path.join(model_dir, "done"), "w") as f:
    f.write(f"{seconds:.0f}\n")


def variants(seeds):
  """(label, family, seed, dropout) of every run from one encoder, by seed."""
  for seed in seeds:
    yield "simcse", "simcse", seed, True
    yield "cmlm_cse", "cmlm_cse", seed, True
    yield "simcse_no_dropout", "simcse", seed, False


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--minilm", default="runs/minilm",
                      help="the imported all-MiniLM-L6-v2 run")
  parser.add_argument("--cmlm", default="runs/cmlm_tiny_for_cse",
                      help="a cmlm/tiny run of the garden")
  parser.add_argument("--corpus", default=DEFAULT_CORPUS,
                      help="running English text (read as 'corpus')")
  parser.add_argument("--minilm_steps", type=int, default=100)
  parser.add_argument("--cmlm_steps", type=int, default=300)
  parser.add_argument("--batch_size", type=int, default=32)
  parser.add_argument("--minilm_seeds", default="1,2,3")
  parser.add_argument("--cmlm_seeds", default="1,2,3")
  parser.add_argument("--work_dir", default="runs/cse_evidence")
  parser.add_argument("--starts", default="minilm,cmlm_tiny",
                      help="which starting encoders, in this order")
  parser.add_argument("--report_only", action="store_true",
                      help="tabulate finished runs; train and evaluate none")
  args = parser.parse_args()
  seeds = {"minilm": [int(s) for s in args.minilm_seeds.split(",")],
           "cmlm_tiny": [int(s) for s in args.cmlm_seeds.split(",")]}
  starts = {"minilm": (args.minilm, "bert_base", args.minilm_steps, 3e-5),
            "cmlm_tiny": (args.cmlm, "tiny", args.cmlm_steps, 1e-4)}
  starts = {name: starts[name] for name in args.starts.split(",")}
  for name, (path, _, _, _) in starts.items():
    if not os.path.exists(os.path.join(path, "params.yaml")):
      raise SystemExit(f"--{name.split('_')[0]}={path} is not a run "
                       "directory (no params.yaml); see the docstring.")
  results = {}
  for start, (path, size, steps, learning_rate) in starts.items():
    work = os.path.join(args.work_dir, start)
    results[start] = {"steps": steps, "before": None, "runs": {}}
    for label, family, seed, dropout in variants(seeds[start]):
      model_dir = os.path.join(work, f"{label}_seed{seed}")
      data = f"task.objectives.{family}.train_data"
      overrides = [
          f"task.init_checkpoint={path}", f"trainer.train_steps={steps}",
          "trainer.steps_per_loop=50", "trainer.summary_interval=50",
          f"trainer.checkpoint_interval={steps}",
          f"trainer.validation_interval={steps}",
          # Equal steps: the last checkpoint is compared, no selection.
          "trainer.best_checkpoint_eval_metric=",
          "trainer.optimizer_config.learning_rate.polynomial."
          f"initial_learning_rate={learning_rate}",
          "trainer.optimizer_config.learning_rate.polynomial."
          f"decay_steps={steps}",
          f"{data}.input_path={args.corpus}", f"{data}.format=corpus",
          f"{data}.global_batch_size={args.batch_size}", f"{data}.seed={seed}",
          "task.tokenization.seq_length=32"]
      if not dropout:
        overrides += ["task.model.encoder.dropout_rate=0.0",
                      "task.model.encoder.attention_dropout_rate=0.0"]
      if args.report_only and not os.path.exists(
          os.path.join(model_dir, "done")):
        continue
      train(f"{family}/{size}", model_dir, overrides)
      if results[start]["before"] is None:
        # The start's encoder through this run's config: same length, vocab.
        results[start]["before"] = evaluate(
            model_dir, os.path.join(work, "before_len32"),
            checkpoint=tf_latest_checkpoint(path),
            report_only=args.report_only)
        if results[start]["before"] is not None:
          print(f"{start} before: {results[start]['before']}", flush=True)
      scores = evaluate(model_dir, os.path.join(model_dir, "eval"),
                        report_only=args.report_only)
      if scores is None:
        continue
      results[start]["runs"].setdefault(label, []).append(
          dict(seed=seed, **scores))
      print(f"{start} {label} seed {seed}: {scores}", flush=True)
  print_table(results)
  print(json.dumps(summary(results)))


def tf_latest_checkpoint(model_dir):
  """The latest checkpoint prefix of a run (its `checkpoint` file's)."""
  with open(os.path.join(model_dir, "checkpoint"), encoding="utf-8") as f:
    for line in f:
      if line.startswith("model_checkpoint_path:"):
        name = line.split(":", 1)[1].strip().strip('"')
        return name if os.path.isabs(name) else os.path.join(model_dir, name)
  raise SystemExit(f"{model_dir} holds no checkpoint.")


def _mean_spread(values):
  spread = statistics.stdev(values) if len(values) > 1 else 0.0
  return statistics.fmean(values), spread


def summary(results):
  out = {}
  for start, result in results.items():
    out[start] = {"steps": result["steps"], "before": result["before"]}
    for label, runs in result["runs"].items():
      out[start][label] = {task: dict(zip(
          ("mean", "std", "runs"),
          (*_mean_spread([r[task] for r in runs]), [r[task] for r in runs])))
                           for task in TASKS}
  return out


def print_table(results):
  print("\nSpearman x 100, STS-B dev and SICK-R (SICK_trial.txt), every "
        "sentence cut at 32 tokens (the training length); mean ± sample std "
        "over seeds (each seed).")
  print(f"\n| start | objective | steps | {' | '.join(TASKS)} |")
  print("|---|---|---:|" + "---:|" * len(TASKS))
  for start, result in results.items():
    before = " | ".join(
        f"{result['before'][t]:.2f}" if result["before"] else "not run"
        for t in TASKS)
    print(f"| {start} | (before) | 0 | {before} |")
    for label, runs in result["runs"].items():
      cells = []
      for task in TASKS:
        mean, spread = _mean_spread([r[task] for r in runs])
        each = ", ".join(f"{r[task]:.2f}" for r in runs)
        cells.append(f"{mean:.2f} ± {spread:.2f} ({each})" if len(runs) > 1
                     else f"{mean:.2f}")
      print(f"| {start} | {label} | {result['steps']} | "
            f"{' | '.join(cells)} |")


if __name__ == "__main__":
  main()
