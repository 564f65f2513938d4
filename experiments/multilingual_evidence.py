"""Evidence at small scale for section 4: S3 vs CMLM alone on Tatoeba, +/- PCR.

With the multilingual data of `--source_data` (`SOURCE_DATA_HOLDS`), trains
the same tiny encoder
  * CMLM alone for T steps, and
  * S3: CMLM for T/2 steps, then CMLM + bitext retrieval for T/2 steps,
then reports Tatoeba top-1 retrieval accuracy in both directions (table 5's
protocol: for each sentence, the nearest by cosine among the other side's
1000 sentences) for each language, without and with principal component
removal (section 5.2; components fitted on held-apart UDHR/bitext sentences of
each language, never on the test sentences). Prints a table and a final JSON
line.

  python experiments/multilingual_evidence.py --source_data=DIR \
      [--steps=2000] [--work_dir=DIR]
"""
import argparse
import glob
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from cmlm.modeling import embedder  # noqa: E402
from cmlm.data_pipelines import bitext  # noqa: E402
from cmlm.data_pipelines import bitext_dataloader  # noqa: E402
from cmlm.data_pipelines import cmlm_dataloader  # noqa: E402
from cmlm.data_pipelines import corpus  # noqa: E402
from cmlm.data_pipelines import multilingual_vocab  # noqa: E402
from cmlm.data_pipelines import tokenization  # noqa: E402
from cmlm.data_pipelines import vocabulary  # noqa: E402
from cmlm.experiments import cmlm_experiments  # noqa: E402
from cmlm.experiments import evidence_measures  # noqa: E402
from cmlm.experiments import registry_imports  # noqa: E402,F401  (the core experiments)
from cmlm.modeling import principal_component_removal as pcr  # noqa: E402
from cmlm.modeling.vectors import cosine_similarity  # noqa: E402
from cmlm.objectives import base as objective_base  # noqa: E402
from cmlm.objectives import bitext_retrieval  # noqa: E402
from official.core import exp_factory  # noqa: E402
from cmlm.training import run_dir  # noqa: E402
from cmlm.training import train  # noqa: E402

# What `--source_data` holds (none of it ships; docs/benchmark_data.md says
# where Tatoeba comes from, each folder's own notes where the rest does).
SOURCE_DATA_HOLDS = (
    "corpora/multilingual/udhr2/ (UDHR translations, one file per "
    "language), bitext/gettext_glib_gtk/ (en-xx TSV) and bitext/multi30k/ "
    "(Multi30k train.en.gz, train.xx.gz), eval/tatoeba/ (Tatoeba test "
    "pairs, tatoeba.xxx-eng.xxx and .eng)")
# Tatoeba code -> (UDHR file, gettext language) for the 8 test languages.
LANGUAGES = {"fra": ("fra", "fr"), "deu": ("deu", "de"), "spa": ("spa", "es"),
             "rus": ("rus", "ru"), "cmn": ("cmn_hans", "zh_CN"),
             "jpn": ("jpn", "ja"), "ara": ("arb", "ar"), "ita": ("ita", "it")}


def parse_args():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--steps", type=int, default=2000)
  parser.add_argument("--bitext_weight", type=float, default=0.2)
  parser.add_argument("--vocab_size", type=int, default=12000)
  parser.add_argument("--work_dir", default=os.path.join(
      cmlm_experiments.REPO_ROOT, "runs", "multilingual_evidence"))
  parser.add_argument("--source_data", required=True,
                      help="The folder of the data: " + SOURCE_DATA_HOLDS)
  return parser.parse_args()


