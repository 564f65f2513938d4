"""CMLM training step vs Model Garden's MLM step, and the input pipeline alone.

In one run, with the identical encoder, sequence length and batch:
  * seconds per training step of CMLM (two encoder passes: s1, then s2 with
    N appended vectors) and of `official.nlp.tasks.masked_lm` (one pass);
  * examples/s of the CMLM input pipeline alone on the embedded corpus
    (reading, swapping, WordPiece, masking, batching).
CMLM does about twice the encoder work: (2L + N) / L tokens, 2.06 at L=256.
Prints figures as it goes and a final JSON line with `cmlm_step_s`,
`mlm_step_s`, `step_ratio`, `train_examples_per_s`, `pipeline_examples_per_s`.

  python benchmarks/train_step.py [--seq_length=256 --batch_size=16 ...]
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cmlm  # noqa: E402,F401  (selects Keras 2 before TensorFlow loads)
import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402

from cmlm.data_pipelines import cmlm_dataloader  # noqa: E402
from cmlm import registry_imports  # noqa: E402,F401  (registers everything)
from cmlm.objectives import base as objective_base  # noqa: E402
from official.core import exp_factory  # noqa: E402
from official.nlp.configs import bert  # noqa: E402
from official.nlp.configs import encoders  # noqa: E402
from official.nlp.data import pretrain_dataloader  # noqa: E402
from official.nlp.tasks import masked_lm  # noqa: E402
from cmlm.training import run_dir  # noqa: E402
from cmlm.training import task as task_lib  # noqa: E402
from cmlm.training import trainer  # noqa: E402


def parse_args():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--experiment", default="cmlm/tiny",
                      help="experiment whose encoder is timed")
  parser.add_argument("--seq_length", type=int, default=256)
  parser.add_argument("--batch_size", type=int, default=16)
  parser.add_argument("--masked_tokens", type=int, default=80)
  parser.add_argument("--steps", type=int, default=20)
  parser.add_argument("--pipeline_batches", type=int, default=100)
  return parser.parse_args()


def time_steps(step, features, steps):
  """Seconds per call of `step(features)`, after two warm-up calls (traced
  once: `compiled_*_step` made the optimizer's slots beforehand)."""
  for _ in range(2):
    step(features)
  start = time.perf_counter()
  for _ in range(steps):
    loss = step(features)
  float(loss)
  return (time.perf_counter() - start) / steps


def _optimizer_for(model, features):
  """Adam with its slots made for `model`'s variables (the model called
  once on `features` to make them), as the trainer does before its first
  step: otherwise the first call of the traced step makes them and
  `tf.function` traces the step a second time."""
  model(features, training=False)
  optimizer = tf_keras.optimizers.Adam(1e-4)
  trainer.build_optimizer_variables(optimizer, model.trainable_variables)
  return optimizer


def compiled_train_step(task, model, features):
  optimizer = _optimizer_for(model, features)
  metrics = task.build_metrics(training=True)

  @tf.function
  def step(features):  # the trainer's step, without its non-finite guard
    loss, gradients = task.train_step(features, model, optimizer, metrics)
    trainer.apply_update(model, optimizer, gradients)
    return loss
  return step


def compiled_model_garden_step(task, model, features):
  """Model Garden's own `MaskedLMTask.train_step`: it computes the loss and
  applies the update itself, returning its logs."""
  optimizer = _optimizer_for(model, features)
  metrics = task.build_metrics(training=True)

  @tf.function
  def step(features):
    return task.train_step(features, model, optimizer, metrics)[task.loss]
  return step


def random_features(batch, seq_length, masked, vocab_size, prefixes):
  ids = tf.random.uniform([batch, seq_length], 5, vocab_size, tf.int32,
                          seed=1)
  features = {}
  for prefix in prefixes:
    features.update({f"{prefix}input_word_ids": ids,
                     f"{prefix}input_mask": tf.ones_like(ids),
                     f"{prefix}input_type_ids": tf.zeros_like(ids)})
  positions = tf.tile(tf.range(1, masked + 1)[tf.newaxis], [batch, 1])
  features.update(masked_lm_positions=positions,
                  masked_lm_ids=tf.gather(ids, positions, batch_dims=1),
                  masked_lm_weights=tf.ones([batch, masked]))
  return features


def main():
  args = parse_args()
  params = exp_factory.get_exp_config(args.experiment)
  model_config = params.task.model
  model_config.encoder.max_position_embeddings = max(
      model_config.encoder.max_position_embeddings,
      args.seq_length + model_config.num_projections)
  encoder = model_config.encoder
  print(f"encoder: hidden {encoder.hidden_size}, layers {encoder.num_layers},"
        f" N={model_config.num_projections}, seq_length {args.seq_length}, "
        f"batch {args.batch_size}, masked {args.masked_tokens}", flush=True)

  # The experiment's CMLM objective alone (weight 1), at these shapes.
  name = run_dir.cmlm_objective_name(params)
  if name is None:
    raise SystemExit(f"{args.experiment} has no CMLM objective to time.")
  objective = getattr(params.task.objectives, name)
  objective.weight = 1.0
  data = objective.train_data
  data.max_predictions_per_seq = args.masked_tokens
  data.global_batch_size = args.batch_size
  tokenization = params.task.tokenization
  tokenization.seq_length = args.seq_length
  task_config = task_lib.SentenceEncoderTaskConfig(
      model=model_config, tokenization=tokenization,
      objectives=objective_base.ObjectivesConfig({name: objective}))
  task = task_lib.SentenceEncoderTask(task_config)
  cmlm_model = task.build_model()
  cmlm_features = {name: random_features(
      args.batch_size, args.seq_length, args.masked_tokens,
      encoder.vocab_size, ("s1_", "s2_"))}
  cmlm_step_s = time_steps(
      compiled_train_step(task, cmlm_model, cmlm_features), cmlm_features,
      args.steps)
  print(f"CMLM step: {cmlm_step_s * 1e3:.1f} ms", flush=True)

  mlm_config = masked_lm.MaskedLMConfig(model=bert.PretrainerConfig(
      encoder=encoders.EncoderConfig(type="bert", bert=encoder), cls_heads=[]),
      train_data=pretrain_dataloader.BertPretrainDataConfig(
          use_next_sentence_label=False))
  mlm_task = masked_lm.MaskedLMTask(mlm_config)
  mlm_model = mlm_task.build_model()
  mlm_features = random_features(args.batch_size, args.seq_length,
                                 args.masked_tokens, encoder.vocab_size, ("",))
  mlm_step_s = time_steps(compiled_model_garden_step(mlm_task, mlm_model,
                                                    mlm_features),
                          mlm_features, args.steps)
  print(f"Model Garden MLM step: {mlm_step_s * 1e3:.1f} ms", flush=True)

  dataset = cmlm_dataloader.build_cmlm_dataset(data, tokenization)
  iterator = iter(dataset)
  for _ in range(5):
    next(iterator)
  start = time.perf_counter()
  for _ in range(args.pipeline_batches):
    next(iterator)
  pipeline_examples_per_s = (args.pipeline_batches * args.batch_size /
                             (time.perf_counter() - start))
  train_examples_per_s = args.batch_size / cmlm_step_s
  print(f"input pipeline alone: {pipeline_examples_per_s:.0f} examples/s "
        f"({pipeline_examples_per_s / train_examples_per_s:.1f}x the CMLM "
        "training step)", flush=True)
  print(json.dumps(dict(
      cmlm_step_s=round(cmlm_step_s, 5), mlm_step_s=round(mlm_step_s, 5),
      step_ratio=round(cmlm_step_s / mlm_step_s, 3),
      train_examples_per_s=round(train_examples_per_s, 1),
      pipeline_examples_per_s=round(pipeline_examples_per_s, 1),
      pipeline_to_train_ratio=round(
          pipeline_examples_per_s / train_examples_per_s, 2),
      seq_length=args.seq_length, batch_size=args.batch_size,
      hidden_size=encoder.hidden_size, num_layers=encoder.num_layers,
      num_projections=model_config.num_projections)))


if __name__ == "__main__":
  main()
