"""`python -m cmlm demo` (`make demo`): the main job on the embedded corpus.

Trains `cmlm/tiny` on the public-domain English corpus shipped in `data/`
(Pride and Prejudice and the US inaugural addresses) for a few minutes on a
CPU, then shows
  * how far the loss fell (training loss, and held-out MLM loss and accuracy
    of the trained model against the same model untrained);
  * how well the sentence vectors find a held-out sentence's neighbour in its
    document among all held-out sentences (trained vs untrained);
  * the nearest neighbours (cosine) of a few held-out query sentences;
and ends by exporting the model (TF-Hub encoder + preprocessor, serving
SavedModel) and reloading it through `hub.KerasLayer`.
"""
import os
import shutil
import time

import numpy as np
import tensorflow as tf

from data_pipelines import cmlm_dataloader
from data_pipelines import corpus
from experiments import cmlm_experiments
from export import exporter
from modeling import losses
from official.core import exp_factory
from official.core import task_factory
from training import run_dir
from training import train

DEFAULT_MODEL_DIR = os.path.join(cmlm_experiments.REPO_ROOT, "runs", "demo")
NUM_QUERIES = 4
NUM_NEIGHBOURS = 3


def _other_s1(features):
  """The same batch with each s2 paired with another example's s1."""
  order = tf.roll(tf.range(tf.shape(features["s1_input_word_ids"])[0]), 1, 0)
  return dict(features, **{key: tf.gather(value, order)
                           for key, value in features.items()
                           if key.startswith("s1_")})


def heldout_mlm(model, data_config, tokenization_config, batches=20,
                shuffle_s1=False, objective="cmlm"):
  """Mean MLM loss and accuracy on fixed held-out batches.

  `model` is the task's `SentenceEncoderModel`. With `shuffle_s1`, each s2
  is conditioned on another pair's s1: the loss rises by as much as the
  sentence vector of the true s1 helps.
  """
  dataset = cmlm_dataloader.build_cmlm_dataset(
      data_config, tokenization_config).take(batches)
  total_loss, correct, count = 0.0, 0.0, 0.0
  for features in dataset:
    if shuffle_s1:
      features = _other_s1(features)
    logits = model({objective: features},
                   training=False)[objective]["mlm_logits"]
    weights = features["masked_lm_weights"]
    total_loss += float(losses.conditional_mlm_loss(
        features["masked_lm_ids"], logits, weights)) * float(
            tf.reduce_sum(weights))
    hits = tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32),
                            features["masked_lm_ids"]), tf.float32)
    correct += float(tf.reduce_sum(hits * weights))
    count += float(tf.reduce_sum(weights))
  return total_loss / count, correct / count


def next_sentence_retrieval(vectors, successor):
  """Top-1 accuracy of finding each sentence's successor by cosine."""
  similarity = vectors @ vectors.T
  np.fill_diagonal(similarity, -np.inf)
  queries = np.array([i for i, j in enumerate(successor) if j is not None])
  targets = np.array([successor[i] for i in queries])
  return float(np.mean(np.argmax(similarity[queries], axis=1) == targets))


def heldout_sentences(data_config):
  """Held-out sentences in corpus order, and each one's successor index."""
  documents = corpus.sentence_documents(corpus.read_documents(
      data_config.input_path, split="heldout",
      heldout_percent=data_config.heldout_percent))
  sentences, successor = [], []
  for document in documents:
    for i, sentence in enumerate(document):
      sentences.append(sentence)
      successor.append(len(sentences) if i + 1 < len(document) else None)
  return sentences, successor


def main(model_dir=None, train_steps=None):
  params = exp_factory.get_exp_config("cmlm/tiny")
  if train_steps:
    params.override({"trainer": {
        "train_steps": train_steps,
        "checkpoint_interval": min(train_steps, 500),
        "optimizer_config": {"learning_rate": {"polynomial": {
            "decay_steps": train_steps}}}}})
  if not model_dir:
    model_dir = DEFAULT_MODEL_DIR
    if os.path.exists(model_dir):
      shutil.rmtree(model_dir)  # the demo's own scratch directory
  steps = params.trainer.train_steps
  cmlm = params.task.objectives.cmlm
  tokenization = params.task.tokenization
  print(f"== CMLM demo: training cmlm/tiny for {steps} steps on the embedded "
        f"corpus ({cmlm.train_data.input_path}) into {model_dir}",
        flush=True)

  validation = cmlm.validation_data
  untrained = task_factory.get_task(params.task).build_model()
  untrained_loss, untrained_accuracy = heldout_mlm(untrained, validation,
                                                   tokenization)

  start = time.perf_counter()
  result = train.run(params, model_dir, mode="train")
  model, reporter = result.model, result.progress
  minutes = (time.perf_counter() - start) / 60
  loss, accuracy = heldout_mlm(model, validation, tokenization)
  shuffled_loss, _ = heldout_mlm(model, validation, tokenization,
                                 shuffle_s1=True)
  print(f"\n== Trained {steps} steps in {minutes:.1f} min.")
  print(f"training loss: first loop {reporter.first_loss:.3f} -> last loop "
        f"{reporter.last_loss:.3f}")
  print(f"held-out MLM loss: untrained {untrained_loss:.3f} -> trained "
        f"{loss:.3f}; accuracy {untrained_accuracy:.1%} -> {accuracy:.1%}")
  print(f"held-out MLM loss of s2 given its own s1 {loss:.4f} vs given "
        f"another pair's s1 {shuffled_loss:.4f}: what the sentence vector of s1 "
        f"contributes ({shuffled_loss - loss:+.4f})")

  tokenizer = run_dir.build_tokenizer(params)
  sentences, successor = heldout_sentences(validation)
  vectors = run_dir.embed_sentences(model.encoder, tokenizer, sentences)
  baseline = run_dir.embed_sentences(untrained.encoder, tokenizer, sentences)
  print(f"next-sentence retrieval among {len(sentences)} held-out sentences "
        f"(top-1, cosine): untrained "
        f"{next_sentence_retrieval(baseline, successor):.1%} -> trained "
        f"{next_sentence_retrieval(vectors, successor):.1%}")

  print("\n== Nearest held-out neighbours (cosine) of a few queries")
  similarity = vectors @ vectors.T
  for query in np.linspace(0, len(sentences) - 1, NUM_QUERIES + 2,
                           dtype=int)[1:-1]:
    print(f"\nquery: {_clip(sentences[query])}")
    order = [i for i in np.argsort(-similarity[query]) if i != query]
    for i in order[:NUM_NEIGHBOURS]:
      print(f"  {similarity[query, i]:.3f}  {_clip(sentences[i])}")
  print(f"\nCheckpoints and TensorBoard summaries: {model_dir}")

  print("\n== TF-Hub export of the trained model")
  print(exporter.export_and_reload(model_dir, model.encoder, sentences[:64]))


def _clip(text, width=100):
  return text if len(text) <= width else text[:width - 3] + "..."
