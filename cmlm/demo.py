"""`python -m cmlm demo` (`make demo`): the main job on the embedded corpus.

Trains `cmlm/demo` (cmlm/tiny with max pooling) on the public-domain English
corpus shipped in `data/` for a few minutes on a CPU, then shows, on every
held-out pair, for the trained encoder against the same one untrained
(`evaluation/demo_measures.py`):
  * the held-out MLM loss, and the conditioning gain: how much the sentence
    vector of the pair's own s1 lowers it against a random other s1 (and
    one of the same or of another source), with bootstrap 95% intervals;
  * next-sequence retrieval (top-1, top-10, median rank, mean reciprocal
    rank with a paired bootstrap interval of its gain) and STS-B dev
    Spearman, also of the untrained weights read with mean pooling (a bag of
    random word vectors, the strongest untrained baseline) when the
    experiment pools otherwise;
  * the nearest neighbours (cosine) of a few held-out queries;
then exports the model (TF-Hub encoder + preprocessor, serving SavedModel),
reloads it through `hub.KerasLayer`, and prints, last, one JSON line of the
figures.

Seeded end to end (`seed`, `task.seed`): the untrained encoder and the
trained one start from the same weights, and training reads the same batches
and masks, draws the same dropout masks; the held-out masks and the
bootstrap resamples have their own fixed seeds. Two runs with one seed on
one machine print the same figures (all but `train_minutes`).
"""
import copy
import json
import os
import shutil
import tempfile
import time
from typing import Optional

import numpy as np
import tensorflow as tf
# The demo ends by reloading its export through hub.KerasLayer: without a
# usable tensorflow_hub it stops here, in one line, not after training.
import tensorflow_hub

from cmlm.data_pipelines import tokenization
from cmlm.evaluation import demo_measures
from cmlm.experiments import cmlm_experiments
from cmlm.export import exporter
from cmlm.inference import embedders
from cmlm.inference import integrity
from cmlm.inference import layout
from cmlm.inference import run_record
from cmlm.modeling import embedder
from cmlm.modeling.vectors import l2_normalize
from official.core import exp_factory
from official.core import task_factory
from cmlm.training import prepared_run
from cmlm.training import run_dir
from cmlm.training import train

# Relative to the working directory, as every command's outputs: an
# installed garden never writes inside its own package.
DEFAULT_MODEL_DIR = os.path.join("runs", "demo")
NUM_QUERIES = 4
NUM_NEIGHBOURS = 3
DEFAULT_SEED = 0


def main(model_dir=None, train_steps=None, seed=DEFAULT_SEED,
         stsb_dev=demo_measures.STSB_DEV):
  """`stsb_dev`: the STS-B dev file whose Spearman is reported (default the
  copy shipped in data/sts_b_dev/)."""
  params = demo_params(train_steps, seed)
  check_embedded_data(params, stsb_dev)
  # Everything the run reads is checked before anything is written or
  # measured; the strategy first (it must exist before any TensorFlow op).
  strategy = train.make_strategy(params)
  prepared = prepared_run.prepare(params)
  if not model_dir:
    model_dir = os.path.abspath(DEFAULT_MODEL_DIR)
    replace_default_model_dir(model_dir)
  model, pairs, figures = train_and_measure(prepared, model_dir, strategy,
                                            stsb_dev)
  sentences = sorted({s1 for s1, _ in pairs})
  print_neighbours(unit_embeddings(embedders.load_embedder(model_dir)),
                   sentences)
  print(f"\nCheckpoints and TensorBoard summaries: {model_dir}")

  print("\n== TF-Hub export of the trained model")
  print(export_and_reload(model_dir, model.encoder, sentences[:64]))
  print(json.dumps(figures))


