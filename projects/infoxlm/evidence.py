"""Evidence at small scale for InfoXLM's XLCo (Chi et al. 2021, sections 3-4),
under the evidence protocol (`experiments/evidence_protocol.py`).

With the multilingual data and vocabulary of experiments/multilingual_evidence
(UDHR text of English and the 8 Tatoeba languages; gettext en-xx and
Multi30k en-de/fr pairs, none with a side that is a Tatoeba sentence; a cased
12k WordPiece vocabulary built from the training text), for each seed of
`--seeds`: one starting encoder (cmlm/tiny's: 2 layers, hidden 128, length
48) trained with MMLM for `--start_steps` (`start`), then from it, with the
same seed (`task.seed`: data order, masks, heads, dropout), `--steps` steps
of each arm at equal encoder compute (per step 64 x 48 sequence positions
through the encoder, `--batch_size` B = 32):
  * `TLM+MMLM` (the control): MMLM B and TLM B sequences;
  * `+XLCo`: MMLM B/2, TLM B/2 and XLCo B/4 examples (each side through
    the query encoder, with gradient, and the momentum key encoder: 4
    passes an example), momentum `--momentum`, on the last layer's
    mean-pooled states;
  * `XLCo m=0`: the same with momentum 0 (the key encoder is the query
    encoder, table 7's "-Momentum");
  * `+XLCo intermediate`: the same as `+XLCo` on the [CLS] of layer
    `--intermediate_layer` (`--intermediate_pooling`), the paper's
    "universal layer" design (section 3.3: layer 8 of 12) read on a 2-layer
    model.
Every XLCo arm uses mixup (section 3.3): each training pair is joined with
"a randomly sampled translation pair from another parallel corpus",
`--mixup_partner` (default: the Debian Reference en-de, en-fr and en-es
paragraphs of at most 20 English words, none a Tatoeba sentence; no TLM,
MMLM or vocabulary reads them); `--mixup_partner=none` contrasts the
pairs alone. `+XLCo` contrasts the representation Tatoeba is scored on
(`cmlm eval`'s encoder output: the last layer, mean-pooled); the paper
scores middle layers, which a 2-layer model does not have, so the
intermediate arm tests an indirect transfer.
Every arm (and the start) is scored on the dev half of Tatoeba (the first
500 pairs of each of the 8 languages, both directions; the second half is
left untouched as the test): top-1 %, ties at their mean place.

Prints one table (mean ± std over seeds, each arm's difference to the
control with its 95% t-interval over seeds, which gives the verdict, and
the paired bootstrap 95% interval over seeds and examples beside it) and
writes
`<work_dir>/infoxlm_evidence.json`; each (arm, seed) is cached in
`<work_dir>/<arm>/seed<S>/`, so `--arms` / `--seeds` split the work.

  python projects/infoxlm/evidence.py [--steps=600] [--start_steps=300]
      [--momentum=0.99] [--mixup_partner=SPEC|none] [--intermediate_layer=1]
      [--intermediate_pooling=cls] [--seeds=1,2,3]
      [--work_dir=runs/infoxlm_evidence]

The momentum: the key encoder's time constant is 1/(1-m) updates. With a
few hundred steps, the paper's 0.999 (1k steps) or the code's 0.9999 (10k)
would leave the key encoder close to the starting encoder for the whole run
(after 600 steps 0.999 still weighs the start by 0.999^600 = 55%); 0.99
(100 steps) lets the keys follow the training while staying ~6 times slower
than it, the regime the paper's 0.999 has over its 150k steps.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


from cmlm.evaluation import encoders  # noqa: E402
from cmlm.experiments import cmlm_experiments  # noqa: E402
from cmlm.experiments import evidence_measures  # noqa: E402
from cmlm.experiments import evidence_protocol as protocol  # noqa: E402
from cmlm.experiments import multilingual_evidence  # noqa: E402
from cmlm.data_pipelines import bitext  # noqa: E402
from cmlm.projects.infoxlm import registry_imports  # noqa: F401  (registers the project)
from official.core import exp_factory  # noqa: E402
from cmlm.training import train  # noqa: E402

LANGUAGES = tuple(multilingual_evidence.LANGUAGES)
SEQ_LENGTH = 48
START = "start"
CONTROL = "TLM+MMLM"
INTERMEDIATE = "+XLCo intermediate"
ARMS = (START, CONTROL, "+XLCo", "XLCo m=0", INTERMEDIATE)
DEFAULT_ARMS = ARMS
NUM_LAYERS = 2  # infoxlm/tiny's encoder
DEBIAN = os.path.join("bitext", "debian_reference")
PARTNER_MAX_WORDS = 20


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--steps", type=int, default=600)
  parser.add_argument("--start_steps", type=int, default=300)
  parser.add_argument("--batch_size", type=int, default=32,
                      help="The control's MMLM and TLM batch (multiple of 4).")
  parser.add_argument("--momentum", type=float, default=0.99)
  parser.add_argument("--queue_size", type=int, default=4096)
  parser.add_argument("--mixup_partner", default="debian_reference",
                      help="Mixup's other parallel corpus: a bitext spec, "
                      "'debian_reference' (the default, see the doc) or "
                      "'none' (no mixup).")
  parser.add_argument("--intermediate_layer", type=int, default=1)
  parser.add_argument("--intermediate_pooling", default="cls",
                      choices=("cls", "mean"))
  parser.add_argument("--vocab_size", type=int, default=12000)
  parser.add_argument("--work_dir", default=os.path.join(
      cmlm_experiments.REPO_ROOT, "runs", "infoxlm_evidence"))
  parser.add_argument("--source_data", default=None,
                      help="The folder of the data: "
                      + multilingual_evidence.SOURCE_DATA_HOLDS
                      + ", and bitext/debian_reference/ (Debian Reference "
                      "en-de/fr/es aligned TSV, the default mixup partner); "
                      "needed unless --report_only")
  # Tatoeba is read from --source_data's eval/tatoeba/, no --data_dir.
  protocol.add_arguments(parser, DEFAULT_ARMS, benchmarks=False)
  args = parser.parse_args(argv)
  protocol.check_counts(parser, args, ("steps", "start_steps"))
  if not 1 <= args.intermediate_layer <= NUM_LAYERS:
    parser.error(f"--intermediate_layer must be one of the encoder's "
                 f"{NUM_LAYERS} layers (1..{NUM_LAYERS}).")
  if args.batch_size < 4 or args.batch_size % 4:
    parser.error("--batch_size must be a multiple of 4 (XLCo gets B/4 "
                 "pairs).")
  protocol.check_selection(parser, args, ARMS)
  return args


def arm_settings(name, args):
  """(batch per objective {mmlm, tlm, xlco}, XLCo settings) of an arm."""
  b = args.batch_size
  if name == CONTROL:
    return dict(mmlm=b, tlm=b, xlco=0), {}
  xlco = {"momentum": 0.0 if name == "XLCo m=0" else args.momentum,
          "layer": args.intermediate_layer if name == INTERMEDIATE else 0,
          "pooling": (args.intermediate_pooling if name == INTERMEDIATE
                      else "mean")}
  return dict(mmlm=b // 2, tlm=b // 2, xlco=b // 4), xlco


def describe(name, args) -> str:
  """What an XLCo arm contrasts, and with which mixup partner."""
  if name == CONTROL:
    return ""
  _, xlco = arm_settings(name, args)
  layer = (f"layer {xlco['layer']} of {NUM_LAYERS}" if xlco["layer"] else
           "the last layer")
  mixup = ("no mixup" if args.mixup_partner == "none" else
           f"mixup partner {args.mixup_partner}")
  return (f"XLCo on {layer}, {xlco['pooling']} pooling, m={xlco['momentum']}"
          f", {mixup}")


def compute(batches, steps) -> protocol.Compute:
  work = [protocol.Work(name.upper(), batches[name], SEQ_LENGTH, 1)
          for name in ("mmlm", "tlm") if batches[name]]
  if batches["xlco"]:
    work.append(protocol.Work("XLCo examples (2 sides x query + key)",
                              batches["xlco"], SEQ_LENGTH, 4, 2))
  return protocol.Compute(steps, tuple(work))


def arms(args):
  out = []
  for name in ARMS:
    if name == START:
      out.append(protocol.Arm(START, None, description=(
          f"the MMLM start ({args.start_steps} steps), not trained further")))
    else:
      batches, _ = arm_settings(name, args)
      out.append(protocol.Arm(name, compute(batches, args.steps),
                              control=name == CONTROL,
                              description=describe(name, args)))
  return out


def infoxlm_params(corpora, bitext_path, vocab_path, steps, batches, seed,
                   queue_size, partner_path="", init_checkpoint="", **xlco):
  """infoxlm/tiny on the evidence data; `batches` {mmlm, tlm, xlco} (0
  leaves an objective out); `partner_path`: mixup's other corpus ("" no
  mixup); `xlco` overrides XLCo's settings."""
  params = exp_factory.get_exp_config("infoxlm/tiny")
  monolingual = ",".join(f"{code}={path}" for code, path in corpora.items())
  data = lambda path, batch: {"input_path": path, "header": False,
                              "global_batch_size": max(batch, 1)}
  params.override({
      "task": {
          "seed": seed,
          "init_checkpoint": init_checkpoint,
          "model": {"encoder": {"vocab_size": cmlm_experiments.vocab_size_of(
              vocab_path)}},
          "tokenization": {"vocab_file": vocab_path, "lower_case": False,
                           "seq_length": SEQ_LENGTH},
          "objectives": {
              "mmlm": {"weight": float(batches["mmlm"] > 0),
                       "train_data": data(monolingual, batches["mmlm"])},
              "tlm": {"weight": float(batches["tlm"] > 0),
                      "train_data": data(bitext_path, batches["tlm"])},
              "xlco": {"weight": float(batches["xlco"] > 0),
                       "queue_size": queue_size,
                       "train_data": dict(
                           data(bitext_path, batches["xlco"]),
                           mixup=bool(partner_path),
                           mixup_partner_path=partner_path),
                       **xlco}}},
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


def debian_partner(shared, work_dir) -> str:
  """The default mixup partner: Debian Reference's en-de, en-fr and en-es
  paragraphs of at most PARTNER_MAX_WORDS English words (two texts share
  one sequence of 48), none a Tatoeba sentence; a TSV in `work_dir`."""
  tatoeba = evidence_measures.tatoeba_sentences(
      os.path.join(shared, "eval", "tatoeba"), list(LANGUAGES))
  pairs = []
  for language in ("de", "fr", "es"):
    pairs.extend(p for p in bitext.read_bitext(os.path.join(
        shared, DEBIAN, f"debian-reference.en-{language}.aligned.tsv"))
                 if len(p[0].split()) <= PARTNER_MAX_WORDS)
  kept, _ = evidence_measures.without_overlap(pairs, tatoeba)
  path = os.path.join(work_dir, "mixup_partner.tsv")
  with open(path, "w", encoding="utf-8") as f:
    f.writelines(f"{s.replace(chr(9), ' ')}\t{t.replace(chr(9), ' ')}\n"
                 for s, t in kept)
  print(f"mixup partner: {len(kept)} Debian Reference pairs", flush=True)
  return path


def data(args):
  """(corpora, bitext path, vocabulary path, mixup partner path), built
  once in the work dir."""
  corpora, bitext_path, pairs, _ = multilingual_evidence.gather_data(
      args.source_data, args.work_dir)
  vocab_path = unique_vocab(multilingual_evidence.build_vocab(
      corpora, pairs, args.vocab_size, args.work_dir))
  print(f"{len(pairs)} translation pairs; vocabulary {vocab_path}",
        flush=True)
  partner = {"none": "", "debian_reference": None}.get(args.mixup_partner,
                                                       args.mixup_partner)
  if partner is None:
    partner = debian_partner(args.source_data, args.work_dir)
  return corpora, bitext_path, vocab_path, partner


def start_dir(store, seed):
  return os.path.join(store.directory(START, seed), "run")


def train_start(seed, args, store, common):
  """The seed's MMLM start (trained once; `train.run` resumes at its end)."""
  path = start_dir(store, seed)
  batches = dict(mmlm=args.batch_size, tlm=0, xlco=0)
  train.run(infoxlm_params(steps=args.start_steps, batches=batches,
                           seed=seed, **common), path)
  return path


def tatoeba(model_dir, args):
  encoder = encoders.load_encoder(model_dir, show_progress=False)
  return {"tatoeba": evidence_measures.tatoeba_sample(
      encoder, evidence_measures.tatoeba_dev_pairs(
          os.path.join(args.source_data, "eval", "tatoeba"), LANGUAGES))}


def run_unit(name, seed, args, store, common, partner) -> dict:
  start = time.perf_counter()
  init = train_start(seed, args, store, common)
  if name == START:
    return {"measures": tatoeba(init, args), "seconds": 0.0}
  batches, xlco = arm_settings(name, args)
  params = infoxlm_params(steps=args.steps, batches=batches, seed=seed,
                          init_checkpoint=init,
                          partner_path=partner if xlco else "",
                          **common, **xlco)
  print(f"\n== {name}, seed {seed}: {compute(batches, args.steps).describe()}",
        flush=True)
  model_dir = os.path.join(store.directory(name, seed), "run")
  train.run(params, model_dir)
  return {"measures": tatoeba(model_dir, args),
          "seconds": time.perf_counter() - start}


def main(argv=None):
  args = parse_args(argv)
  protocol.data_folder(args, "source_data", "the folder of the data (--help "
                       "says what it holds)")
  all_arms = arms(args)
  protocol.check_equal_compute(all_arms)
  store = protocol.UnitStore(args.work_dir)
  if not args.report_only:
    corpora, bitext_path, vocab_path, partner = data(args)
    common = dict(corpora=corpora, bitext_path=bitext_path,
                  vocab_path=vocab_path, queue_size=args.queue_size)
    for seed in args.seeds:
      for name in args.arms:
        if store.load(name, seed) is None:
          store.save(name, seed, run_unit(name, seed, args, store, common,
                                          partner))
  results = store.results(all_arms, args.seeds)
  shown = [a for a in all_arms if a.name in results or a.name in args.arms]
  return protocol.report(
      f"InfoXLM evidence: Tatoeba dev half, top-1 % (8 languages, both "
      f"directions); {args.steps} steps from an MMLM start of "
      f"{args.start_steps}, m={args.momentum}", shown, ["tatoeba"], results,
      os.path.join(args.work_dir, "infoxlm_evidence.json"),
      {"steps": args.steps, "start_steps": args.start_steps,
       "batch_size": args.batch_size, "momentum": args.momentum,
       "queue_size": args.queue_size, "seeds": args.seeds,
       "mixup_partner": args.mixup_partner,
       "intermediate_layer": args.intermediate_layer,
       "intermediate_pooling": args.intermediate_pooling,
       "data": evidence_measures.MEASURE_DATA["tatoeba"]},
      resamples=args.resamples)


if __name__ == "__main__":
  main()
