"""Seconds per step of each stage of `cmlm stages --schedule=s3`, and the
ratio against the work each stage does.

Stage 1 trains CMLM alone, stage 2 CMLM + bitext retrieval (section 4.2), on
one small encoder and the same batch size. Per example, CMLM runs the encoder
over s1 (L tokens) and s2 (L + N: the N projected vectors appended), bitext
retrieval over a source and a target (L each), so stage 2 does
(2L + N + 2L) / (2L + N) times stage 1's encoder work (the masked-LM softmax
is stage 1's alone, so the real ratio is a little lower). Runs the command
end to end (input pipelines included), times the progress line of each loop
as it prints, leaves out each stage's first loop (tracing), and prints the
median seconds per step of each stage, their ratio and the work ratio, then
one JSON line.

  python benchmarks/stage_steps.py [--steps=120 --steps_per_loop=20 ...]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(REPO_ROOT, "data", "corpus_en")
VOCAB = os.path.join(REPO_ROOT, "data", "vocab_en_uncased.txt")
PROGRESS = re.compile(r"^step (\d+)/(\d+) ")


def parse_args():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--steps", type=int, default=120,
                      help="steps of each stage")
  parser.add_argument("--steps_per_loop", type=int, default=20)
  parser.add_argument("--seq_length", type=int, default=32)
  parser.add_argument("--batch_size", type=int, default=16)
  parser.add_argument("--hidden_size", type=int, default=64)
  parser.add_argument("--num_layers", type=int, default=2)
  parser.add_argument("--num_projections", type=int, default=15)
  return parser.parse_args()


def bitext_file(directory: str) -> str:
  """Translation pairs made of the embedded corpus's lines (a sentence and
  the next one): real text, so tokenization does real work."""
  lines = []
  for root, _, names in sorted(os.walk(CORPUS)):
    for name in sorted(names):
      if name.endswith(".txt") and name != "SOURCE.txt":
        with open(os.path.join(root, name), encoding="utf-8") as f:
          lines += [" ".join(line.split()) for line in f if line.strip()]
  lines = [line.replace("\t", " ") for line in lines[:4000]]
  path = os.path.join(directory, "pairs.tsv")
  with open(path, "w", encoding="utf-8") as f:
    f.writelines(f"{a}\t{b}\n" for a, b in zip(lines, lines[1:]))
  return path


def overrides(args, bitext_path: str) -> str:
  with open(VOCAB, encoding="utf-8") as f:
    vocab_size = sum(1 for _ in f)
  data = {"input_path": CORPUS, "global_batch_size": args.batch_size,
          "max_predictions_per_seq": max(2, args.seq_length // 5)}
  return yaml.safe_dump({
      "task": {"model": {"num_projections": args.num_projections,
                         "encoder": {
                             "vocab_size": vocab_size,
                             "hidden_size": args.hidden_size,
                             "num_layers": args.num_layers,
                             "num_attention_heads": 2,
                             "intermediate_size": 4 * args.hidden_size,
                             "max_position_embeddings":
                                 args.seq_length + args.num_projections}},
               "tokenization": {"vocab_file": VOCAB, "lower_case": True,
                                "seq_length": args.seq_length},
               "objectives": {
                   "cmlm": {"train_data": data,
                            "validation_data": dict(data, is_training=False)},
                   "bitext_retrieval": {"train_data": {
                       "input_path": bitext_path,
                       "global_batch_size": args.batch_size}}}},
      "trainer": {"steps_per_loop": args.steps_per_loop,
                  "checkpoint_interval": args.steps,
                  "summary_interval": args.steps_per_loop,
                  "optimizer_config": {"optimizer": {"type": "adamw"}}},
      "runtime": {"distribution_strategy": "one_device", "num_gpus": 0}})


def main():
  args = parse_args()
  with tempfile.TemporaryDirectory() as work:
    override_file = os.path.join(work, "tiny.yaml")
    with open(override_file, "w", encoding="utf-8") as f:
      f.write(overrides(args, bitext_file(work)))
    command = [sys.executable, "-m", "cmlm", "stages", "--schedule=s3",
               f"--model_dir={os.path.join(work, 'run')}",
               f"--config_file={override_file}",
               f"--stage_steps={args.steps},{args.steps}"]
    process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    stage, previous, per_step, lines = 0, None, {1: [], 2: []}, []
    for line in process.stdout:
      lines.append(line)
      match = PROGRESS.match(line)
      if not match:
        continue
      now, step = time.perf_counter(), int(match.group(1))
      if previous is None or step <= previous[1]:  # a stage's first loop
        stage += 1
        print(f"stage {stage}: step {step}, the first loop, not timed",
              file=sys.stderr, flush=True)
      elif stage in per_step:
        per_step[stage].append((now - previous[0]) / (step - previous[1]))
        print(f"stage {stage}: step {step}, "
              f"{per_step[stage][-1] * 1e3:.1f} ms/step", file=sys.stderr,
              flush=True)
      previous = (now, step)
    if process.wait():
      raise SystemExit(f"stages failed with status {process.returncode}:\n"
                       + "".join(lines[-20:]))
  if not (per_step[1] and per_step[2]):
    raise SystemExit("Too few loops to time: raise --steps.")
  stage1, stage2 = (statistics.median(per_step[k]) for k in (1, 2))
  length, n = args.seq_length, args.num_projections
  work_ratio = (4 * length + n) / (2 * length + n)
  print(f"stage 1 (CMLM): {stage1 * 1e3:.1f} ms/step; stage 2 (CMLM + "
        f"bitext): {stage2 * 1e3:.1f} ms/step; ratio {stage2 / stage1:.2f} "
        f"(encoder work ratio {work_ratio:.2f})", flush=True)
  print(json.dumps(dict(
      stage1_step_s=round(stage1, 5), stage2_step_s=round(stage2, 5),
      step_ratio=round(stage2 / stage1, 3), work_ratio=round(work_ratio, 3),
      loops_timed=[len(per_step[1]), len(per_step[2])],
      seq_length=length, batch_size=args.batch_size,
      hidden_size=args.hidden_size, num_layers=args.num_layers,
      num_projections=n)))


if __name__ == "__main__":
  main()
