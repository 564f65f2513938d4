r"""Train an experiment: Model Garden's train_lib + orbit (training/train.py).

    python -m cmlm train --experiment=cmlm/tiny --model_dir=runs/tiny \
        [--config_file=a.yaml ...] [--params_override=a.b=c,...] \
        [--mode=train] [--strategy=mirrored] [--tpu=NAME]

Model Garden's flags, as Model Garden defines them, plus --strategy.
Checkpoints and TensorBoard summaries go to --model_dir; the same command
again resumes from its latest checkpoint. SIGTERM saves a checkpoint and
exits with status 143; a non-finite loss stops with status 1; a second
process on the same --model_dir, or a full disk during a save, stops with
one line and status 2.
"""
from absl import flags
from absl import logging

from cmlm.commands import flag_parsing
from cmlm.commands import training_exits

MODEL_GARDEN_FLAGS = ("experiment", "config_file", "params_override", "mode",
                      "model_dir", "tpu")
STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")

FLAGS = flag_parsing.command_flags(__name__)
flag_parsing.define_model_garden_flags(FLAGS, MODEL_GARDEN_FLAGS)
flags.DEFINE_enum("strategy", None, STRATEGIES,
                  "Distribution strategy; overrides "
                  "runtime.distribution_strategy of the experiment.",
                  flag_values=FLAGS)


def main(argv) -> None:
  flag_parsing.parse("train", __doc__, FLAGS, argv)
  from experiments import registry  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  from training import train  # pylint: disable=g-import-not-at-top
  params = train.build_params(FLAGS.experiment, FLAGS.config_file or (),
                              FLAGS.params_override, FLAGS.strategy, FLAGS.tpu)
  logging.info("Experiment %s, strategy %s, model_dir %s", FLAGS.experiment,
               params.runtime.distribution_strategy, FLAGS.model_dir)
  with training_exits.training_exits("train"):
    train.run(params, FLAGS.model_dir, FLAGS.mode or "train")
  print(f"Checkpoints and TensorBoard summaries are in {FLAGS.model_dir}")
