"""CMLM vs MLM at equal encoder compute (paper section 3.2, table 1's claim),
under the evidence protocol (`experiments/evidence_protocol.py`).

Two arms train the same small encoder (cmlm/demo's: cmlm/tiny with max
pooling, sequence length L = 48) on the same text, `--steps` steps each,
from the same seeded start (`task.seed`: initialisation, data order, masks,
dropout), for every seed of `--seeds`:
  * CMLM: s2's masked tokens predicted given the sentence vector of s1; per
    example the encoder reads s1 (L tokens) and s2 with the N = 15
    projections appended (L + 15): batch B;
  * MLM (the control): the same model with the conditioning removed
    (`task.objectives.cmlm.condition=false`: s2 read alone, same head, same
    masks), batch B (2L + 15) / L (74 for B = 32), so both arms run the
    encoder over the same number of token positions per step.
Each frozen encoder is then scored on dev data no arm trained on
(`evidence_measures`): STS-B dev and SICK-R trial (Spearman x 100), CR,
MRPC, TREC (a fixed 10% of their training files held out) and SST-2 dev
(accuracy of a logistic regression on the vectors), and next-sequence
retrieval over the corpus' held-out pairs (the demo's measure: the mean
reciprocal rank of each s1's true s2 among all held-out s2, `next-seq
MRR`); with `--pcr_sample` > 0 also STS-B dev and SICK-R "+PCR": the first
principal component (uncentred) of that many English sentences of the
corpus' training split removed from every embedding (section 5.2).

The table gives each arm's mean ± std over seeds and CMLM's difference to
MLM with its 95% t-interval over seeds (the verdict's), the paired
bootstrap 95% interval (seeds and examples) beside it and the sign
test; it is also written to `<work_dir>/cmlm_vs_mlm.json`. Each (arm, seed)
is cached in `<work_dir>/<arm>/seed<S>/`, so `--arms` and `--seeds` split
the work into short jobs and an interrupted run resumes.

  python experiments/cmlm_vs_mlm.py [--steps=2000] [--batch_size=32]
      [--seeds=1,2,3] [--arms=MLM,CMLM] [--work_dir=runs/cmlm_vs_mlm]
      [--max_examples=N] [--pcr_sample=1000] [--tasks=...] [--report_only]
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


from cmlm.data_pipelines import corpus  # noqa: E402
from cmlm.evaluation import demo_measures  # noqa: E402
from cmlm.evaluation import encoders  # noqa: E402
from cmlm.evaluation import statistics  # noqa: E402
from cmlm.modeling.vectors import l2_normalize  # noqa: E402
from cmlm.evaluation import runner  # noqa: E402
from cmlm.experiments import cmlm_experiments  # noqa: E402
from cmlm.experiments import evidence_measures  # noqa: E402
from cmlm.experiments import evidence_protocol as protocol  # noqa: E402
from cmlm.experiments import registry_imports  # noqa: E402,F401  (the core experiments)
from cmlm.modeling import principal_component_removal as pcr  # noqa: E402
from official.core import exp_factory  # noqa: E402
from cmlm.training import train  # noqa: E402

TASKS = ("sts-b", "sick-r", "cr", "mrpc", "trec", "sst2")
RETRIEVAL = "next-seq MRR"
PCR_TASKS = ("sts-b", "sick-r")
ARMS = ("MLM", "CMLM")  # the control first


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--steps", type=int, default=2000)
  parser.add_argument("--batch_size", type=int, default=32,
                      help="CMLM's batch; MLM gets B (2L + 15) / L.")
  parser.add_argument("--work_dir", default=os.path.join(
      cmlm_experiments.REPO_ROOT, "runs", "cmlm_vs_mlm"))
  parser.add_argument("--max_examples", type=int, default=None,
                      help="At most this many fitting examples per transfer "
                      "task (a fixed subset; the dev splits stay whole).")
  parser.add_argument("--pcr_sample", type=int, default=1000,
                      help="Corpus sentences the +PCR component is fitted "
                      "on (0: no +PCR measures).")
  parser.add_argument("--tasks", default=",".join(TASKS),
                      help="Comma-separated dev tasks (a subset of "
                      f"{','.join(TASKS)}).")
  protocol.add_arguments(parser, ARMS)
  args = parser.parse_args(argv)
  protocol.check_counts(parser, args, ("steps", "batch_size"))
  if args.pcr_sample == 1 or args.pcr_sample < 0:
    parser.error("--pcr_sample must be 0 (none) or 2 or more (a principal "
                 "component needs two embeddings).")
  args.tasks = tuple(t.strip() for t in args.tasks.split(",") if t.strip())
  unknown = sorted(set(args.tasks) - set(TASKS))
  if unknown or not args.tasks:
    parser.error(f"--tasks must be some of {','.join(TASKS)}; got "
                 f"{','.join(unknown) or 'none'}.")
  protocol.check_selection(parser, args, ARMS)
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


def next_sequence_reciprocal_ranks(encoder, pairs):
  """1 / rank of each held-out pair's s2 among all held-out s2, by cosine
  with its s1 (`demo_measures.retrieval_ranks`; ties at their mean place)."""
  embed = lambda sentences: l2_normalize(encoder(list(sentences)))
  return 1.0 / demo_measures.retrieval_ranks(embed, pairs)


def next_sequence_mrr(encoder, pairs) -> float:
  """The mean of `next_sequence_reciprocal_ranks`."""
  return float(next_sequence_reciprocal_ranks(encoder, pairs).mean())


def mlm_batch_size(batch_size: int, seq_length: int,
                   num_projections: int) -> int:
  """MLM's batch for CMLM's token positions per step: B (2L + N) / L."""
  return round(batch_size * (2 * seq_length + num_projections) / seq_length)


def experiment(condition: bool, steps: int, batch_size: int,
               seed=None):
  """cmlm/demo, with or without the conditioning, at equal encoder compute
  (`batch_size` is CMLM's; MLM's follows from it)."""
  params = exp_factory.get_exp_config("cmlm/demo")
  seq_length = params.task.tokenization.seq_length
  batch = batch_size if condition else mlm_batch_size(
      batch_size, seq_length, params.task.model.num_projections)
  params.override({
      "task": {"seed": seed, "objectives": {"cmlm": {
          "condition": condition,
          "train_data": {"global_batch_size": batch}}}},
      "trainer": {"train_steps": steps, "checkpoint_interval": steps,
                  "validation_interval": steps,
                  "optimizer_config": {"learning_rate": {"polynomial": {
                      "decay_steps": steps}}}}})
  return params


def compute(params) -> protocol.Compute:
  """The encoder work of one arm (`experiment`)."""
  cmlm = params.task.objectives.cmlm
  seq_length = params.task.tokenization.seq_length
  batch = cmlm.train_data.global_batch_size
  if cmlm.condition:
    n = params.task.model.num_projections
    work = (protocol.Work("s1", batch, seq_length, 1),
            protocol.Work(f"s2 + {n} projections", batch, seq_length + n, 1))
  else:
    work = (protocol.Work("s2", batch, seq_length, 1),)
  return protocol.Compute(params.trainer.train_steps, work)


def arms(args):
  return [protocol.Arm(name, compute(experiment(name == "CMLM", args.steps,
                                                args.batch_size)),
                       control=name == "MLM")
          for name in ARMS]


def measures(args):
  names = list(args.tasks) + [RETRIEVAL]
  if args.pcr_sample:
    names += [f"{task}+PCR" for task in PCR_TASKS if task in args.tasks]
  return names


def run_unit(name: str, seed: int, args, store, data_dir) -> dict:
  """Trains one arm with one seed, then scores it on the dev measures."""
  params = experiment(name == "CMLM", args.steps, args.batch_size, seed)
  model_dir = os.path.join(store.directory(name, seed), "run")
  print(f"\n== {name}, seed {seed}: {compute(params).describe()}",
        flush=True)
  start = time.perf_counter()
  train.run(params, model_dir, mode="train")
  seconds = time.perf_counter() - start
  encoder = encoders.load_encoder(model_dir, show_progress=False)
  samples = evidence_measures.evaluate(encoder, args.tasks, data_dir,
                                       max_train=args.max_examples)
  heldout = demo_measures.heldout_pairs(
      params.task.objectives.cmlm.validation_data, params.task.tokenization)[0]
  samples[RETRIEVAL] = statistics.mean_sample(
      next_sequence_reciprocal_ranks(encoder, heldout))
  if args.pcr_sample:
    sample = pcr_sentences(params.task.objectives.cmlm.train_data,
                           args.pcr_sample)
    component = pcr.first_principal_component(encoder(sample))
    for task in PCR_TASKS:
      if task in args.tasks:
        samples[f"{task}+PCR"] = evidence_measures.sts_sample(
            with_pcr(encoder, component),
            evidence_measures.sts_pairs(task, data_dir))
  return {"measures": samples, "train_seconds": seconds,
          "heldout_pairs": len(heldout),
          "seconds": time.perf_counter() - start}


def main(argv=None):
  args = parse_args(argv)
  all_arms = arms(args)
  protocol.check_arms(all_arms)
  protocol.check_equal_compute(all_arms)
  store = protocol.UnitStore(args.work_dir)
  data_dir = protocol.data_dir(args)
  if not args.report_only:
    for seed in args.seeds:
      for name in args.arms:
        if store.load(name, seed) is None:
          store.save(name, seed, run_unit(name, seed, args, store, data_dir))
  results = store.results(all_arms, args.seeds)
  return protocol.report(
      f"CMLM vs MLM, equal encoder compute ({args.steps} steps, cmlm/demo "
      f"encoder; dev measures)", all_arms, measures(args), results,
      os.path.join(args.work_dir, "cmlm_vs_mlm.json"),
      {"steps": args.steps, "cmlm_batch": args.batch_size,
       "seeds": args.seeds, "max_examples": args.max_examples,
       "pcr_sample": args.pcr_sample,
       "data": {t: evidence_measures.MEASURE_DATA[t] for t in args.tasks}},
      resamples=args.resamples, digits=3)


if __name__ == "__main__":
  main()
