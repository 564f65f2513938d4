"""Examples/s of the CMLM training step: tiny and base, XLA on/off, fp32/bf16.

For each configuration (model x `jit_compile` x precision) this times the
step `SentenceEncoderTrainer` runs: the task's forward and backward pass (compiled with
XLA when `jit_compile`), then the optimizer update, on random features of
the experiment's shapes. Prints one JSON line per configuration with
examples/s, seconds per step, the first (compiling) call, and the model's
training FLOPs per step; on a GPU also the model FLOPs utilisation (MFU)
against the GPU's peak (`--peak_tflops`, or a table of known GPUs).

  python benchmarks/step_precision_xla.py                 # CPU: everything
  python benchmarks/step_precision_xla.py --models=base --precisions=bfloat16 \
      --jit=on --base_batch_size=64 --base_steps=20       # a GPU
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

from benchmarks.train_step import random_features  # noqa: E402
from cmlm import registry_imports  # noqa: E402,F401  (registers everything)
from cmlm.objectives import base as objective_base  # noqa: E402
from official.core import exp_factory  # noqa: E402
from cmlm.training import run_dir  # noqa: E402
from cmlm.training import task as task_lib  # noqa: E402
from cmlm.training import trainer  # noqa: E402
from cmlm.training import train  # noqa: E402

EXPERIMENTS = {"tiny": "cmlm/tiny", "base": "cmlm/en_base"}
# Dense bfloat16 peak TFLOP/s, by a substring of the GPU's name.
PEAK_BF16_TFLOPS = (("H200", 989.0), ("H100 PCIe", 756.0), ("H100", 989.0),
                    ("A100", 312.0), ("L40S", 362.0), ("L4", 121.0),
                    ("A10", 125.0), ("V100", 125.0), ("T4", 65.0))


def parse_args():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--models", default="tiny,base")
  parser.add_argument("--jit", default="off,on", help="off, on or both")
  parser.add_argument("--precisions", default="float32,bfloat16")
  parser.add_argument("--tiny_batch_size", type=int, default=32)
  parser.add_argument("--base_batch_size", type=int, default=2,
                      help="small on a CPU; 64 or more on a GPU")
  parser.add_argument("--base_seq_length", type=int, default=256)
  parser.add_argument("--tiny_steps", type=int, default=20)
  parser.add_argument("--base_steps", type=int, default=3)
  parser.add_argument("--peak_tflops", type=float, default=None,
                      help="the device's peak TFLOP/s, for the MFU")
  return parser.parse_args()


def cmlm_data(params):
  """The train_data of the experiment's (only) objective, CMLM."""
  return params.task.objectives.cmlm.train_data


def training_flops(params, batch):
  """Model FLOPs of one training step (3x the forward pass's matmuls)."""
  encoder, data = params.task.model.encoder, cmlm_data(params)
  h, layers, inner = (encoder.hidden_size, encoder.num_layers,
                      encoder.intermediate_size)
  n = params.task.model.num_projections
  seq = params.task.tokenization.seq_length

  def encoder_pass(tokens):  # QKV + output, FFN, attention scores and mix
    return 2 * layers * tokens * (4 * h * h + 2 * h * inner + 2 * tokens * h)

  projection = 2 * (n - 1) * (2 * h * h + 4 * h * h + 2 * h * h)
  mlm_head = 2 * data.max_predictions_per_seq * (h * h + h * encoder.vocab_size)
  forward = encoder_pass(seq) + encoder_pass(seq + n) + projection + mlm_head
  return 3 * forward * batch


def experiment(name, args):
  """The experiment's config with its CMLM objective alone (weight 1)."""
  params = exp_factory.get_exp_config(EXPERIMENTS[name])
  objective = getattr(params.task.objectives,
                      run_dir.cmlm_objective_name(params))
  objective.weight = 1.0
  params.task.objectives = objective_base.ObjectivesConfig(
      {"cmlm": objective})
  data = cmlm_data(params)
  tokenization = params.task.tokenization
  if name == "base":
    tokenization.seq_length = args.base_seq_length
    data.max_predictions_per_seq = min(data.max_predictions_per_seq,
                                       args.base_seq_length - 2)
  data.global_batch_size = (args.base_batch_size if name == "base"
                            else args.tiny_batch_size)
  tokenization.vocab_file = ""  # random features; no vocabulary file needed
  return params


def make_step(params, jit_compile):
  """The trainer's step: forward/backward (XLA or not), then the update."""
  task = task_lib.SentenceEncoderTask(params.task)
  model = task.build_model()
  optimizer = task.create_optimizer(params.trainer.optimizer_config,
                                    params.runtime)

  def forward_backward(features):
    return task.train_step(features, model=model, optimizer=optimizer)

  forward_backward = tf.function(forward_backward, jit_compile=jit_compile)

  @tf.function
  def step(features):
    loss, gradients = forward_backward(features)
    trainer.apply_update(model, optimizer, gradients)  # as the trainer does
    return loss
  return step


def peak_tflops(args):
  if args.peak_tflops:
    return args.peak_tflops
  gpus = tf.config.list_physical_devices("GPU")
  if not gpus:
    return None
  name = tf.config.experimental.get_device_details(gpus[0]).get(
      "device_name", "")
  return next((peak for key, peak in PEAK_BF16_TFLOPS if key in name), None)


def run(name, jit_compile, precision, args):
  params = experiment(name, args)
  data = cmlm_data(params)
  seq_length = params.task.tokenization.seq_length
  with train.mixed_precision(precision):
    step = make_step(params, jit_compile)
    features = {"cmlm": random_features(
        data.global_batch_size, seq_length, data.max_predictions_per_seq,
        params.task.model.encoder.vocab_size, prefixes=("s1_", "s2_"))}
    start = time.perf_counter()
    float(step(features))
    compile_s = time.perf_counter() - start
    float(step(features))
    steps = args.base_steps if name == "base" else args.tiny_steps
    start = time.perf_counter()
    for _ in range(steps):
      loss = step(features)
    float(loss)
    step_s = (time.perf_counter() - start) / steps
  tf_keras.backend.clear_session()
  flops = training_flops(params, data.global_batch_size)
  peak = peak_tflops(args)
  achieved = flops / step_s
  gpus = tf.config.list_physical_devices("GPU")
  return dict(
      model=name, jit_compile=jit_compile, precision=precision,
      device="GPU" if gpus else "CPU", batch_size=data.global_batch_size,
      seq_length=seq_length, steps=steps,
      examples_per_s=round(data.global_batch_size / step_s, 2),
      step_s=round(step_s, 4), first_call_s=round(compile_s, 2),
      model_gflops_per_step=round(flops / 1e9, 2),
      achieved_gflops_per_s=round(achieved / 1e9, 1),
      mfu=round(achieved / (peak * 1e12), 4) if peak and gpus else None)


def main():
  args = parse_args()
  results = []
  for name in args.models.split(","):
    for precision in args.precisions.split(","):
      for jit in args.jit.split(","):
        result = run(name, jit == "on", precision, args)
        results.append(result)
        print(json.dumps(result), flush=True)
  for name in args.models.split(","):
    rows = {(r["jit_compile"], r["precision"]): r["examples_per_s"]
            for r in results if r["model"] == name}
    base = rows.get((False, "float32"))
    if base:
      ratios = ", ".join(f"{'xla' if jit else 'no-xla'} {precision} "
                         f"{value / base:.2f}x"
                         for (jit, precision), value in sorted(rows.items()))
      print(f"{name}: vs float32 without XLA: {ratios}", flush=True)


if __name__ == "__main__":
  main()
