"""Evidence at small scale for MiSAD (Li et al. 2020): MLM alone vs MLM +
MiSAD from the same start at equal encoder compute, on the shipped English
text, under the evidence protocol (`experiments/evidence_protocol.py`).

  1. `python -m cmlm ngrams` marks the PMI n-grams of data/corpus_en
     (section 3.1; per file, top 3000, paper formula);
  2. from one encoder (by default all-MiniLM-L6-v2, imported with sequence
     length L = 64; `--start=RUN` takes any run or import of ours), for each
     seed of `--seeds` (`task.seed`: data order, masks, heads' and pooler's
     initialisation, dropout), `--steps` steps of `misad/tiny`:
       * `MLM+MiSAD`: MLM + MSE(E^w + E^R, E^S) at equal weights with the
         objective's defaults (sum re-normalised, [CLS] pooled output, R cut
         from the masked S, w chosen by the lowest MLM score), `--batch_size`
         B sentences; per sentence the encoder reads S, R and w (with
         gradient) and the K = 4 copies of S scored without gradient: 7
         passes of L tokens;
       * `MLM` (the control): misad_weight=0, MLM alone on the marked
         sentences, batch 7 B: the same encoder passes per step;
       * `MLM b8` (a dose control, not at equal compute by design): MLM
         alone at batch B, the MLM dose of `MLM+MiSAD` (the same sentences
         masked the same way a step) at 1/7 of its encoder compute; it
         separates MiSAD's own signal from the MLM arm's larger MLM dose;
  3. the start and every run scored on dev data no arm trained on: word
     analogy on the dev half of Mikolov's questions-words.txt (the
     even-numbered questions; 3CosAdd among the file's 905 words, the copy
     gensim ships; the odd ones are left as the test), also per kind
     (semantic, syntactic), and STS-B dev (Spearman x 100);
  4. for `MLM+MiSAD`, a collapse diagnostic (the loss is also 0 at
     E^w = E^R = E^S): E^w, E^R, E^S of held-out sentences (the PMI n-grams
     of the first `HELD_OUT_FILES` State of the Union addresses, which no
     arm trains on; `HELD_OUT_SENTENCES` sentences) through the trained
     encoder and the objective's pooler, and `misad_loss.collapse_cosines`:
     the mean pairwise cosine of the three per sentence ("within") and of
     E^S across sentences ("across"); stored in the unit's `diagnostics`
     and printed under the table.

Prints one table (mean ± std over seeds, each arm's difference to MLM
with its 95% t-interval over seeds, which gives the verdict, and the
paired bootstrap 95% interval over seeds and questions beside it) and
writes
`<work_dir>/misad_evidence.json`; each (arm, seed) is cached in
`<work_dir>/<arm>/seed<S>/`, so `--arms` / `--seeds` split the work.

  python projects/misad/evidence.py [--steps=100] [--batch_size=8]
      [--start=RUN] [--seeds=1,2,3] [--work_dir=runs/misad_evidence]
"""
import argparse
import os
import sys
import time

import numpy as np

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO_ROOT)


from cmlm.evaluation import encoders  # noqa: E402
from cmlm.evaluation import statistics  # noqa: E402
from cmlm.experiments import evidence_measures  # noqa: E402
from cmlm.experiments import evidence_protocol as protocol  # noqa: E402
from cmlm.experiments.command_runs import cmlm  # noqa: E402
from cmlm.experiments.command_runs import import_minilm  # noqa: E402
from cmlm.projects.misad import analogy  # noqa: E402
from cmlm.projects.misad import analogy_readers  # noqa: E402
from cmlm.projects.misad import misad_data  # noqa: E402
from cmlm.projects.misad import misad_loss  # noqa: E402
from cmlm.projects.misad import pmi_ngrams  # noqa: E402
from cmlm.projects.misad import registry_imports  # noqa: E402,F401  (reads its runs)

