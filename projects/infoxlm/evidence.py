"""Evidence at small scale for InfoXLM's XLCo (Chi et al. 2021, sections 3-4).

With the multilingual data and vocabulary of experiments/multilingual_evidence
(UDHR text of English and the 8 Tatoeba languages; gettext en-xx and
Multi30k en-de/fr pairs; a cased 12k WordPiece vocabulary), trains one
starting encoder (cmlm/tiny's: 2 layers, hidden 128) with MMLM for
`--start_steps`, then from it, `--steps` steps each of
  * TLM + MMLM,
  * TLM + MMLM + XLCo (momentum `--momentum`),
  * TLM + MMLM + XLCo with m = 0 (the key encoder is the query encoder),
  * TLM + MMLM + XLCo on the last layer's mean (the representation that
    `cmlm eval` scores) instead of layer 1's [CLS],
  * the garden's CMLM + BR, S3 (CMLM for half the steps, then CMLM + 0.2 BR),
and scores each with `python -m cmlm eval --tasks=tatoeba` (top-1 retrieval
xx->eng and eng->xx over the 8 languages of ../shared/data/eval/tatoeba).
Prints one table and a final JSON line. A run directory that already holds
its final checkpoint is not trained again (train.run resumes at its end).

  python projects/infoxlm/evidence.py [--steps=600] [--start_steps=300]
      [--momentum=0.99] [--work_dir=runs/infoxlm_evidence]

The momentum: the key encoder's time constant is 1/(1-m) updates. With a
few hundred steps, the paper's 0.999 (1k steps) or the code's 0.9999 (10k)
would leave the key encoder close to the starting encoder for the whole run
(after 600 steps 0.999 still weighs the start by 0.999^600 = 55%); 0.99
(100 steps) lets the keys follow the training while staying ~6 times slower
than it, the regime the paper's 0.999 has over its 150k steps.
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


from cmlm.experiments import cmlm_experiments  # noqa: E402
from cmlm.experiments import multilingual_evidence  # noqa: E402
from cmlm.projects.infoxlm import registry_imports  # noqa: F401  (registers the project)
from official.core import exp_factory  # noqa: E402
from cmlm.training import train  # noqa: E402

LANGUAGES = tuple(multilingual_evidence.LANGUAGES)


def parse_args():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--steps", type=int, default=600)
  parser.add_argument("--start_steps", type=int, default=300)
  parser.add_argument("--momentum", type=float, default=0.99)
  parser.add_argument("--queue_size", type=int, default=4096)
  parser.add_argument("--vocab_size", type=int, default=12000)
  parser.add_argument("--work_dir", default=os.path.join(
      cmlm_experiments.REPO_ROOT, "runs", "infoxlm_evidence"))
  parser.add_argument("--shared_data", default=multilingual_evidence.SHARED)
  return parser.parse_args()


def infoxlm_params(corpora, bitext_path, vocab_path, steps, weights,
                   momentum, queue_size, init_checkpoint="", **xlco):
  """infoxlm/tiny on the evidence data; `weights` {mmlm, tlm, xlco};
  `xlco` overrides more of XLCo's settings."""
  params = exp_factory.get_exp_config("infoxlm/tiny")
  monolingual = ",".join(f"{code}={path}" for code, path in corpora.items())
  data = lambda path: {"input_path": path, "header": False}
  params.override({
      "task": {
          "init_checkpoint": init_checkpoint,
          "model": {"encoder": {"vocab_size": cmlm_experiments.vocab_size_of(
              vocab_path)}},
          "tokenization": {"vocab_file": vocab_path, "lower_case": False,
                           "seq_length": 48},
          "objectives": {
              "mmlm": {"weight": weights["mmlm"],
                       "train_data": data(monolingual)},
              "tlm": {"weight": weights["tlm"],
                      "train_data": data(bitext_path)},
              "xlco": {"weight": weights["xlco"], "momentum": momentum,
                       "queue_size": queue_size,
                       "train_data": data(bitext_path), **xlco}}},
      "trainer": {"train_steps": steps, "checkpoint_interval": steps,
                  "steps_per_loop": min(100, steps),
                  "summary_interval": min(100, steps),
                  "optimizer_config": {"learning_rate": {"polynomial": {
                      "decay_steps": steps}}}}})
  return params


def unique_vocab(path: str) -> str:
  """A copy of `path` without its repeated tokens (first kept).

  multilingual_evidence's builder can write a token with a trailing
  no-break space ('s' + U+00A0) beside the same token without it; the
  vocabulary reader strips both to one token and refuses the file.
  """
  cleaned = path.replace(".txt", "_unique.txt")
  seen, tokens = set(), []
  with open(path, encoding="utf-8") as f:
    for line in f:
      token = line.strip()
      if token and token not in seen:
        seen.add(token)
        tokens.append(token)
  with open(cleaned, "w", encoding="utf-8") as f:
    f.writelines(t + "\n" for t in tokens)
  return cleaned


