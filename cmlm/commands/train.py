r"""Train an experiment: Model Garden's train_lib + orbit (training/train.py).

    python -m cmlm train --experiment=cmlm/tiny --model_dir=runs/tiny \
        [--config_file=a.yaml ...] [--params_override=a.b=c,...] \
        [--mode=train] [--strategy=mirrored] [--tpu=NAME]

Model Garden's flags, as Model Garden defines them, plus --strategy.
Checkpoints and TensorBoard summaries go to --model_dir; the same command
again resumes from its latest checkpoint. SIGTERM or Ctrl-C (SIGINT) saves a
checkpoint after the current step and exits with status 143 or 130 (a
second Ctrl-C stops at once); a non-finite loss stops with status 1; a
second process on the same --model_dir, or a full disk during a save, stops
with one line and status 2.

Model selection (SimCSE's "STS-B dev every 125 steps, keep the best"): with
`trainer.best_checkpoint_eval_metric` naming an evaluation task (e.g.
sts-b) and `trainer.best_checkpoint_export_subdir` (e.g. best), the encoder
is scored on that task every `trainer.validation_interval` steps and at the
end; the best checkpoint is kept in MODEL_DIR/best with info.json (score,
step). Read it with `--checkpoint=MODEL_DIR/best` (export, eval, encode).
"""
from absl import flags
from absl import logging

from cmlm.commands import flag_parsing
from cmlm.commands import training_exits
from cmlm.data_pipelines import atomic_file
from cmlm.training.strategies import STRATEGIES

MODEL_GARDEN_FLAGS = ("experiment", "config_file", "params_override", "mode",
                      "model_dir", "tpu")

FLAGS = flag_parsing.command_flags(__name__)
flag_parsing.define_model_garden_flags(FLAGS, MODEL_GARDEN_FLAGS)
flags.DEFINE_enum("strategy", None, STRATEGIES,
                  "Distribution strategy (default: runtime."
                  "distribution_strategy when your --config_file or "
                  "--params_override sets it, else chosen from the "
                  "hardware: tpu when --tpu is given or a TPU is found, "
                  "multi_worker_mirrored when TF_CONFIG names several "
                  "tasks, mirrored over several GPUs, else one_device).", flag_values=FLAGS)
flags.DEFINE_string("eval_data_dir", None,
                    "Benchmark files for a best-checkpoint score "
                    "(trainer.best_checkpoint_eval_metric=sts-b...): the "
                    "folder of the benchmark files in the eval command's "
                    "--data_dir layout (docs/benchmark_data.md). No default; "
                    "needed with that metric.", flag_values=FLAGS)


def main(argv) -> None:
  flag_parsing.parse("train", __doc__, FLAGS, argv)
  atomic_file.check_output_path(FLAGS.model_dir, "--model_dir", True)
  flag_parsing.check_training_flags(FLAGS)
  from cmlm import registry_imports  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  from cmlm.training import run_config  # pylint: disable=g-import-not-at-top
  from cmlm.training import train  # pylint: disable=g-import-not-at-top
  built = run_config.build_config(
      FLAGS.experiment, FLAGS.config_file or (), FLAGS.params_override,
      FLAGS.strategy, FLAGS.tpu)
  params = built.params
  logging.info("Experiment %s, strategy %s, model_dir %s", FLAGS.experiment,
               params.runtime.distribution_strategy, FLAGS.model_dir)
  scorer = None
  metric = params.trainer.best_checkpoint_eval_metric
  from cmlm.evaluation import model_selection  # pylint: disable=g-import-not-at-top
  if metric and model_selection.is_task(metric):
    scorer = model_selection.task_scorer(metric, FLAGS.eval_data_dir)
  with training_exits.training_exits("train"):
    result = train.run(built, FLAGS.model_dir, FLAGS.mode or "train",
                       best_checkpoint_scorer=scorer)
  if result.best is not None and result.best.best_step is not None:
    best = result.best.exporter.best_ckpt_logs[metric]
    print(f"Best {metric} {float(best):.4g} at step {result.best.best_step}: "
          f"{result.best.exporter.best_ckpt_path}")
  print(f"Checkpoints and TensorBoard summaries are in {FLAGS.model_dir}")