CORPUS = os.path.join(REPO_ROOT, "data", "corpus_en")
SEQ_LENGTH = 64
SCORED_COPIES = 4  # misad_data's max_ngrams_per_sentence
START, CONTROL, MISAD = "start", "MLM", "MLM+MiSAD"
DOSE = "MLM b8"
ARMS = (START, CONTROL, DOSE, MISAD)
# Arms that are not at equal compute by design, each with why; every other
# trained arm must pass `check_equal_compute`.
DOSE_CONTROLS = {DOSE: "dose control: MLM alone at MLM+MiSAD's MLM batch "
                       "(equal MLM dose), 1/7 of the encoder compute by "
                       "design; not in the equal-compute check"}
HELD_OUT = os.path.join("corpora", "en", "state_union")
HELD_OUT_FILES = 8
HELD_OUT_SENTENCES = 256
MEASURES = ("word analogy", "semantic", "syntactic", "sts-b")


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--steps", type=int, default=100)
  parser.add_argument("--batch_size", type=int, default=8,
                      help="MiSAD's sentences per step; MLM gets 7 times.")
  parser.add_argument("--learning_rate", type=float, default=5e-5)
  parser.add_argument("--start", default="", help="A run or import to "
                      "start from (default: all-MiniLM-L6-v2, imported).")
  parser.add_argument("--work_dir", default=os.path.join(
      REPO_ROOT, "runs", "misad_evidence"))
  parser.add_argument("--source_data", default=None,
                      help="The folder holding corpora/en/state_union/ "
                      "(State of the Union addresses, one text file each: "
                      "the collapse diagnostic's held-out sentences); needed "
                      "unless --report_only.")
  protocol.add_arguments(parser, ARMS)
  args = parser.parse_args(argv)
  protocol.check_counts(parser, args, ("steps", "batch_size"))
  protocol.check_selection(parser, args, ARMS)
  return args


def passes(misad: bool) -> int:
  """Encoder passes of L tokens per sentence: S; with MiSAD also R, w and
  the scored copies of S."""
  return 3 + SCORED_COPIES if misad else 1


def compute(name, args) -> protocol.Compute:
  if name == MISAD:
    work = (protocol.Work("S, R, w", args.batch_size, SEQ_LENGTH, 3),
            protocol.Work("copies of S scored (no gradient)", args.batch_size,
                          SEQ_LENGTH, SCORED_COPIES, 0))
  elif name == DOSE:
    work = (protocol.Work("S", args.batch_size, SEQ_LENGTH, 1),)
  else:
    work = (protocol.Work("S", passes(True) * args.batch_size, SEQ_LENGTH,
                          1),)
  return protocol.Compute(args.steps, work)


def arms(args):
  return [protocol.Arm(START, None, description="the start itself"),
          protocol.Arm(CONTROL, compute(CONTROL, args), control=True),
          protocol.Arm(DOSE, compute(DOSE, args),
                       description=DOSE_CONTROLS[DOSE]),
          protocol.Arm(MISAD, compute(MISAD, args))]


def check_compute(all_arms, args):
  """Equal compute for every trained arm but the declared dose controls;
  a dose control must read exactly MiSAD's MLM sentences per step."""
  protocol.check_equal_compute(
      [arm for arm in all_arms if arm.name not in DOSE_CONTROLS])
  for arm in all_arms:
    if arm.name in DOSE_CONTROLS:
      mlm = sum(w.examples_per_step for w in arm.compute.work)
      if mlm != args.batch_size or arm.compute.steps != args.steps:
        raise ValueError(f"The dose control {arm.name!r} must read "
                         f"{args.batch_size} sentences a step for "
                         f"{args.steps} steps, as MiSAD's MLM does.")


