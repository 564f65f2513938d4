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
    encoder over the same number of token positions per step;
and a third arm is not trained:
  * start: that seed's initialisation of cmlm/demo itself, the encoder both
    trained arms start from (`write_start`; not in the equal-compute check).

Selection and judgment are apart. The recipe (cmlm/demo: max pooling, 2,000
steps) was chosen on STS-B dev, and so is each arm's read pooling here:
every arm is read with mean and with max pooling, and the one with the
higher STS-B dev mean over the arm's seeds is that arm's (`chosen_poolings`,
computed in the report, the MLM control and the start chosen the same way).
Named before any run:
  * primary measures (never used to choose anything), each arm read with its
    own pooling: SICK-R on SICK train + trial (5000 pairs) and STS-B train
    (5749 pairs, held apart from STS-B dev), Spearman x 100;
  * secondary: STS-B dev, labelled as the selection set; CR, MRPC, TREC (a
    fixed 10% of their training files held out) and SST-2 dev (accuracy of a
    logistic regression on the vectors); next-sequence retrieval over the
    corpus' held-out pairs (the demo's measure: the mean reciprocal rank of
    each s1's true s2 among all held-out s2, `next-seq MRR`); with
    `--pcr_sample` > 0 every STS measure again "+PCR": the first principal
    component (uncentred) of that many English sentences of the corpus'
    training split removed from every embedding (section 5.2).
Every measure is recorded at both read poolings in the units.

