"""Mining Multi30k back: its en-de training captions, the German side
shuffled, mined with `inference.bitext_mining` (the ratio margin, Artetxe &
Schwenk 2018, arXiv:1811.01136) and scored against the true alignment.

The encoder never saw Multi30k. By default (`--model=train`) it is cmlm/tiny's
encoder trained for `--steps` steps on bitext retrieval with the additive
margin (section 4.4 of arXiv:2012.14388) over the other shipped en-de bitext
only: Debian Reference's aligned paragraphs and GLib/GTK's gettext messages,
with a cased multilingual vocabulary built from that bitext alone. A model
trained so in minutes on two cores is weak, and its domain (software
documentation) is not captions: the figures measure the mining machinery on
real translations, not a good multilingual encoder. `--model=PATH` mines
with any model `encode` takes instead (an export, a training run).

Reports, for each candidate mode and margin: precision, recall and F1 at the
F1-optimal threshold (`evaluation.mining.f1_optimal_threshold`: the
"oracle" threshold), and, for the IVF and HNSW indexes, their recall of the
exact neighbours and the share of the exact index's mined pairs they mine
too. Writes `--output` (default docs/results/mine_multi30k.json) with the
command, commit, CPU, ISA, cores, date and load.

  python experiments/mine_multi30k.py --data_dir=DIR [--steps=1500]
      [--sentences=29000] [--model=train|PATH] [--work_dir=DIR]

`--data_dir` holds bitext/multi30k/ (train.en.gz, train.de.gz),
bitext/debian_reference/ (debian-reference.en-de.aligned.tsv) and
bitext/gettext_glib_gtk/ (en-de.tsv).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from cmlm.data_pipelines import atomic_file  # noqa: E402
from cmlm.data_pipelines import bitext  # noqa: E402
from cmlm.evaluation import mining  # noqa: E402
from cmlm.experiments import unit_provenance  # noqa: E402
from cmlm.inference import bitext_mining  # noqa: E402
from cmlm.inference import nearest_neighbours  # noqa: E402

REPO_ROOT = unit_provenance.REPO_ROOT
APPROXIMATE = {"ivf": nearest_neighbours.IndexConfig("ivf", nprobe=16),
               "hnsw": nearest_neighbours.IndexConfig("hnsw")}


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--data_dir", required=True, help="holds bitext/"
                      "multi30k, bitext/debian_reference and "
                      "bitext/gettext_glib_gtk")
  parser.add_argument("--model", default="train", help="train (a tiny "
                      "bitext model, trained here) or a model encode takes")
  parser.add_argument("--steps", type=int, default=1500)
  parser.add_argument("--sentences", type=int, default=29000)
  parser.add_argument("--k", type=int, default=4)
  parser.add_argument("--seed", type=int, default=1)
  parser.add_argument("--work_dir", default=os.path.join(
      REPO_ROOT, "runs", "mine_multi30k"))
  parser.add_argument("--output", default=os.path.join(
      REPO_ROOT, "docs", "results", "mine_multi30k.json"))
  args = parser.parse_args(argv)
  if args.steps < 1 or args.sentences < 2 or args.k < 1:
    parser.error("--steps and --k must be 1 or more, --sentences 2 or more.")
  return args


def shuffled_multi30k(data_dir, sentences, seed):
  """(English, German shuffled, gold pairs (English row, German row))."""
  folder = os.path.join(data_dir, "bitext", "multi30k")
  pairs = bitext.read_bitext(f"{folder}/train.en.gz|{folder}/train.de.gz")
  pairs = pairs[:sentences]
  order = np.random.default_rng(seed).permutation(len(pairs))
  english = [source for source, _ in pairs]
  german = [pairs[i][1] for i in order]
  gold = [(int(i), row) for row, i in enumerate(order)]
  return english, german, gold


def training_bitext(data_dir, work_dir):
  """The other en-de bitext in one TSV: (its path, its pairs)."""
  folder = os.path.join(data_dir, "bitext")
  pairs = bitext.read_bitext(os.path.join(
      folder, "debian_reference", "debian-reference.en-de.aligned.tsv"))
  pairs += bitext.read_bitext(os.path.join(
      folder, "gettext_glib_gtk", "en-de.tsv"), header=True)
  clean = lambda text: " ".join(text.replace("\\n", " ").split())
  pairs = [(clean(s), clean(t)) for s, t in pairs if clean(s) and clean(t)]
  os.makedirs(work_dir, exist_ok=True)
  path = os.path.join(work_dir, "bitext_en_de.tsv")
  with open(path, "w", encoding="utf-8") as f:
    f.writelines(f"{s}\t{t}\n" for s, t in pairs)
  return path, pairs


def train_bitext_model(data_dir, work_dir, steps, seed):
  """cmlm/tiny's encoder trained on bitext retrieval alone over the other
  en-de bitext: the run's directory."""
  # pylint: disable=g-import-not-at-top
  from cmlm.data_pipelines import bitext_dataloader
  from cmlm.data_pipelines import multilingual_vocab
  from cmlm.data_pipelines import vocabulary
  from cmlm.experiments import cmlm_experiments
  from cmlm.experiments import registry_imports  # noqa: F401  pylint: disable=unused-import
  from cmlm.objectives import base as objective_base
  from cmlm.objectives import bitext_retrieval
  from cmlm.training import train
  from official.core import exp_factory
  # pylint: enable=g-import-not-at-top
  model_dir = os.path.join(work_dir, f"bitext_model_{steps}_steps")
  if os.path.exists(os.path.join(model_dir, "params.yaml")):
    return model_dir
  bitext_path, pairs = training_bitext(data_dir, work_dir)
  vocab_path = os.path.join(work_dir, "vocab_en_de_cased.txt")
  vocabulary.write_vocab(multilingual_vocab.build_multilingual_vocab(
      {"en": [s for s, _ in pairs], "de": [t for _, t in pairs]}, 8000, 0.3),
                         vocab_path)
  params = exp_factory.get_exp_config("cmlm/tiny")
  params.task.objectives = objective_base.ObjectivesConfig({
      "bitext_retrieval": bitext_retrieval.BitextRetrievalObjectiveConfig(
          weight=1.0, train_data=bitext_dataloader.BitextDataConfig(
              input_path=bitext_path, global_batch_size=64,
              is_training=True))})
  params.override({
      "task": {"seed": seed,
               "model": {"encoder": {
                   "vocab_size": cmlm_experiments.vocab_size_of(vocab_path)}},
               "tokenization": {"vocab_file": vocab_path, "lower_case": False,
                                "seq_length": 48}},
      "trainer": {"train_steps": steps, "checkpoint_interval": steps,
                  "validation_interval": steps,
                  "optimizer_config": {"learning_rate": {"polynomial": {
                      "decay_steps": steps}}}}})
  print(f"Training on {len(pairs)} en-de pairs (Debian Reference, "
        f"GLib/GTK) for {steps} steps...", flush=True)
  train.run(params, model_dir)
  return model_dir