def demo_params(train_steps=None, seed=DEFAULT_SEED):
  """`cmlm/demo` with its seed, and `train_steps` (the decay follows)."""
  if train_steps is not None and train_steps < 1:
    raise ValueError(f"--train_steps must be 1 or more, got {train_steps}.")
  if seed is None or seed < 0:
    raise ValueError(f"--seed must be 0 or more, got {seed}.")
  params = exp_factory.get_exp_config("cmlm/demo")
  params.override({"task": {"seed": seed}})
  if train_steps:
    # The warm-up stays within the run: Model Garden's linear warm-up climbs
    # towards the decayed rate at its last step, which is 0 when the decay
    # ends first, so a run shorter than its warm-up would not train.
    warmup = params.trainer.optimizer_config.warmup.linear.warmup_steps
    params.override({"trainer": {
        "train_steps": train_steps,
        "checkpoint_interval": min(train_steps, 500),
        "optimizer_config": {
            "learning_rate": {"polynomial": {"decay_steps": train_steps}},
            "warmup": {"linear": {"warmup_steps": min(
                warmup, max(1, train_steps // 10))}}}}})
  return params


def train_and_measure(prepared, model_dir, strategy=None,
                      stsb_dev=demo_measures.STSB_DEV):
  """Measures the untrained model, trains it into `model_dir`, measures it
  again and prints the figures: (trained model, held-out pairs, the figures
  of the demo's JSON line)."""
  params = prepared.params
  steps = params.trainer.train_steps
  cmlm = params.task.objectives.cmlm
  print(f"== CMLM demo: training cmlm/demo for {steps} steps (seed "
        f"{params.task.seed}) on the embedded corpus "
        f"({cmlm.train_data.input_path}) into {model_dir}", flush=True)
  tokenizer = tokenization.build_wordpiece_tokenizer(
       params.task.tokenization, vocab=prepared.vocab)
  pairs, features, sources = demo_measures.heldout_pairs(
      cmlm.validation_data, params.task.tokenization, prepared.vocab)
  # The seed `train.run` sets again before it builds its model: the
  # untrained encoder is the trained one's starting point.
  train.seed_run(params.task)
  untrained = task_factory.get_task(params.task).build_model()
  before = measure(untrained, tokenizer, pairs, features, sources,
                   stsb_dev=stsb_dev)
  bag_of_words = None
  if params.task.model.pooling != "mean":
    bag_of_words = mean_pooled_measures(params, untrained.encoder, tokenizer,
                                        pairs, stsb_dev)

  start = time.perf_counter()
  result = train.run(prepared, model_dir, strategy=strategy)
  model, reporter = result.model, result.progress
  minutes = (time.perf_counter() - start) / 60
  after = measure(model, tokenizer, pairs, features, sources,
                  stsb_dev=stsb_dev)
  if reporter.first_loss is None:  # a finished run in --model_dir
    print(f"\n== {model_dir} already holds the run trained to step {steps}; "
          "measuring it without training.")
  else:
    print(f"\n== Trained to step {steps} in {minutes:.1f} min.")
    print(f"training loss: first loop {reporter.first_loss:.3f} -> last loop "
          f"{reporter.last_loss:.3f}")
  mrr_gain = demo_measures.retrieval_gain(before["retrieval_ranks"],
                                          after["retrieval_ranks"])
  print_figures(before, after, bag_of_words, mrr_gain)
  return model, pairs, summary(before, after, bag_of_words, mrr_gain, steps,
                               minutes, params.task.seed)


def print_figures(before, after, bag_of_words, mrr_gain):
  """The measures, untrained -> trained, one line each."""
  print(f"held-out MLM loss over {after['heldout_pairs']} pairs: untrained "
        f"{before['heldout_mlm_loss']:.3f} -> trained "
        f"{after['heldout_mlm_loss']:.3f}")
  print("conditioning gain (held-out MLM loss of s2 given another pair's s1 "
        "minus given its own, nats/token, bootstrap 95% interval):")
  for key, what in (("conditioning_gain", "random other s1"),
                    ("conditioning_gain_same_source", "s1 of the same source"),
                    ("conditioning_gain_other_source", "s1 of another source")):
    if after[key] is not None:
      low, high = after[key + "_ci95"]
      print(f"  {what:22s} untrained {before[key]:+.4f}  trained "
            f"{after[key]:+.4f} [{low:+.4f}, {high:+.4f}]")
  print(f"next-sequence retrieval, each s1 against all "
        f"{after['retrieval_candidates']} held-out s2 (cosine), untrained -> "
        f"trained:")
  print(f"  top-1 {before['retrieval_top1']:.1%} -> "
        f"{after['retrieval_top1']:.1%}, top-10 "
        f"{before['retrieval_top10']:.1%} -> {after['retrieval_top10']:.1%}, "
        f"median rank {before['retrieval_median_rank']:.0f} -> "
        f"{after['retrieval_median_rank']:.0f}")
  gain, (low, high) = mrr_gain
  print(f"  mean reciprocal rank {before['retrieval_mrr']:.4f} -> "
        f"{after['retrieval_mrr']:.4f} (gain {gain:+.4f}, paired bootstrap "
        f"95% interval [{low:+.4f}, {high:+.4f}])")
  if after["stsb_dev"] is not None:
    print(f"STS-B dev Spearman x 100: untrained {before['stsb_dev']:.1f} -> "
          f"trained {after['stsb_dev']:.1f}")
  if bag_of_words is not None:
    stsb = bag_of_words["stsb_dev"]
    print(f"the untrained weights mean-pooled (bag of random word vectors): "
          f"retrieval top-1 {bag_of_words['retrieval_top1']:.1%}, mean "
          f"reciprocal rank {bag_of_words['retrieval_mrr']:.4f}"
          + (f", STS-B dev {stsb:.1f}" if stsb is not None else ""))


def print_neighbours(embed, sentences):
  """The nearest held-out neighbours (cosine) of a few held-out s1."""
  vectors = embed(sentences)
  print("\n== Nearest held-out neighbours (cosine) of a few queries")
  similarity = vectors @ vectors.T
  for query in np.linspace(0, len(sentences) - 1, NUM_QUERIES + 2,
                           dtype=int)[1:-1]:
    print(f"\nquery: {_clip(sentences[query])}")
    order = [i for i in np.argsort(-similarity[query]) if i != query]
    for i in order[:NUM_NEIGHBOURS]:
      print(f"  {similarity[query, i]:.3f}  {_clip(sentences[i])}")


def summary(before, after, bag_of_words, mrr_gain, steps, minutes, seed):
  """The demo's last line: every figure, as one JSON object."""
  mean_pooled = lambda key: bag_of_words and bag_of_words[key]
  figures = {
      "conditioning_gain": after["conditioning_gain"],
      "conditioning_gain_ci95": after["conditioning_gain_ci95"],
      "conditioning_gain_same_source": after["conditioning_gain_same_source"],
      "conditioning_gain_other_source":
          after["conditioning_gain_other_source"],
      "conditioning_gain_untrained": before["conditioning_gain"],
      "heldout_pairs": after["heldout_pairs"],
      "heldout_mlm_loss_untrained": before["heldout_mlm_loss"],
      "heldout_mlm_loss_trained": after["heldout_mlm_loss"]}
  for key in ("retrieval_top1", "retrieval_top10", "retrieval_median_rank",
              "retrieval_mrr"):
    figures[key + "_untrained"] = before[key]
    figures[key + "_trained"] = after[key]
  figures.update({
      "retrieval_mrr_gain_ci95": mrr_gain[1],
      "retrieval_candidates": after["retrieval_candidates"],
      "stsb_dev_untrained": before["stsb_dev"],
      "stsb_dev_trained": after["stsb_dev"],
      "retrieval_top1_untrained_mean_pooled": mean_pooled("retrieval_top1"),
      "retrieval_mrr_untrained_mean_pooled": mean_pooled("retrieval_mrr"),
      "stsb_dev_untrained_mean_pooled": mean_pooled("stsb_dev"),
      "train_steps": steps, "seed": seed, "train_minutes": round(minutes, 2)})
  return figures


def check_embedded_data(params, stsb_dev=demo_measures.STSB_DEV):
  """One sentence, before any work, when the corpus, vocabulary or STS-B dev
  file the demo reads is not there (`data/` in a checkout, `cmlm/data/`
  when installed)."""
  if stsb_dev != demo_measures.STSB_DEV and not os.path.isfile(stsb_dev):
    raise FileNotFoundError(
        f"--stsb_dev={stsb_dev} is not a file; give STS-B dev in its "
        "tab-separated layout (sts-dev.csv), or leave the flag out for the "
        "copy in data/sts_b_dev/.")
  for path in (params.task.objectives.cmlm.train_data.input_path,
               params.task.tokenization.vocab_file, stsb_dev):
    if not os.path.exists(path):
      raise FileNotFoundError(
          f"The demo's data is missing: {path} does not exist. The garden "
          "ships it (data/ in a checkout of the repository, cmlm/data/ in "
          "an installed package): reinstall the garden, or run from a "
          "checkout.")


def replace_default_model_dir(model_dir):
  """Empties the demo's default run directory (`runs/demo` under the
  working directory), refusing, in one sentence, to delete a directory
  that is not a run (nor empty)."""
  if not os.path.exists(model_dir):
    return
  if os.listdir(model_dir) and not run_dir.is_run_dir(model_dir):
    raise FileExistsError(
        f"{model_dir} exists and is not a training run, so the demo will not "
        "replace it; give --model_dir=DIR, or move it away.")
  shutil.rmtree(model_dir)  # the demo's own scratch directory


def measure(model, tokenizer, pairs, features, sources, objective="cmlm",
            stsb_dev=demo_measures.STSB_DEV):
  """The demo's measures of one model (`demo_measures`)."""
  # Traced once (the last, shorter batch relaxes its shape): the model
  # called eagerly spent about twice the CPU on the same batches.
  mlm_logits = tf.function(
      lambda batch: model({objective: batch},
                          training=False)[objective]["mlm_logits"],
      reduce_retracing=True, autograph=False)
  embed = unit_embeddings(embedder.encoder_embedder(model.encoder, tokenizer))
  result = demo_measures.conditioning_gain(mlm_logits, features, sources)
  result.update(retrieval(embed, pairs))
  result["stsb_dev"] = demo_measures.stsb_dev_spearman(embed, stsb_dev)
  return result


def retrieval(embed, pairs):
  """Next-sequence retrieval: the ranks, their count and their measures."""
  ranks = demo_measures.retrieval_ranks(embed, pairs)
  return dict(demo_measures.retrieval_measures(ranks), retrieval_ranks=ranks,
              retrieval_candidates=len({s2 for _, s2 in pairs}))


def mean_pooled_measures(params, encoder, tokenizer, pairs,
                         stsb_dev=demo_measures.STSB_DEV):
  """Retrieval and STS-B dev of `encoder`'s weights read with mean pooling.

  Pooling has no weights, so this is the same untrained transformer: its
  mean-pooled vectors are a bag of random word vectors, the baseline a
  trained encoder should beat whatever its own pooling (table 9).
  """
  mean_params = copy.deepcopy(params)
  mean_params.task.model.pooling = "mean"
  with tempfile.TemporaryDirectory() as directory:
    path = tf.train.Checkpoint(encoder=encoder).write(
        os.path.join(directory, "untrained"))
    mean_encoder = run_dir.restore_encoder(mean_params, path)
  embed = unit_embeddings(embedder.encoder_embedder(mean_encoder, tokenizer))
  return dict(retrieval(embed, pairs),
              stsb_dev=demo_measures.stsb_dev_spearman(embed, stsb_dev))


def unit_embeddings(embedder_):
  """sentences -> L2-normalised embeddings `[n, dim]`, with `embedder_`."""
  return lambda sentences: l2_normalize(embedder_.embed(sentences,
                                                        batch_size=256))


def _clip(text, width=100):
  return text if len(text) <= width else text[:width - 3] + "..."


def export_and_reload(model_dir: str, in_memory_encoder, sentences,
                      export_dir: Optional[str] = None) -> str:
  """The demo's last step: export, reload with `hub.KerasLayer`, compare.

  Exports the latest checkpoint of `model_dir` to `export_dir` (default
  `<model_dir>/export`, replaced if present; kept when it already is that
  checkpoint's export, whole: the demo run again on a finished run),
  reloads the encoder and preprocessor through `hub.KerasLayer` and
  compares their embeddings of `sentences` with `in_memory_encoder` fed
  the training tokenization.

  Returns:
    A one-line summary to print.
  """
  export_dir = export_dir or os.path.join(model_dir, "export")
  run = run_record.read_run(model_dir)
  version_dir = published_export_of(run, export_dir)
  if version_dir:
    done = (f"{export_dir} already holds the export of "
            f"{os.path.basename(run.checkpoint_path)}")
  else:
    result = exporter.export_run(model_dir, export_dir, overwrite=True,
                                 run=run)
    version_dir, done = result.version_dir, f"exported to {result.export_dir}"
  tokenizer = run.tokenizer()
  batch = tf.constant(list(sentences))
  preprocess = tensorflow_hub.KerasLayer(
      os.path.join(version_dir, "preprocessor"))
  encode = tensorflow_hub.KerasLayer(
      os.path.join(version_dir, "encoder"))
  reloaded = encode(preprocess(batch))["default"]
  expected = in_memory_encoder(tokenizer.tokenize_and_pack(batch),
                               training=False)["default"]
  difference = float(np.max(np.abs(reloaded.numpy() - expected.numpy())))
  return (f"{done}; hub.KerasLayer reload: "
          f"max |diff| vs in-memory = {difference:.1e} over {len(sentences)} "
          "sentences")


def published_export_of(run, export_dir: str) -> Optional[str]:
  """The published version of `export_dir` when it was exported from
  `run`'s checkpoint (its name and step, and written after it) and its
  files are as written (`integrity`); None otherwise, and when there is
  none."""
  version_dir = layout.resolve(export_dir)
  info_file = os.path.join(version_dir, "encoder", layout.INFO_FILE)
  info = layout.read_info(os.path.join(version_dir, "encoder"))
  if not info or (info.get("checkpoint"), info.get("step")) != (
      os.path.basename(run.checkpoint_path), run.step):
    return None
  if (os.path.getmtime(run.checkpoint_path + ".index") >
      os.path.getmtime(info_file)):
    return None  # a later run's checkpoint of the same name
  try:
    for part in ("encoder", "preprocessor"):
      integrity.check_saved_model(os.path.join(version_dir, part))
  except (integrity.DamagedModel, OSError):
    return None
  return version_dir
