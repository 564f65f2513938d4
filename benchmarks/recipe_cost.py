"""What the README's own-corpus recipes cost: steps/s and projected hours.

Runs `python -m cmlm train` as the README's recipe does (the experiment, its
YAML copy, a vocabulary and a corpus) for a few loops of each experiment,
times the progress line of each loop as it prints (each loop's seconds per
step on stderr as it comes), leaves out the first loop (tracing, the first
batches), and projects the experiment's full step count:

  * cmlm/en_workstation at its own batch (32): measured, then projected over
    its 4,000 steps;
  * cmlm/en_base at a reduced batch (`--base_batch`; its 2,048 would take
    hours a step on a CPU): the seconds per example measured there, times
    2,048, is an extrapolation (linear in the batch; a CPU is no faster per
    example at a larger batch once its cores are busy), labelled as one in
    the results file, then projected over 1,000,000 steps.

The vocabulary is the embedded one padded with [unused] tokens to
`--vocab_size` (the README's recipe builds 30,000): the embedding table and
the masked-LM softmax are the recipe's size. The corpus is the embedded one.
Writes `--output` (docs/results/recipe_cost.json) with the command, commit,
CPU model, ISA flags, cores, date and the 1-minute load before and after;
`quiet` says whether the load before was low enough for the figures to be
speed figures: `experiments/figures.py` renders them only then, and each
recipe's `full_run` (the words a page quotes) says its time only then.
Prints the figures and one JSON line.

  python benchmarks/recipe_cost.py [--workstation_steps=200 --base_steps=20
      --base_batch=16 --steps_per_loop=10]
"""
import argparse
import datetime
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
sys.path.insert(0, REPO_ROOT)

from cmlm.data_pipelines.atomic_file import write_json  # noqa: E402
from cmlm.experiments import unit_provenance  # noqa: E402

CORPUS = "data/corpus_en"
VOCAB = os.path.join(REPO_ROOT, "data", "vocab_en_uncased.txt")
PROGRESS = re.compile(r"^step (\d+)/(\d+) ")
QUIET_LOAD = unit_provenance.QUIET_LOAD
# (experiment, its YAML copy, its global batch, its train_steps)
RECIPES = {"cmlm/en_workstation": ("cmlm_en_workstation.yaml", 32, 4_000),
           "cmlm/en_base": ("cmlm_en_base.yaml", 2048, 1_000_000)}


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--workstation_steps", type=int, default=200,
                      help="steps of cmlm/en_workstation timed (after the "
                      "first loop)")
  parser.add_argument("--base_steps", type=int, default=20,
                      help="steps of cmlm/en_base timed (after the first loop)")
  parser.add_argument("--base_batch", type=int, default=16,
                      help="the batch cmlm/en_base is measured at")
  parser.add_argument("--steps_per_loop", type=int, default=10,
                      help="steps a loop (at most the steps timed)")
  parser.add_argument("--vocab_size", type=int, default=30_000)
  parser.add_argument("--output", default=os.path.join(
      REPO_ROOT, "docs", "results", "recipe_cost.json"))
  return parser.parse_args(argv)


def padded_vocabulary(directory: str, size: int) -> str:
  """The embedded vocabulary, padded with [unusedN] tokens to `size`."""
  with open(VOCAB, encoding="utf-8") as f:
    tokens = f.read().splitlines()
  tokens += [f"[unused{i}]" for i in range(max(0, size - len(tokens)))]
  path = os.path.join(directory, "vocab.txt")
  with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join(tokens) + "\n")
  return path


def train_command(experiment, batch, steps, loop, vocab, model_dir):
  """The README's `train`, with the steps (and the batch) to time."""
  yaml_file, recipe_batch, _ = RECIPES[experiment]
  override = [f"task.tokenization.vocab_file={vocab}",
              f"task.objectives.cmlm.train_data.input_path={CORPUS}",
              f"trainer.train_steps={steps}", f"trainer.steps_per_loop={loop}",
              f"trainer.summary_interval={loop}",
              f"trainer.checkpoint_interval={steps}"]
  if batch != recipe_batch:
    override.append(f"task.objectives.cmlm.train_data.global_batch_size="
                    f"{batch}")
  return ["python", "-m", "cmlm", "train", f"--experiment={experiment}",
          f"--config_file=experiments/configs/{yaml_file}",
          f"--params_override={','.join(override)}", f"--model_dir={model_dir}"]


def encoder_shape(experiment) -> str:
  """"4 x 256, 128 tokens": the layers, hidden size and sequence length of
  the experiment's YAML copy."""
  path = os.path.join(REPO_ROOT, "experiments", "configs",
                      RECIPES[experiment][0])
  with open(path, encoding="utf-8") as f:
    task = yaml.safe_load(f)["task"]
  encoder = task["model"]["encoder"]
  return (f"{encoder['num_layers']} x {encoder['hidden_size']}, "
          f"{task['tokenization']['seq_length']} tokens")