def gather_data(shared, work_dir):
  """UDHR monolingual corpora, bitext TSV, per-language PCR samples.

  No training pair has a side that is a Tatoeba sentence of the 8 languages
  (either half, compared with whitespace and case folded,
  `evidence_measures.without_overlap`); how many were left out is printed.
  """
  udhr = os.path.join(shared, "corpora", "multilingual", "udhr2")
  corpora = {"eng": os.path.join(udhr, "eng.txt")}
  corpora.update({code: os.path.join(udhr, f"{udhr_name}.txt")
                  for code, (udhr_name, _) in LANGUAGES.items()})
  tatoeba = evidence_measures.tatoeba_sentences(
      os.path.join(shared, "eval", "tatoeba"), list(LANGUAGES))
  removed = 0

  def clean(language_pairs):
    nonlocal removed
    kept, left_out = evidence_measures.without_overlap(language_pairs,
                                                       tatoeba)
    removed += left_out
    return kept

  pairs, samples = [], {code: [] for code in corpora}
  gettext = os.path.join(shared, "bitext", "gettext_glib_gtk")
  for code, (_, gettext_name) in LANGUAGES.items():
    language_pairs = clean(bitext.read_bitext(
        os.path.join(gettext, f"en-{gettext_name}.tsv"), header=True))
    pairs.extend(language_pairs)
    samples[code] = [target for _, target in language_pairs[:300]]
    samples["eng"].extend(source for source, _ in language_pairs[:40])
  multi30k = os.path.join(shared, "bitext", "multi30k")
  for code, name in (("deu", "de"), ("fra", "fr")):
    pairs.extend(clean(bitext.read_bitext(
        f"{multi30k}/train.en.gz|{multi30k}/train.{name}.gz")[:5000]))
  print(f"{removed} training pairs left out: a side is a Tatoeba "
        "sentence.", flush=True)
  os.makedirs(work_dir, exist_ok=True)
  bitext_path = os.path.join(work_dir, "bitext.tsv")
  with open(bitext_path, "w", encoding="utf-8") as f:
    f.writelines(f"{s.replace(chr(9), ' ')}\t{t.replace(chr(9), ' ')}\n"
                 for s, t in pairs)
  return corpora, bitext_path, pairs, samples


def build_vocab(corpora, pairs, vocab_size, work_dir):
  path = os.path.join(work_dir, "vocab_multilingual_cased.txt")
  if not os.path.exists(path):
    texts = {code: list(corpus.read_documents(p))
             for code, p in corpora.items()}
    texts["eng"] += [s for s, _ in pairs]
    texts["bitext_targets"] = [t for _, t in pairs]
    vocab = multilingual_vocab.build_multilingual_vocab(texts, vocab_size,
                                                        0.3)
    vocabulary.write_vocab(vocab, path)
  return path


def experiment(corpora, bitext_path, vocab_path, steps, cmlm_weight,
               bitext_weight, init_checkpoint=""):
  """cmlm/tiny's encoder on the multilingual data: CMLM (`cmlm_weight`) and
  bitext retrieval (`bitext_weight`; 0 leaves it out), one cased
  vocabulary and tokenization for both."""
  params = exp_factory.get_exp_config("cmlm/tiny")
  cmlm = params.task.objectives.cmlm
  cmlm.weight = cmlm_weight
  cmlm.validation_data = cmlm_dataloader.CmlmDataConfig()  # none
  params.task.objectives = objective_base.ObjectivesConfig({
      "cmlm": cmlm,
      "bitext_retrieval": bitext_retrieval.BitextRetrievalObjectiveConfig(
          weight=bitext_weight,
          train_data=bitext_dataloader.BitextDataConfig(
              input_path=bitext_path, global_batch_size=32,
              is_training=True))})
  params.override({
      "task": {
          "init_checkpoint": init_checkpoint,
          "model": {"encoder": {"vocab_size": cmlm_experiments.vocab_size_of(
              vocab_path)}},
          "tokenization": {"vocab_file": vocab_path, "lower_case": False,
                           "seq_length": 48},
          "objectives": {"cmlm": {"train_data": {
              "input_path": ",".join(corpora.values()), "split": "all",
              "heldout_percent": 0}}}},
      "trainer": {"train_steps": steps, "checkpoint_interval": steps,
                  "optimizer_config": {"learning_rate": {"polynomial": {
                      "decay_steps": steps}}}}})
  return params


