"""What checking for Ctrl-C / SIGTERM between steps costs.

In one process the trainer runs a loop of `trainer.steps_per_loop` steps as
a Python loop over the compiled step, checking the stop flag before each
step (`training/trainer.py`, `stops_between_steps`); orbit's own loop is one
compiled `tf.while_loop`, which can stop only when the loop ends. Trains
cmlm/tiny (its own size: 2 layers, 128 wide, 48 tokens, batch 32) for the
same steps both ways, alternating, and prints the median ms per step of
each and their ratio, then one JSON line.

  python benchmarks/stop_check_loop.py [--steps=300 --steps_per_loop=100]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from cmlm import registry_imports  # noqa: E402,F401  (registers everything)
from cmlm.training import train  # noqa: E402
from cmlm.training import trainer  # noqa: E402
from official.core import exp_factory  # noqa: E402


def parse_args():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--steps", type=int, default=300)
  parser.add_argument("--steps_per_loop", type=int, default=100)
  parser.add_argument("--repeats", type=int, default=3)
  return parser.parse_args()


def seconds_per_step(args, between_steps: bool) -> float:
  """Trains a fresh run; the time of its loops after the first, per step."""
  params = exp_factory.get_exp_config("cmlm/tiny")
  params.override({"trainer": {
      "train_steps": args.steps, "steps_per_loop": args.steps_per_loop,
      "summary_interval": args.steps_per_loop,
      "checkpoint_interval": args.steps, "validation_interval": args.steps}})
  trainer.SentenceEncoderTrainer.stops_between_steps = property(
      lambda self: between_steps)
  ends = []
  original = trainer.SentenceEncoderTrainer.train_loop_end

  def timed_loop_end(self):
    logs = original(self)
    ends.append(time.perf_counter())
    return logs
  trainer.SentenceEncoderTrainer.train_loop_end = timed_loop_end
  try:
    with tempfile.TemporaryDirectory() as model_dir:
      train.run(params, model_dir)
  finally:
    trainer.SentenceEncoderTrainer.train_loop_end = original
  return (ends[-1] - ends[0]) / (args.steps_per_loop * (len(ends) - 1))


def main():
  args = parse_args()
  python_loop, while_loop = [], []
  for _ in range(args.repeats):
    python_loop.append(seconds_per_step(args, True))
    while_loop.append(seconds_per_step(args, False))
    print(f"Python loop checking between steps: {python_loop[-1] * 1e3:.2f} "
          f"ms/step; orbit's tf.while_loop: {while_loop[-1] * 1e3:.2f} "
          "ms/step", flush=True)
  python_s, while_s = (statistics.median(v) for v in (python_loop,
                                                      while_loop))
  print(json.dumps(dict(python_loop_step_s=round(python_s, 6),
                        while_loop_step_s=round(while_s, 6),
                        ratio=round(python_s / while_s, 3),
                        steps=args.steps, steps_per_loop=args.steps_per_loop,
                        repeats=args.repeats)))


if __name__ == "__main__":
  main()