def encode(model, sentences, path):
  from cmlm.inference import embedders  # pylint: disable=g-import-not-at-top
  if not os.path.exists(path):
    embeddings = embedders.load_embedder(model).embed(sentences, 256)
    np.save(path, embeddings.astype(np.float32))
  return nearest_neighbours.read_embeddings(path, path)


def scores(pairs, gold):
  """Precision, recall, F1 (%) and the oracle threshold of `pairs`."""
  found = mining.f1_optimal_threshold(pairs.as_tuples(), gold)
  return {key: (round(value, 5 if key == "threshold" else 2)
                if isinstance(value, float) else value)
          for key, value in found.items()}


def mined_pairs(forward, backward, margin, mode):
  """`bitext_mining.mine`'s pairs from neighbourhoods found once."""
  forward_best = bitext_mining.best_candidates(
      forward, bitext_mining.margin_scores(forward, backward.means, margin))
  backward_best = bitext_mining.best_candidates(
      backward, bitext_mining.margin_scores(backward, forward.means, margin))
  return bitext_mining.select_pairs(*forward_best, *backward_best, mode)


def measure(english, german, gold, k):
  """F1 at the oracle threshold per mode and margin; the approximate
  indexes' recall of the exact neighbours (every English sentence) and
  agreement with the exact index's pairs (max mode, ratio margin)."""
  exact = bitext_mining.neighbourhoods_both_ways(
      english, german, k, nearest_neighbours.IndexConfig())
  results = {}
  for margin in bitext_mining.MARGINS:
    for mode in bitext_mining.MODES:
      results[f"{mode}/{margin}"] = scores(
          mined_pairs(*exact, margin, mode), gold)
      print(f"{mode:>12} {margin:>8}: {results[f'{mode}/{margin}']}",
            flush=True)
  exact_pairs = {(i, j) for i, j, _ in mined_pairs(
      *exact, "ratio", "max").as_tuples()}
  approximate = {}
  for name, config in APPROXIMATE.items():
    found = bitext_mining.neighbourhoods_both_ways(english, german, k, config)
    pairs = mined_pairs(*found, "ratio", "max")
    recall = np.mean([len(set(a) & set(e)) / k for a, e in
                      zip(found[0].indices, exact[0].indices)])
    approximate[name] = {
        "config": dict(vars(config)),
        "neighbour_recall_at_k": round(float(recall), 4),
        "top1_agreement": round(float(np.mean(
            found[0].indices[:, 0] == exact[0].indices[:, 0])), 4),
        "pairs_agreement": round(len(
            {(i, j) for i, j, _ in pairs.as_tuples()} & exact_pairs) /
                                 max(len(exact_pairs), 1), 4),
        "max/ratio": scores(pairs, gold)}
    print(f"{name}: {approximate[name]}", flush=True)
  return results, approximate


def main(argv=None):
  args = parse_args(argv)
  facts = unit_provenance.provenance("mine_multi30k", args.seed,
                                     refuse_modified=False, argv=argv)
  english, german, gold = shuffled_multi30k(args.data_dir, args.sentences,
                                            args.seed)
  model = (train_bitext_model(args.data_dir, args.work_dir, args.steps,
                              args.seed)
           if args.model == "train" else args.model)
  os.makedirs(args.work_dir, exist_ok=True)
  tag = f"{os.path.basename(os.path.normpath(model))}_{len(english)}"
  x = encode(model, english, os.path.join(args.work_dir, f"en_{tag}.npy"))
  y = encode(model, german, os.path.join(args.work_dir, f"de_{tag}.npy"))
  results, approximate = measure(x, y, gold, args.k)
  report = {key: facts[key] for key in unit_provenance.FIELDS
            if key not in ("arm",)}
  report["command"] = unit_provenance.without_local_paths(
      report["command"], ("data_dir", "work_dir", "output") +
      (("model",) if args.model != "train" else ()))
  report.update({
      "model": ("cmlm/tiny encoder, bitext retrieval alone, "
                f"{args.steps} steps on Debian Reference + GLib/GTK en-de"
                if args.model == "train" else "given by --model"),
      "sentences": len(english), "k": args.k,
      "f1_optimal_threshold": results, "approximate_indexes": approximate})
  with atomic_file.atomic_file(args.output) as temporary:
    with open(temporary, "w", encoding="utf-8") as f:
      json.dump(report, f, indent=1)
      f.write("\n")
  print(f"Wrote {args.output}")


if __name__ == "__main__":
  main()