def seconds_per_step(command) -> list:
  """Runs `command`; the seconds per step of each loop but the first."""
  process = subprocess.Popen([sys.executable, *command[1:]], cwd=REPO_ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, env=dict(os.environ,
                                                 PYTHONPATH=REPO_ROOT))
  previous, per_step, lines = None, [], []
  for line in process.stdout:
    lines.append(line)
    match = PROGRESS.match(line)
    if not match:
      continue
    now, step = time.perf_counter(), int(match.group(1))
    if previous is not None:
      per_step.append((now - previous[0]) / (step - previous[1]))
      print(f"  step {step}/{match.group(2)}: {per_step[-1]:.3f} s/step",
            file=sys.stderr, flush=True)
    else:
      print(f"  step {step}/{match.group(2)}: the first loop, not timed",
            file=sys.stderr, flush=True)
    previous = (now, step)
  if process.wait():
    raise SystemExit(f"train failed with status {process.returncode}:\n"
                     + "".join(lines[-20:]))
  if not per_step:
    raise SystemExit("Too few loops to time: raise the steps.")
  return per_step


def measure(experiment, batch, timed_steps, loop, vocab, work) -> dict:
  """One experiment's figures: measured at `batch`, projected (and, when
  `batch` is not the recipe's, extrapolated) to the recipe."""
  _, recipe_batch, recipe_steps = RECIPES[experiment]
  loop = min(loop, timed_steps)
  loops = max(1, -(-timed_steps // loop))
  command = train_command(experiment, batch, loop * (loops + 1), loop, vocab,
                          os.path.join(work, experiment.replace("/", "_")))
  print(f"{experiment} at batch {batch}: {loops + 1} loops of {loop} steps, "
        "the first not timed", file=sys.stderr, flush=True)
  step_s = statistics.median(seconds_per_step(command))
  shown = " ".join(command).replace(work, "WORK")
  row = {"train_command": shown, "encoder": encoder_shape(experiment),
         "measured_batch": batch,
         "steps_timed": loops * loop, "loops_timed": loops,
         "measured_step_s": round(step_s, 4),
         "measured_steps_per_s": round(1 / step_s, 4),
         "seconds_per_example": round(step_s / batch, 5),
         "batch": recipe_batch, "train_steps": recipe_steps,
         "examples": recipe_batch * recipe_steps,
         "extrapolated": batch != recipe_batch}
  recipe_step_s = step_s * recipe_batch / batch
  row["steps_per_s"] = round(1 / recipe_step_s, 6)
  row["projected_hours"] = round(recipe_step_s * recipe_steps / 3600, 1)
  if row["extrapolated"]:
    row["extrapolation"] = (
        f"measured at batch {batch}; seconds per example x {recipe_batch} "
        "is the step, linear in the batch")
  print(f"{experiment}: {step_s:.3f} s/step at batch {batch}"
        + (f" (extrapolated to batch {recipe_batch}: {recipe_step_s:.1f} "
           "s/step)" if row["extrapolated"] else "")
        + f"; {recipe_steps:,} steps: {row['projected_hours']:,} h",
        flush=True)
  return row


def full_run(row, quiet: bool, cores: int) -> str:
  """What a page says of a recipe's full run, in words: its projected time
  from a quiet machine, else that there is none yet."""
  if not quiet:
    return "not yet measured on a quiet machine"
  hours = row["projected_hours"]
  said = (f"~{hours:,.1f} h" if hours < 48
          else f"~{hours:,.0f} h, {hours / 24:,.0f} days")
  said += f" on {cores} CPU cores"
  if row["extrapolated"]:
    said += f", extrapolated from batch {row['measured_batch']}"
  return said


def main(argv=None):
  args = parse_args(argv)
  cores = os.cpu_count()
  load_before = round(os.getloadavg()[0], 2)
  started = datetime.datetime.now(datetime.timezone.utc)
  # The code the train commands load: the checkout as it is at the start.
  commit, modified = (unit_provenance.head_commit(),
                      unit_provenance.modified_code())
  recipes = {}
  with tempfile.TemporaryDirectory() as work:
    vocab = padded_vocabulary(work, args.vocab_size)
    recipes["cmlm/en_workstation"] = measure(
        "cmlm/en_workstation", RECIPES["cmlm/en_workstation"][1],
        args.workstation_steps, args.steps_per_loop, vocab, work)
    recipes["cmlm/en_base"] = measure(
        "cmlm/en_base", args.base_batch, args.base_steps,
        args.steps_per_loop, vocab, work)
  load_after = round(os.getloadavg()[0], 2)
  result = {
      "command": " ".join(["python", "benchmarks/recipe_cost.py",
                           *sys.argv[1:]] if argv is None else
                          ["python", "benchmarks/recipe_cost.py", *argv]),
      "commit": commit,
      "code_modified": modified,
      "commit_note": (f"with uncommitted changes to {', '.join(modified)}"
                      if modified else None),
      "cpu": unit_provenance.cpu_model(),
      "cpu_flags": [f for f, on in unit_provenance.isa_flags().items() if on],
      "cores": cores, "date": started.isoformat(timespec="seconds"),
      "load": f"1-minute load {load_before} before, {load_after} after",
      "load_1min_before": load_before, "load_1min_after": load_after,
      "quiet": load_before < QUIET_LOAD,
      "quiet_rule": f"1-minute load before below {QUIET_LOAD}",
      "vocab_size": args.vocab_size, "corpus": CORPUS, "recipes": recipes}
  for row in recipes.values():
    row["full_run"] = full_run(row, result["quiet"], cores)
  os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
  write_json(args.output, result)
  if not result["quiet"]:
    print(f"The load before ({load_before}, {cores} cores) was not quiet: "
          "the figures are not speed figures.", flush=True)
  print(json.dumps(result))


if __name__ == "__main__":
  main()
