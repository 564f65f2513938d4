"""Evidence at small scale for MiSAD (Li et al. 2020): MLM alone vs MLM +
MiSAD from the same start, at equal steps, on the shipped English text.

  1. `python -m cmlm ngrams` marks the PMI n-grams of data/corpus_en
     (section 3.1; per file, top 3000, paper formula);
  2. from the same encoder (by default all-MiniLM-L6-v2, imported with
     sequence length 64; `--start=RUN` takes any run or import of ours), two
     runs of `misad/tiny` for `--steps` steps, same data order:
       * `mlm`: misad_weight=0, MLM alone on the marked sentences;
       * `misad`: MLM + MSE(E^w + E^R, E^S) at equal weights, w chosen by
         the lowest MLM score (sections 3.2-3.3);
  3. word-level analogy (Mikolov's questions-words.txt, the copy gensim
     ships: 3CosAdd among the file's 905 words) and STS-B dev (Spearman x
     100) of the start and of both runs.

Prints one table and a final JSON line.

  python projects/misad/evidence.py [--steps=150] [--batch_size=16]
      [--start=RUN] [--work_dir=runs/misad_evidence] [--seed=1]
"""
import argparse
import json
import os
import sys
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO_ROOT)


from cmlm.projects.misad import pmi_ngrams  # noqa: E402
from cmlm.projects.misad import analogy_readers  # noqa: E402
from cmlm.experiments.command_runs import cmlm  # noqa: E402
from cmlm.experiments.command_runs import import_minilm  # noqa: E402

CORPUS = os.path.join(REPO_ROOT, "data", "corpus_en")
STS_DIR = os.path.join(os.path.dirname(REPO_ROOT), "shared", "data", "eval",
                       "sts", "STSBenchmark")


def parse_args():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--steps", type=int, default=150)
  parser.add_argument("--batch_size", type=int, default=16)
  parser.add_argument("--learning_rate", type=float, default=5e-5)
  parser.add_argument("--start", default="", help="A run or import to "
                      "start from (default: all-MiniLM-L6-v2, imported).")
  parser.add_argument("--work_dir", default=os.path.join(
      REPO_ROOT, "runs", "misad_evidence"))
  parser.add_argument("--sts_max_examples", type=int, default=None)
  parser.add_argument("--seed", type=int, default=1, help="Data order "
                      "(the same for both runs).")
  return parser.parse_args()


def train(start, ngrams, model_dir, misad_weight, args):
  overrides = ",".join([
      f"task.init_checkpoint={start}",
      f"task.objectives.misad.train_data.input_path={ngrams}",
      f"task.objectives.misad.train_data.global_batch_size={args.batch_size}",
      f"task.objectives.misad.train_data.seed={args.seed}",
      f"task.objectives.misad.misad_weight={misad_weight}",
      f"trainer.train_steps={args.steps}",
      f"trainer.optimizer_config.learning_rate.polynomial"
      f".initial_learning_rate={args.learning_rate}",
      f"trainer.optimizer_config.learning_rate.polynomial"
      f".decay_steps={args.steps}",
      f"trainer.optimizer_config.warmup.linear.warmup_steps="
      f"{max(1, args.steps // 10)}",
      f"trainer.steps_per_loop={max(1, args.steps // 5)}",
      f"trainer.summary_interval={max(1, args.steps // 5)}",
      f"trainer.checkpoint_interval={args.steps}"])
  start_time = time.perf_counter()
  cmlm("train", "--experiment=misad/tiny", "--mode=train",
       f"--model_dir={model_dir}", f"--params_override={overrides}")
  return time.perf_counter() - start_time


def evaluate(model, report_dir, analogy_path, sts_max_examples):
  arguments = ["eval", f"--model={model}", "--tasks=word_analogy,sts-b",
               f"--task_data=word_analogy={analogy_path},sts-b={STS_DIR}",
               f"--report_dir={report_dir}"]
  if sts_max_examples:
    arguments.append(f"--max_examples={sts_max_examples}")
  cmlm(*arguments)
  with open(os.path.join(report_dir, "report.json"), encoding="utf-8") as f:
    tasks = json.load(f)["tasks"]
  analogy = tasks["word_analogy"]
  return {"word_analogy": analogy["accuracy"],
          "word_analogy_semantic": analogy["kinds"]["semantic"]["accuracy"],
          "word_analogy_syntactic": analogy["kinds"]["syntactic"]["accuracy"],
          "sts_b_dev": tasks["sts-b"]["spearman"]}


def main():
  args = parse_args()
  analogy_path = analogy_readers.gensim_questions_words()
  if not analogy_path:
    sys.exit("Mikolov's questions-words.txt comes from gensim's test data: "
             "pip install -r requirements-test.txt.")
  os.makedirs(args.work_dir, exist_ok=True)
  ngrams = os.path.join(args.work_dir, "ngrams_en.txt")
  if not os.path.exists(ngrams):
    pmi_ngrams.extract_ngrams(CORPUS, ngrams)
  start = args.start or os.path.join(args.work_dir, "start")
  if not args.start and not os.path.exists(os.path.join(start,
                                                        "params.yaml")):
    import_minilm(start)
  seconds = {}
  for name, weight in (("mlm", 0.0), ("misad", 1.0)):
    model_dir = os.path.join(args.work_dir, name)
    if not os.path.exists(os.path.join(model_dir, f"ckpt-{args.steps}.index")):
      seconds[name] = train(start, ngrams, model_dir, weight, args)
  results = {}
  for name, model in (("start", start),
                      ("mlm", os.path.join(args.work_dir, "mlm")),
                      ("misad", os.path.join(args.work_dir, "misad"))):
    results[name] = evaluate(model, os.path.join(args.work_dir,
                                                 f"eval_{name}"),
                             analogy_path, args.sts_max_examples)
  print(f"\nMiSAD evidence: {args.steps} steps of batch {args.batch_size} "
        f"from {start}")
  print("| model | word analogy | semantic | syntactic | STS-B dev |")
  print("|---|---:|---:|---:|---:|")
  for name, r in results.items():
    print(f"| {name} | {r['word_analogy']:.2f} | "
          f"{r['word_analogy_semantic']:.2f} | "
          f"{r['word_analogy_syntactic']:.2f} | {r['sts_b_dev']:.2f} |")
  print(json.dumps({"steps": args.steps, "batch_size": args.batch_size,
                    "seed": args.seed,
                    "learning_rate": args.learning_rate, "start": start,
                    "train_seconds": seconds, "results": results}))


if __name__ == "__main__":
  main()
