"""Evidence at small scale for CMLM-CSE vs SimCSE (cmlm_cse_2023.txt), under
the evidence protocol (`experiments/evidence_protocol.py`).

From each starting encoder, `cmlm` (a CMLM run of the garden; by default
the CMLM arm of experiments/cmlm_vs_mlm.py, seed 1: cmlm/demo's encoder,
2 layers, hidden 128, max pooling) and `minilm` (all-MiniLM-L6-v2 imported
with `cmlm import`), for each seed of `--seeds` (`task.seed`: data order,
dropout masks, the MLP's and the fusioner's initialisation), trains with
the `*/tiny` recipes (the start's encoder and pooling, SimCSE's
training-only MLP on every arm; learning rate 1e-4 from the CMLM run, 3e-5
from MiniLM) on the de-duplicated sentences of shipped English text (not
STS-B), batch 32, length 32:
  * `CMLM-CSE` (`cmlm_cse/...`, lambda 0.005, 15% masking) for `--*_steps`;
    per sentence the encoder runs twice (the two dropout views, with
    gradient), the frozen extractor reads x' through K of the N layers
    (no gradient) and the 3-block fusioner reads it (with gradient):
    2 + (K + 3) / N encoder passes (4 for the 2-layer CMLM run, K = 1;
    3.17 for MiniLM, K = 4 of 6);
  * `SimCSE` (the control) and `SimCSE no dropout` (the collapse check):
    2 passes per sentence, so as many more steps as give the same passes
    (2x for the CMLM run, 1.58x for MiniLM; the learning rate decays over
    each arm's own steps);
and evaluates the start and every run on STS-B dev and SICK-R trial
(Spearman x 100, `evidence_measures`), every sentence cut at 32 tokens (the
start read through a trained run's config, so start and runs differ by
the training only).

Prints one table per start (mean ± std over seeds, each arm's difference
to SimCSE with its 95% t-interval over seeds, which gives the verdict, and
the paired bootstrap 95% interval over seeds and pairs beside it) and
writes `<work_dir>/<start>/cse_evidence.json`; each (arm, seed) is cached in
`<work_dir>/<start>/<arm>/seed<S>/`, so `--starts`, `--arms` and `--seeds`
split the work.

  python projects/simcse_cse/evidence.py [--cmlm=RUN] [--minilm=RUN]
      [--starts=cmlm,minilm] [--seeds=1,2,3] [--work_dir=runs/cse_evidence]
"""
import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)


from cmlm.evaluation import encoders  # noqa: E402
from cmlm.experiments import evidence_measures  # noqa: E402
from cmlm.experiments import evidence_protocol as protocol  # noqa: E402
from cmlm.experiments.command_runs import cmlm  # noqa: E402
from cmlm.experiments.command_runs import import_minilm  # noqa: E402
from cmlm.projects.simcse_cse import registry_imports  # noqa: E402,F401  (reads its runs)
from cmlm.projects.simcse_cse.cmlm_cse_layers import default_extractor_layers  # noqa: E402
from cmlm.training import checkpoints  # noqa: E402
from cmlm.training import run_dir  # noqa: E402

DEFAULT_CORPUS = os.path.join(ROOT, "data", "corpus_en")
SEQ_LENGTH = 32
FUSIONER_LAYERS = 3
START, CONTROL, CMLM_CSE, NO_DROPOUT = ("start", "SimCSE", "CMLM-CSE",
                                        "SimCSE no dropout")
