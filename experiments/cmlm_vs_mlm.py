"""CMLM vs MLM at equal encoder compute (paper section 3.2, table 1's claim).

Trains the same small encoder (cmlm/demo's: cmlm/tiny with max pooling) on
the same text twice:
  * CMLM: s2's masked tokens predicted given the sentence vector of s1
    (batch B, T steps: two encoder passes per example, s1 and s2);
  * MLM: the same model with the conditioning removed
    (`task.objectives.cmlm.condition=false`: s2 read alone, same head, same
    masks), with batch 2B for the same T steps, so both run the encoder on
    2 x B x T sequences (CMLM's s2 pass also reads the N = 15 projections);
then evaluates both frozen encoders with `cmlm eval` (evaluation.runner) on
STS-B dev, SICK-R, CR, MRPC, TREC and SST-2, and on next-sequence retrieval
over the corpus' held-out pairs (the demo's measure: mean reciprocal rank of
each s1's true s2 among all held-out s2, `next-seq MRR`), and prints one
table and a final JSON line. Each model is evaluated twice: as it is, and "+PCR":
principal component removal (section 5.2), with the first principal
component (uncentred, as the paper fits a language's) of `--pcr_sample`
English sentences of the embedded corpus' training split removed from every
embedding before the task sees it; with one language this removes the
direction every English sentence shares.

  python experiments/cmlm_vs_mlm.py [--steps=2000] [--batch_size=32]
      [--work_dir=runs/cmlm_vs_mlm] [--max_examples=N] [--pcr_sample=1000]
      [--tasks=sts-b,sick-r,cr,mrpc,trec,sst2]
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


from cmlm import demo_measures  # noqa: E402
from cmlm.data_pipelines import corpus  # noqa: E402
from cmlm.evaluation import encoders  # noqa: E402
from cmlm.modeling.vectors import l2_normalize  # noqa: E402
from cmlm.evaluation import runner  # noqa: E402
from cmlm.evaluation.task_data import EvalOptions  # noqa: E402
from cmlm.experiments import cmlm_experiments  # noqa: E402
from cmlm.experiments import registry_imports  # noqa: E402,F401  (the core experiments)
from cmlm.modeling import principal_component_removal as pcr  # noqa: E402
from official.core import exp_factory  # noqa: E402
from cmlm.training import train  # noqa: E402

TASKS = ("sts-b", "sick-r", "cr", "mrpc", "trec", "sst2")
RETRIEVAL = "next-seq MRR"


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--steps", type=int, default=2000)
  parser.add_argument("--batch_size", type=int, default=32,
                      help="CMLM's batch; MLM gets twice this.")
  parser.add_argument("--work_dir", default=os.path.join(
      cmlm_experiments.REPO_ROOT, "runs", "cmlm_vs_mlm"))
  parser.add_argument("--max_examples", type=int, default=None,
                      help="At most this many examples per eval split.")
  parser.add_argument("--pcr_sample", type=int, default=1000,
                      help="Corpus sentences the +PCR component is fitted on.")
  parser.add_argument("--tasks", default=",".join(TASKS),
                      help="Comma-separated eval tasks (a subset of "
                      f"{','.join(TASKS)}).")
  args = parser.parse_args(argv)
  if args.steps < 1 or args.batch_size < 1:
    parser.error("--steps and --batch_size must be 1 or more.")
  if args.pcr_sample < 2:
    parser.error("--pcr_sample must be 2 or more (a principal component "
                 "needs two embeddings).")
  args.tasks = tuple(t.strip() for t in args.tasks.split(",") if t.strip())
  unknown = sorted(set(args.tasks) - set(TASKS))
  if unknown or not args.tasks:
    parser.error(f"--tasks must be some of {','.join(TASKS)}; got "
                 f"{','.join(unknown) or 'none'}.")
  return args


def pcr_sentences(data_config, sample_size: int):
  """The first `sample_size` sentences of the corpus' training split, to fit
  the English principal component on (no eval sentence among them)."""
  sentences = []
  for document in corpus.sentence_documents(corpus.read_documents(
      data_config.input_path, "train", data_config.heldout_percent)):
    sentences.extend(document)
    if len(sentences) >= sample_size:
      break
  return sentences[:sample_size]


def with_pcr(encoder, component):
  """`encoder` with `component` removed from every embedding (5.2)."""
  def encode(sentences, batch_size=256):
    return pcr.remove_component(encoder(sentences, batch_size), component)
  return encode


def next_sequence_mrr(encoder, pairs) -> float:
  """Mean reciprocal rank of each held-out pair's s2 among all held-out s2,
  by cosine with its s1 (`demo_measures.retrieval_ranks`)."""
  embed = lambda sentences: l2_normalize(encoder(list(sentences)))
  ranks = demo_measures.retrieval_ranks(embed, pairs)
  return demo_measures.retrieval_measures(ranks)["retrieval_mrr"]


def experiment(condition: bool, steps: int, batch_size: int):
  """cmlm/demo, with or without the conditioning, at equal encoder compute."""
  params = exp_factory.get_exp_config("cmlm/demo")
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
  figures = {}
  data_dir = (runner.DEFAULT_DATA_DIR if os.path.isdir(runner.DEFAULT_DATA_DIR)
              else None)
  for name, condition in (("CMLM", True), ("MLM", False)):
    model_dir = os.path.join(args.work_dir, name.lower())
    params = experiment(condition, args.steps, args.batch_size)
    print(f"== {name}: {args.steps} steps, batch "
          f"{params.task.objectives.cmlm.train_data.global_batch_size}",
          flush=True)
    train.run(params, model_dir, mode="train")
    encoder = encoders.load_encoder(model_dir)
    heldout = demo_measures.heldout_pairs(
        params.task.objectives.cmlm.validation_data,
        params.task.tokenization)[0]
    sample = pcr_sentences(params.task.objectives.cmlm.train_data,
                           args.pcr_sample)
    component = pcr.first_principal_component(encoder(sample))
    for row, row_encoder in ((name, encoder),
                             (name + "+PCR", with_pcr(encoder, component))):
      options = EvalOptions(
          report_dir=os.path.join(model_dir, "eval_pcr" if "PCR" in row
                                  else "eval"),
          max_examples=args.max_examples)
      result = runner.run_evaluation(model_dir, args.tasks, options,
                                     data_dir, encoder=row_encoder)
      figures[row] = {task: round(result["tasks"][task][
          result["tasks"][task]["headline"]], 2)
                      for task in args.tasks if task in result["tasks"]}
      figures[row][RETRIEVAL] = round(next_sequence_mrr(row_encoder,
                                                        heldout), 4)
  print(f"\nCMLM vs MLM, equal encoder compute ({args.steps} steps; CMLM "
        f"batch {args.batch_size}, MLM batch {2 * args.batch_size}; +PCR: "
        f"first principal component of {args.pcr_sample} corpus sentences "
        "removed):")
  print("model     " + " ".join(f"{task:>7}" for task in args.tasks)
        + f"  {RETRIEVAL} ({len(heldout)} held-out pairs)")
  for name, values in figures.items():
    print(f"{name:<9} " + " ".join(
        f"{values.get(task, float('nan')):7.2f}" for task in args.tasks)
          + f"  {values[RETRIEVAL]:.4f}")
  print(f"({(time.perf_counter() - start) / 60:.1f} min)")
  print(json.dumps({"steps": args.steps, "cmlm_batch": args.batch_size,
                    "mlm_batch": 2 * args.batch_size,
                    "max_examples": args.max_examples,
                    "pcr_sample": args.pcr_sample, "figures": figures}))


if __name__ == "__main__":
  main()
