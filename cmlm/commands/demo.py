r"""The main job (`make demo`, cmlm/demo.py): train cmlm/demo on the embedded
corpus, measure on every held-out pair the conditioning gain (with a
bootstrap 95% interval), next-sequence retrieval and STS-B dev against the
untrained encoder, show the nearest neighbours of a few held-out queries,
export the model, and print the figures as one JSON line, last.

    python -m cmlm demo [--model_dir=DIR] [--train_steps=N] [--seed=S] \
        [--stsb_dev=FILE]
"""
from absl import flags

from cmlm.commands import flag_parsing
from cmlm.commands import training_exits
from cmlm.data_pipelines import atomic_file
from cmlm.inference import input_paths

FLAGS = flag_parsing.command_flags(__name__)
flags.DEFINE_string("model_dir", None, "Where the run goes (default "
                    "runs/demo under the working directory, replaced).",
                    flag_values=FLAGS)
flags.DEFINE_integer("train_steps", None, "Training steps (default: "
                     "cmlm/demo's).", flag_values=FLAGS)
flags.DEFINE_integer("seed", 0, "The run's one seed (initialisation, data "
                     "order, masks, dropout): the same seed on one machine "
                     "prints the same figures.", flag_values=FLAGS)
flags.DEFINE_string("stsb_dev", None, "STS-B dev file (sts-dev.csv, "
                    "tab-separated) whose Spearman the demo reports (default: "
                    "the copy shipped in data/sts_b_dev/, CC BY-SA 4.0).",
                    flag_values=FLAGS)


def main(argv) -> None:
  flag_parsing.parse("demo", __doc__, FLAGS, argv)
  if FLAGS.train_steps is not None and FLAGS.train_steps < 1:
    raise ValueError(f"--train_steps must be 1 or more, got "
                     f"{FLAGS.train_steps}.")
  if FLAGS.seed < 0:
    raise ValueError(f"--seed must be 0 or more, got {FLAGS.seed}.")
  atomic_file.check_output_path(FLAGS.model_dir, "--model_dir", True)
  if FLAGS.stsb_dev:
    input_paths.check_file(FLAGS.stsb_dev, "--stsb_dev")
  from cmlm import registry_imports  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  from cmlm import demo  # pylint: disable=g-import-not-at-top
  stsb_dev = FLAGS.stsb_dev or demo.demo_measures.STSB_DEV
  # SIGTERM or Ctrl-C while it trains: a checkpoint, one line, 143 or 130.
  with training_exits.training_exits("demo"):
    demo.main(model_dir=FLAGS.model_dir, train_steps=FLAGS.train_steps,
              seed=FLAGS.seed, stsb_dev=stsb_dev)