ARMS = (START, CONTROL, CMLM_CSE, NO_DROPOUT)
MEASURES = ("sts-b", "sick-r")
STARTS = ("cmlm", "minilm")


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--cmlm", default=os.path.join(
      ROOT, "runs", "cmlm_vs_mlm", "CMLM", "seed1", "run"),
      help="a CMLM run of the garden")
  parser.add_argument("--minilm", default="",
                      help="an import of all-MiniLM-L6-v2 (default: "
                      "imported into the work dir)")
  parser.add_argument("--corpus", default=DEFAULT_CORPUS,
                      help="running English text (read as 'corpus')")
  parser.add_argument("--cmlm_steps", type=int, default=300,
                      help="CMLM-CSE's steps from the CMLM run")
  parser.add_argument("--minilm_steps", type=int, default=60,
                      help="CMLM-CSE's steps from MiniLM")
  parser.add_argument("--batch_size", type=int, default=32)
  parser.add_argument("--work_dir", default=os.path.join(ROOT, "runs",
                                                         "cse_evidence"))
  parser.add_argument("--starts", default=",".join(STARTS),
                      help="which starting encoders, in this order")
  protocol.add_arguments(parser, ARMS)
  args = parser.parse_args(argv)
  args.starts = [s.strip() for s in args.starts.split(",") if s.strip()]
  if not args.starts or set(args.starts) - set(STARTS):
    parser.error(f"--starts must be some of {','.join(STARTS)}.")
  protocol.check_selection(parser, args, ARMS)
  return args


def encoder_layers(start_dir) -> int:
  return run_dir.load_params(start_dir).task.model.encoder.num_layers


def cmlm_cse_passes(layers: int) -> float:
  """Encoder passes per sentence of CMLM-CSE (see the module doc)."""
  return 2 + (default_extractor_layers(layers) + FUSIONER_LAYERS) / layers


def arm_steps(name, cse_steps, layers) -> int:
  """Each arm's steps for CMLM-CSE's encoder passes."""
  if name == CMLM_CSE:
    return cse_steps
  return round(cse_steps * cmlm_cse_passes(layers) / 2)


def compute(name, cse_steps, layers, batch) -> protocol.Compute:
  steps = arm_steps(name, cse_steps, layers)
  work = [protocol.Work("two dropout views", batch, SEQ_LENGTH, 2)]
  if name == CMLM_CSE:
    k = default_extractor_layers(layers)
    work += [protocol.Work(f"x' through the extractor ({k}/{layers} "
                           "layers, no gradient)", batch, SEQ_LENGTH,
                           k / layers, 0),
             protocol.Work(f"x' through the fusioner ({FUSIONER_LAYERS} "
                           "blocks)", batch, SEQ_LENGTH,
                           FUSIONER_LAYERS / layers)]
  return protocol.Compute(steps, tuple(work))


def arms(cse_steps, layers, batch):
  return [protocol.Arm(START, None, description="the start itself")] + [
      protocol.Arm(name, compute(name, cse_steps, layers, batch),
                   control=name == CONTROL)
      for name in (CONTROL, CMLM_CSE, NO_DROPOUT)]


def overrides(name, start_dir, steps, seed, args, learning_rate,
              tokenization):
  """(experiment, params overrides) of arm `name`; `tokenization` is the
  start's (`task.tokenization`): the tiny recipes name the embedded
  vocabulary, and a start with another (MiniLM's) reads its own."""
  family = "cmlm_cse" if name == CMLM_CSE else "simcse"
  data = f"task.objectives.{family}.train_data"
  values = [
      f"task.seed={seed}", f"task.init_checkpoint={start_dir}",
      f"task.tokenization.vocab_file={tokenization.vocab_file}",
      f"task.tokenization.lower_case={tokenization.lower_case}",
      "task.tokenization.text_normalization="
      f"{tokenization.text_normalization}",
      f"trainer.train_steps={steps}",
      "trainer.steps_per_loop=50", "trainer.summary_interval=50",
      f"trainer.checkpoint_interval={steps}",
      f"trainer.validation_interval={steps}",
      # Equal compute: the last checkpoint is compared, no selection.
      "trainer.best_checkpoint_eval_metric=",
      "trainer.optimizer_config.learning_rate.polynomial."
      f"initial_learning_rate={learning_rate}",
      "trainer.optimizer_config.learning_rate.polynomial."
      f"decay_steps={steps}",
      f"{data}.input_path={args.corpus}", f"{data}.format=corpus",
      f"{data}.global_batch_size={args.batch_size}",
      f"task.tokenization.seq_length={SEQ_LENGTH}"]
  if name == NO_DROPOUT:
    values += ["task.model.encoder.dropout_rate=0.0",
               "task.model.encoder.attention_dropout_rate=0.0"]
  # The tiny recipes keep the start's pooling (bert_base's would force
  # [CLS] on an encoder trained for another read-out).
  return f"{family}/tiny", values