def overrides(start, ngrams, name, seed, args):
  misad = name == MISAD
  batch = (args.batch_size if name in (MISAD, DOSE) else
           passes(True) * args.batch_size)
  return ",".join([
      f"task.seed={seed}",
      f"task.init_checkpoint={start}",
      f"task.tokenization.seq_length={SEQ_LENGTH}",
      f"task.objectives.misad.train_data.input_path={ngrams}",
      f"task.objectives.misad.train_data.global_batch_size={batch}",
      f"task.objectives.misad.misad_weight={1.0 if misad else 0.0}",
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


def dev_questions(path):
  """The even-numbered questions of questions-words.txt (the dev half),
  among the whole file's vocabulary."""
  questions = analogy_readers.read_mikolov(path)
  return evidence_measures.limit_to(questions,
                                    list(range(0, len(questions), 2)))


def evaluate(model, questions, data_dir):
  encoder = encoders.load_encoder(model, show_progress=False)
  credits = analogy.question_credits(encoder, questions)
  samples = {"word analogy": statistics.mean_sample(credits, 100)}
  for kind in ("semantic", "syntactic"):
    samples[kind] = statistics.mean_sample(
        [c for c, k in zip(credits, questions.kinds) if k == kind], 100)
  samples["sts-b"] = evidence_measures.sts_sample(
      encoder, evidence_measures.sts_pairs("sts-b", data_dir))
  for name, sample in samples.items():
    print(f"  {name}: {statistics.statistic(sample):.2f}", flush=True)
  return samples


def held_out_ngrams(args) -> str:
  """PMI n-grams of held-out State of the Union addresses (no arm trains
  on them), marked once into the work dir."""
  path = os.path.join(args.work_dir, "held_out_ngrams.txt")
  if not os.path.exists(path):
    folder = os.path.join(args.source_data, HELD_OUT)
    files = sorted(os.listdir(folder))[:HELD_OUT_FILES]
    pmi_ngrams.extract_ngrams(
        ",".join(os.path.join(folder, name) for name in files), path)
  return path


def collapse_diagnostic(model_dir, held_out, seed) -> dict:
  """`misad_loss.collapse_cosines` of E^w, E^R, E^S of the held-out
  sentences, through the run's encoder and its MiSAD head's pooler, the
  objective's own forward pass (not training: no dropout)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from cmlm.training import run_dir  # pylint: disable=g-import-not-at-top
  from cmlm.training import task as task_lib  # pylint: disable=g-import-not-at-top
  params = run_dir.load_params(model_dir)
  checkpoint = run_dir.find_checkpoint(model_dir, None, "--checkpoint")
  objective = task_lib.build_objectives(params.task)["misad"]
  encoder = run_dir.restore_encoder(params, checkpoint)
  head = objective.build_head(encoder)
  objective.call(encoder, head, None, objective.dummy_features())
  status = tf.train.Checkpoint(misad_head=head).read(checkpoint)
  status.expect_partial().assert_existing_objects_matched()
  data = objective.config.train_data.replace(
      input_path=held_out, is_training=False, seed=seed,
      global_batch_size=32, drop_remainder=False)
  tf.random.set_seed(seed)
  vectors = {"ngram_embedding": [], "rest_embedding": [],
             "sentence_embedding": []}
  for features in objective.build_inputs(data).take(HELD_OUT_SENTENCES // 32):
    outputs = objective.call(encoder, head, None, features, training=False)
    for key, kept in vectors.items():
      kept.append(outputs[key].numpy())
  cosines = misad_loss.collapse_cosines(
      *(np.concatenate(vectors[key]) for key in
        ("ngram_embedding", "rest_embedding", "sentence_embedding")))
  cosines["sentences"] = int(sum(len(v) for v in vectors["ngram_embedding"]))
  print(f"  collapse: within {cosines['within']:.3f}, across "
        f"{cosines['across']:.3f} ({cosines['sentences']} held-out "
        "sentences)", flush=True)
  return {"collapse": cosines}


def print_diagnostics(store, seeds):
  """The collapse diagnostic of each MiSAD unit, and its mean."""
  rows = [(seed, unit["diagnostics"]["collapse"]) for seed in seeds
          for unit in [store.load(MISAD, seed)]
          if unit and "diagnostics" in unit]
  if not rows:
    return
  print(f"\nCollapse diagnostic, {MISAD} on held-out sentences (1 = "
        "collapsed): mean pairwise cosine of E^w, E^R, E^S per sentence "
        "(within) and of E^S across sentences (across)")
  for seed, cosines in rows:
    print(f"  seed {seed}: within {cosines['within']:.3f}, across "
          f"{cosines['across']:.3f} ({cosines['sentences']} sentences)")
  for key in ("within", "across"):
    values = [cosines[key] for _, cosines in rows]
    print(f"  {key}: mean {np.mean(values):.3f} over {len(values)} seeds")


def run_unit(name, seed, args, store, start, ngrams, questions) -> dict:
  began = time.perf_counter()
  if name == START:
    return {"measures": evaluate(start, questions, args.data_dir),
            "seconds": 0.0}
  model_dir = os.path.join(store.directory(name, seed), "run")
  print(f"\n== {name}, seed {seed}: {compute(name, args).describe()}",
        flush=True)
  cmlm("train", "--experiment=misad/tiny", "--mode=train",
       f"--model_dir={model_dir}",
       f"--params_override={overrides(start, ngrams, name, seed, args)}")
  seconds = time.perf_counter() - began
  result = {"measures": evaluate(model_dir, questions, args.data_dir),
            "train_seconds": seconds}
  if name == MISAD:
    result["diagnostics"] = collapse_diagnostic(model_dir,
                                                held_out_ngrams(args), seed)
  return result


def main(argv=None):
  args = parse_args(argv)
  args.data_dir = protocol.data_dir(args)
  protocol.data_folder(args, "source_data",
                       "the folder holding corpora/en/state_union/")
  all_arms = arms(args)
  check_compute(all_arms, args)
  store = protocol.UnitStore(args.work_dir)
  analogy_path = analogy_readers.gensim_questions_words()
  if not args.report_only:
    if not analogy_path:
      sys.exit("Mikolov's questions-words.txt comes from gensim's test "
               "data: pip install -r requirements-test.txt.")
    os.makedirs(args.work_dir, exist_ok=True)
    ngrams = os.path.join(args.work_dir, "ngrams_en.txt")
    if not os.path.exists(ngrams):
      pmi_ngrams.extract_ngrams(CORPUS, ngrams)
    start = args.start or os.path.join(args.work_dir, "start_minilm")
    if not args.start and not os.path.exists(os.path.join(start,
                                                          "params.yaml")):
      import_minilm(start, seq_length=SEQ_LENGTH)
    questions = dev_questions(analogy_path)
    # The start does not depend on the seed: score it once.
    for seed in args.seeds:
      for name in args.arms:
        if store.load(name, seed) is not None:
          continue
        if name == START and store.load(START, args.seeds[0]) is not None:
          store.save(START, seed, store.load(START, args.seeds[0]))
          continue
        store.save(name, seed, run_unit(name, seed, args, store, start,
                                        ngrams, questions))
  results = store.results(all_arms, args.seeds)
  shown = [a for a in all_arms if a.name in results or a.name in args.arms]
  table = protocol.report(
      f"MiSAD evidence: {args.steps} steps from "
      f"{args.start or 'all-MiniLM-L6-v2'} (length {SEQ_LENGTH}); word "
      "analogy on the dev half of questions-words.txt (% of 9,772), STS-B "
      "dev (Spearman x 100)", shown, list(MEASURES), results,
      os.path.join(args.work_dir, "misad_evidence.json"),
      {"steps": args.steps, "batch_size": args.batch_size,
       "learning_rate": args.learning_rate, "seeds": args.seeds,
       "start": args.start or "all-MiniLM-L6-v2 (imported, length 64)"},
      resamples=args.resamples)
  print_diagnostics(store, args.seeds)
  return table


if __name__ == "__main__":
  main()