Each (arm, seed) is one unit: its run in `<work_dir>/<arm>/seed<S>/`, its
measures (per-example values) in `<units_dir>/<arm>/seed<S>.json` with the
commit of the code that ran it, the CPU, the date and the command
(`unit_provenance`; a unit does not start on modified code). Units run
start first (every seed), then seed by seed MLM and CMLM; finished units
are reused, so `--arms` and `--seeds` split the work and an interrupted run
resumes. The table gives each arm's mean ± std over seeds and its
difference to MLM with its 95% t-interval over seeds (the verdict's), the
paired bootstrap 95% interval (seeds and examples) beside it and the sign
test (`<work_dir>/cmlm_vs_mlm.json`); once every unit of `--arms` x
`--seeds` is done, the results file `--results` (rendered by
`experiments/evidence_tables.py`) is written from the units, its `commit`
theirs.

  python experiments/cmlm_vs_mlm.py [--steps=2000] [--batch_size=32]
      [--seeds=1,2,3,4,5] [--arms=start,MLM,CMLM] [--work_dir=runs/cmlm_vs_mlm]
      [--units_dir=docs/results/cmlm_vs_mlm/units]
      [--results=docs/results/cmlm_vs_mlm.json]
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
from cmlm.experiments import cmlm_vs_mlm_plan as plan  # noqa: E402
from cmlm.experiments import evidence_measures  # noqa: E402
from cmlm.experiments import evidence_protocol as protocol  # noqa: E402
from cmlm.experiments import evidence_tables  # noqa: E402
from cmlm.experiments import registry_imports  # noqa: E402,F401  (the core experiments)
from cmlm.modeling import principal_component_removal as pcr  # noqa: E402
from official.core import exp_factory  # noqa: E402
from official.core import task_factory  # noqa: E402
from official.core import train_utils  # noqa: E402
from cmlm.training import train  # noqa: E402

START, CONTROL, CMLM = "start", "MLM", "CMLM"
ARMS = (START, CONTROL, CMLM)  # the untrained start, the control, the claim
TASKS = plan.PRIMARY + (plan.SELECTION, "sick-r") + plan.TRANSFER
DEFAULT_TASKS = plan.PRIMARY + (plan.SELECTION,) + plan.TRANSFER
RETRIEVAL = plan.RETRIEVAL
RESULTS_DIR = os.path.join(cmlm_experiments.REPO_ROOT, "docs", "results")


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--steps", type=int, default=2000)
  parser.add_argument("--batch_size", type=int, default=32,
                      help="CMLM's batch; MLM gets B (2L + 15) / L.")
  parser.add_argument("--work_dir", default=os.path.join(
      cmlm_experiments.REPO_ROOT, "runs", "cmlm_vs_mlm"),
                      help="The arms' runs (checkpoints).")
  parser.add_argument("--units_dir", default=os.path.join(
      RESULTS_DIR, "cmlm_vs_mlm", "units"),
                      help="The units: <arm>/seed<S>.json, to commit.")
  parser.add_argument("--results", default=os.path.join(
      RESULTS_DIR, "cmlm_vs_mlm.json"),
                      help="The results file, written once every unit of "
                      "--arms x --seeds is done.")
  parser.add_argument("--max_examples", type=int, default=None,
                      help="At most this many fitting examples per transfer "
                      "task (a fixed subset; the dev splits stay whole).")
  parser.add_argument("--pcr_sample", type=int, default=1000,
                      help="Corpus sentences the +PCR component is fitted "
                      "on (0: no +PCR measures).")
  parser.add_argument("--tasks", default=",".join(DEFAULT_TASKS),
                      help="Comma-separated dev tasks (a subset of "
                      f"{','.join(TASKS)}; {plan.SELECTION} is required).")
  protocol.add_arguments(parser, ARMS, default_seeds="1,2,3,4,5")
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
  if plan.SELECTION not in args.tasks:
    parser.error(f"--tasks must include {plan.SELECTION} (STS-B dev, the "
                 "selection set): each arm's read pooling is chosen on it.")
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
  return [protocol.Arm(START, None, description=(
              "cmlm/demo's seeded initialisation, the trained arms' start at "
              "each seed; not trained")),
          protocol.Arm(CONTROL, compute(experiment(False, args.steps,
                                                   args.batch_size)),
                       control=True),
          protocol.Arm(CMLM, compute(experiment(True, args.steps,
                                                args.batch_size)))]


def measures(args):
  """The measures of one reading, primary first."""
  names = list(args.tasks) + [RETRIEVAL]
  if args.pcr_sample:
    names += [f"{task}+PCR" for task in args.tasks
              if task in evidence_measures.STS_MEASURES]
  return sorted(names, key=lambda m: m not in plan.PRIMARY)


def setup(args) -> dict:
  """What a unit's numbers depend on besides arm, seed and code."""
  return {"steps": args.steps, "cmlm_batch": args.batch_size,
          "max_examples": args.max_examples, "pcr_sample": args.pcr_sample,
          "tasks": list(args.tasks), "read_poolings": list(plan.READ_POOLINGS)}


def write_start(params, model_dir: str) -> str:
  """The untrained start of `params`' seed as a run directory (params.yaml
  and the `encoder` item of ckpt-0); returns the checkpoint. `train.run`
  seeds (`seed_run`) and builds the task's model the same way before its
  first step (as `python -m cmlm demo` measures its untrained encoder), so
  this is the encoder the trained arms of the seed start from."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  train.seed_run(params.task)
  model = task_factory.get_task(params.task).build_model()
  os.makedirs(model_dir, exist_ok=True)
  train_utils.serialize_config(params, model_dir)
  return tf.train.Checkpoint(encoder=model.encoder).write(
      os.path.join(model_dir, "ckpt-0"))


def evaluate(encoder, args, data_dir, heldout, pcr_sample) -> dict:
  """{measure: sample} of one reading of an encoder (`measures`)."""
  samples = evidence_measures.evaluate(encoder, args.tasks, data_dir,
                                       max_train=args.max_examples)
  samples[RETRIEVAL] = statistics.mean_sample(
      next_sequence_reciprocal_ranks(encoder, heldout))
  if pcr_sample:
    component = pcr.first_principal_component(encoder(pcr_sample))
    for task in args.tasks:
      if task in evidence_measures.STS_MEASURES:
        samples[f"{task}+PCR"] = evidence_measures.sts_sample(
            with_pcr(encoder, component),
            evidence_measures.sts_pairs(task, data_dir))
  return samples


def run_unit(name: str, seed: int, args, store, data_dir) -> dict:
  """Trains one arm with one seed (the start: writes it), then scores it on
  every measure read with each of `plan.READ_POOLINGS`."""
  params = experiment(name != CONTROL, args.steps, args.batch_size, seed)
  model_dir = os.path.join(store.directory(name, seed), "run")
  start = time.perf_counter()
  checkpoint = None
  if name == START:
    print(f"\n== {name}, seed {seed}: not trained", flush=True)
    checkpoint = write_start(params, model_dir)
  else:
    print(f"\n== {name}, seed {seed}: {compute(params).describe()}",
          flush=True)
    train.run(params, model_dir, mode="train")
  seconds = time.perf_counter() - start
  heldout = demo_measures.heldout_pairs(
      params.task.objectives.cmlm.validation_data, params.task.tokenization)[0]
  sample = (pcr_sentences(params.task.objectives.cmlm.train_data,
                          args.pcr_sample) if args.pcr_sample else None)
  samples = {}
  for pooling in plan.READ_POOLINGS:
    print(f"  read with {pooling} pooling:", flush=True)
    encoder = encoders.load_encoder(model_dir, checkpoint,
                                    show_progress=False, pooling=pooling)
    for measure, value in evaluate(encoder, args, data_dir, heldout,
                                   sample).items():
      samples[plan.reading(measure, pooling)] = value
  return {"measures": samples, "setup": setup(args),
          "trained_pooling": params.task.model.pooling,
          "train_seconds": seconds, "heldout_pairs": len(heldout),
          "seconds": time.perf_counter() - start}


def report(args, all_arms, store):
  """The table at each arm's chosen pooling; the results file once every
  unit of `--arms` x `--seeds` is done."""
  units = store.units(all_arms, args.seeds)
  plan.check_units(units, setup(args), args.units_dir)
  results = store.results(all_arms, args.seeds)
  chosen = plan.chosen_poolings(results, [a.name for a in all_arms])
  print(f"\nRead pooling, chosen on {plan.label(plan.SELECTION)} (mean over "
        "seeds):")
  for arm, choice in chosen.items():
    print(f"  {arm}: {choice['pooling']} (" + ", ".join(
        f"{p} {v:.2f}" for p, v in choice["selection_means"].items()) + ")")
  shown = [a for a in all_arms if a.name in results]
  if not any(a.control for a in shown):
    return None
  names = measures(args)
  title = (f"CMLM vs MLM, equal encoder compute ({args.steps} steps, "
           "cmlm/demo encoder; each arm read with its pooling chosen on "
           "STS-B dev, the selection set)")
  table = protocol.report(
      title, shown, [plan.label(m) for m in names],
      plan.own_readings(results, chosen, names),
      os.path.join(args.work_dir, "cmlm_vs_mlm.json"),
      dict(setup(args), seeds=args.seeds, read_pooling=chosen),
      resamples=args.resamples, digits=3, units=units)
  missing = plan.missing_units(results, args.arms, args.seeds)
  if missing:
    print(f"\n(the results file {args.results} is written once every unit "
          f"is done; missing: {', '.join(missing)})")
    return table
  result = plan.results_file(
      [a for a in all_arms if a.name in args.arms], results, chosen, units,
      names, args.seeds, setup(args), title,
      plan.relative(args.units_dir, cmlm_experiments.REPO_ROOT),
      args.resamples)
  evidence_tables.write_json(result, args.results)
  print(f"(the results file is written to {args.results}"
        + (f"; {result['mixed_commits']}" if result["mixed_commits"] else "")
        + ")")
  return table


def main(argv=None):
  args = parse_args(argv)
  all_arms = arms(args)
  protocol.check_arms(all_arms)
  protocol.check_equal_compute(all_arms)  # the start is not trained
  store = protocol.UnitStore(args.work_dir, args.units_dir)
  data_dir = protocol.data_dir(args)
  if not args.report_only:
    for name, seed in protocol.unit_order(all_arms, args.arms, args.seeds):
      store.run(name, seed,
                lambda: run_unit(name, seed, args, store, data_dir))
  return report(args, all_arms, store)


if __name__ == "__main__":
  main()