def evaluate(model_dir, data_dir, checkpoint=None):
  encoder = encoders.load_encoder(model_dir, checkpoint, show_progress=False)
  return evidence_measures.evaluate(encoder, MEASURES, data_dir)


def start_dir_of(start, args):
  if start == "cmlm":
    return args.cmlm
  path = args.minilm or os.path.join(args.work_dir, "minilm_import")
  if not os.path.exists(os.path.join(path, "params.yaml")):
    import_minilm(path, seq_length=SEQ_LENGTH)
  return path


def run_start(start, args):
  """Every chosen (arm, seed) from one start, then its table."""
  cse_steps = args.minilm_steps if start == "minilm" else args.cmlm_steps
  learning_rate = 3e-5 if start == "minilm" else 1e-4
  work = os.path.join(args.work_dir, start)
  store = protocol.UnitStore(work)
  start_dir = args.cmlm if start == "cmlm" else (
      args.minilm or os.path.join(args.work_dir, "minilm_import"))
  if not args.report_only:
    start_dir = start_dir_of(start, args)
  if not os.path.exists(os.path.join(start_dir, "params.yaml")):
    raise SystemExit(f"The {start} start {start_dir} is not a run directory "
                     "(no params.yaml); train it first (see the docstring).")
  layers = encoder_layers(start_dir)
  tokenization = run_dir.load_params(start_dir).task.tokenization
  all_arms = arms(cse_steps, layers, args.batch_size)
  protocol.check_equal_compute(all_arms)
  if not args.report_only:
    for seed in args.seeds:
      for name in args.arms:
        if store.load(name, seed) is not None:
          continue
        if name == START:
          first = store.load(CONTROL, seed) or store.load(CMLM_CSE, seed)
          if first is None:
            continue  # read through a trained run's config: train one first
          run = os.path.join(store.directory(first["arm"], seed), "run")
          store.save(START, seed, {"measures": evaluate(
              run, args.data_dir, checkpoints.resolve(start_dir)),
                                   "arm": START})
          continue
        steps = arm_steps(name, cse_steps, layers)
        experiment, values = overrides(name, start_dir, steps, seed, args,
                                       learning_rate, tokenization)
        model_dir = os.path.join(store.directory(name, seed), "run")
        print(f"\n== {start} {name}, seed {seed}: "
              f"{compute(name, cse_steps, layers, args.batch_size).describe()}",
              flush=True)
        began = time.perf_counter()
        cmlm("train", f"--experiment={experiment}", "--mode=train",
             f"--model_dir={model_dir}", "--strategy=one_device",
             "--params_override=" + ",".join(values))
        seconds = time.perf_counter() - began
        store.save(name, seed, {"measures": evaluate(model_dir,
                                                     args.data_dir),
                                "train_seconds": seconds, "arm": name})
        if store.load(START, seed) is None and START in args.arms:
          store.save(START, seed, {"measures": evaluate(
              model_dir, args.data_dir, checkpoints.resolve(start_dir)),
                                   "arm": START})
  results = store.results(all_arms, args.seeds)
  return protocol.report(
      f"CMLM-CSE vs SimCSE from {start} ({start_dir}, {layers} layers): "
      "STS-B dev and SICK-R trial, Spearman x 100, sentences cut at 32 "
      "tokens", all_arms, list(MEASURES), results,
      os.path.join(work, "cse_evidence.json"),
      {"start": start_dir, "cmlm_cse_steps": cse_steps,
       "batch_size": args.batch_size, "learning_rate": learning_rate,
       "seeds": args.seeds, "corpus": args.corpus}, resamples=args.resamples)


def main(argv=None):
  args = parse_args(argv)
  args.data_dir = protocol.data_dir(args)
  return {start: run_start(start, args) for start in args.starts}


if __name__ == "__main__":
  main()