def tatoeba(encode, shared, components=None):
  """Top-1 accuracy xx->eng and eng->xx per language, cosine."""
  results = {}
  for code in LANGUAGES:
    base = os.path.join(shared, "eval", "tatoeba", f"tatoeba.{code}-eng")
    with open(f"{base}.{code}", encoding="utf-8") as f:
      foreign = [line.rstrip("\n") for line in f]
    with open(f"{base}.eng", encoding="utf-8") as f:
      english = [line.rstrip("\n") for line in f]
    x, y = encode(foreign), encode(english)
    if components is not None:
      x, y = components.remove(x, code), components.remove(y, "eng")
    similarity = cosine_similarity(x, y, dtype=None)
    gold = np.arange(len(x))
    results[code] = (float(np.mean(similarity.argmax(1) == gold)),
                     float(np.mean(similarity.argmax(0) == gold)))
  return results


def evaluate(model, tokenization_config, shared, samples):
  """Tatoeba accuracies of `model`'s encoder, without and with PCR."""
  tokenizer = tokenization.build_wordpiece_tokenizer(tokenization_config)
  encode = embedder.encoder_embedder(model.encoder, tokenizer).embed
  components = pcr.LanguageComponents.fit(
      {code: encode(sentences) for code, sentences in samples.items()})
  return tatoeba(encode, shared), tatoeba(encode, shared, components)


def main():
  args = parse_args()
  start = time.perf_counter()
  corpora, bitext_path, pairs, samples = gather_data(args.source_data,
                                                     args.work_dir)
  vocab_path = build_vocab(corpora, pairs, args.vocab_size, args.work_dir)
  print(f"{len(pairs)} translation pairs; vocabulary {vocab_path}", flush=True)
  half = args.steps // 2
  runs = {}
  cmlm_dir = os.path.join(args.work_dir, "cmlm_only")
  runs["CMLM"] = train.run(experiment(corpora, bitext_path, vocab_path,
                                      args.steps, 1.0, 0.0), cmlm_dir).model
  stage1 = os.path.join(args.work_dir, "s3_stage1")
  train.run(experiment(corpora, bitext_path, vocab_path, half, 1.0, 0.0),
            stage1)
  runs["S3"] = train.run(experiment(
      corpora, bitext_path, vocab_path, args.steps - half, 1.0,
      args.bitext_weight, init_checkpoint=stage1),
                         os.path.join(args.work_dir, "s3_stage2")).model
  report = {}
  tokenization_config = experiment(corpora, bitext_path, vocab_path,
                                   args.steps, 1.0, 0.0).task.tokenization
  for name, model in runs.items():
    plain, removed = evaluate(model, tokenization_config, args.source_data,
                              samples)
    report[name], report[name + "+PCR"] = plain, removed
  print(f"\nTatoeba top-1 accuracy (xx->eng / eng->xx), {args.steps} steps "
        f"each, alpha={args.bitext_weight}:")
  print("model     " + " ".join(f"{code:>11}" for code in LANGUAGES) +
        "        avg")
  summary = {}
  for name, results in report.items():
    average = float(np.mean([np.mean(v) for v in results.values()]))
    summary[name] = round(100 * average, 2)
    print(f"{name:<9} " + " ".join(
        f"{100 * a:5.1f}/{100 * b:5.1f}" for a, b in results.values()) +
          f" {100 * average:6.2f}")
  print(f"({(time.perf_counter() - start) / 60:.1f} min)")
  print(json.dumps({"steps": args.steps, "bitext_weight": args.bitext_weight,
                    "tatoeba_avg_top1": summary,
                    "per_language": {k: {c: [round(100 * a, 1),
                                             round(100 * b, 1)]
                                         for c, (a, b) in v.items()}
                                     for k, v in report.items()}}))


if __name__ == "__main__":
  main()