def tatoeba(model_dir, report_dir, shared):
  """`python -m cmlm eval --tasks=tatoeba` on a run: {lang: (xx->eng,
  eng->xx)} top-1 accuracies in [0, 1]."""
  command = [sys.executable, "-m", "cmlm", "eval", f"--model={model_dir}",
             "--tasks=tatoeba", f"--report_dir={report_dir}",
             f"--data_dir={os.path.join(shared, 'eval')}"]
  subprocess.run(command, check=True, cwd=cmlm_experiments.REPO_ROOT)
  with open(os.path.join(report_dir, "report.json"), encoding="utf-8") as f:
    report = json.load(f)
  return report


def main():
  args = parse_args()
  start = time.perf_counter()
  work_dir = args.work_dir
  corpora, bitext_path, pairs, _ = multilingual_evidence.gather_data(
      args.shared_data, work_dir)
  vocab_path = unique_vocab(multilingual_evidence.build_vocab(
      corpora, pairs, args.vocab_size, work_dir))
  print(f"{len(pairs)} translation pairs; vocabulary {vocab_path}",
        flush=True)
  common = dict(corpora=corpora, bitext_path=bitext_path,
                vocab_path=vocab_path, queue_size=args.queue_size)
  start_dir = os.path.join(work_dir, "start_mmlm")
  train.run(infoxlm_params(steps=args.start_steps, momentum=args.momentum,
                           weights=dict(mmlm=1, tlm=0, xlco=0), **common),
            start_dir)
  all_three = dict(mmlm=1, tlm=1, xlco=1)
  arms = {
      "TLM+MMLM": (dict(mmlm=1, tlm=1, xlco=0), args.momentum, {}),
      "TLM+MMLM+XLCo": (all_three, args.momentum, {}),
      "XLCo m=0": (all_three, 0.0, {}),
      # XLCo on the representation `cmlm eval` scores (the last layer,
      # mean-pooled) rather than on layer 1's [CLS].
      "XLCo last,mean": (all_three, args.momentum,
                         dict(layer=2, pooling="mean")),
  }
  run_dirs = {}
  for name, (weights, momentum, xlco) in arms.items():
    run_dirs[name] = os.path.join(work_dir, name.replace("+", "_").replace(
        " ", "_").replace("=", "").replace(",", "_"))
    print(f"\n== {name} ({args.steps} steps from {start_dir})", flush=True)
    train.run(infoxlm_params(steps=args.steps, momentum=momentum,
                             weights=weights, init_checkpoint=start_dir,
                             **common, **xlco), run_dirs[name])
  print(f"\n== CMLM+BR (S3, {args.steps} steps from {start_dir})", flush=True)
  half = args.steps // 2
  stage1 = os.path.join(work_dir, "s3_stage1")
  train.run(multilingual_evidence.experiment(
      corpora, bitext_path, vocab_path, half, 1.0, 0.0,
      init_checkpoint=start_dir), stage1)
  run_dirs["CMLM+BR (S3)"] = os.path.join(work_dir, "s3_stage2")
  train.run(multilingual_evidence.experiment(
      corpora, bitext_path, vocab_path, args.steps - half, 1.0, 0.2,
      init_checkpoint=stage1), run_dirs["CMLM+BR (S3)"])
  run_dirs["start (MMLM)"] = start_dir

  results = {}
  for name, run_dir in run_dirs.items():
    report = tatoeba(run_dir, os.path.join(run_dir, "eval"),
                     args.shared_data)
    results[name] = report
  summary, per_language = {}, {}
  print(f"\nTatoeba top-1 accuracy, % (xx->eng / eng->xx), {args.steps} "
        f"steps each from one MMLM start ({args.start_steps} steps), "
        f"m={args.momentum}:")
  print(f"{'model':<15} " + " ".join(f"{c:>11}" for c in LANGUAGES) +
        "     avg")
  for name, report in results.items():
    languages = report_languages(report)
    per_language[name] = languages
    average = sum(sum(v) / 2 for v in languages.values()) / len(languages)
    summary[name] = round(average, 2)
    print(f"{name:<15} " + " ".join(
        f"{languages[c][0]:5.1f}/{languages[c][1]:5.1f}" for c in LANGUAGES)
          + f" {average:7.2f}")
  print(f"({(time.perf_counter() - start) / 60:.1f} min)")
  print(json.dumps({"steps": args.steps, "start_steps": args.start_steps,
                    "momentum": args.momentum, "queue_size": args.queue_size,
                    "tatoeba_avg_top1": summary,
                    "per_language": per_language}))


def report_languages(report):
  """{lang: [xx->eng %, eng->xx %]} from `cmlm eval`'s report.json."""
  languages = report["tasks"]["tatoeba"]["languages"]
  return {code: [round(languages[code][key], 1)  # already in %
                 for key in ("xxx_to_eng", "eng_to_xxx")]
          for code in LANGUAGES}


if __name__ == "__main__":
  main()
