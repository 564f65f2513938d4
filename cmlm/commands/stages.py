r"""Multistage multilingual training, section 4.2 (training/stages.py).

    python -m cmlm stages --schedule=s1|s2|s3|SCHEDULE.yaml --model_dir=DIR \
        [--config_file=a.yaml ...] [--params_override=a.b=c,...] \
        [--stage_steps=N1,N2] [--strategy=mirrored] [--tpu=NAME]

s1: CMLM + BR; s2: CMLM, then BR; s3: CMLM, then CMLM + BR (the paper's).
Stage k trains in DIR/stage<k> from stage k-1's checkpoint; the schedule
names the experiment, and --config_file / --params_override apply to every
stage. The same command again resumes the interrupted stage.
"""
from absl import flags

from cmlm.commands import flag_parsing
from cmlm.commands import training_exits
from cmlm.data_pipelines import atomic_file
from cmlm.training.strategies import STRATEGIES

# The schedule names the experiment and every stage trains (no --experiment,
# --mode): Model Garden's other flags, as Model Garden defines them.
MODEL_GARDEN_FLAGS = ("config_file", "params_override", "model_dir", "tpu")

FLAGS = flag_parsing.command_flags(__name__)
flag_parsing.define_model_garden_flags(FLAGS, MODEL_GARDEN_FLAGS)
flags.DEFINE_string("schedule", "s3", "s1 (CMLM + BR), s2 (CMLM, then BR), "
                    "s3 (CMLM, then CMLM + BR), or a schedule's YAML file.",
                    flag_values=FLAGS)
flags.DEFINE_list("stage_steps", None, "Training steps of each stage "
                  "(default the schedule's; the paper's: s1 2M; s2, s3 1.5M "
                  "then 1M).", flag_values=FLAGS)
flags.DEFINE_enum("strategy", None, STRATEGIES,
                  "Distribution strategy of every stage (default: chosen "
                  "from the hardware: tpu when --tpu is given or a TPU is "
                  "found, multi_worker_mirrored when TF_CONFIG names "
                  "several tasks, mirrored over several GPUs, else "
                  "one_device).", flag_values=FLAGS)


def main(argv) -> None:
  flag_parsing.parse("stages", __doc__, FLAGS, argv)
  atomic_file.check_output_path(FLAGS.model_dir, "--model_dir", True)
  flag_parsing.check_training_flags(FLAGS, experiment=False)
  from cmlm import registry_imports  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  from cmlm.training import stages  # pylint: disable=g-import-not-at-top
  try:
    steps = FLAGS.stage_steps and [int(n) for n in FLAGS.stage_steps]
  except ValueError:
    raise ValueError(f"--stage_steps takes whole numbers separated by "
                     f"commas, got {','.join(FLAGS.stage_steps)!r}.") from None
  with training_exits.training_exits("stages"):
    last = stages.run(FLAGS.schedule, FLAGS.model_dir,
                      FLAGS.config_file or (), FLAGS.params_override or "",
                      steps, tpu=FLAGS.tpu, strategy=FLAGS.strategy)
  print(f"The last stage's checkpoints are in {last}")
