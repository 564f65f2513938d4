r"""Write a checkpoint as TF-Hub encoder + preprocessor SavedModels and a TF
Serving text-to-embedding SavedModel (export/exporter.py).

    python -m cmlm export --model_dir=runs/tiny --export_dir=exports/tiny \
        [--checkpoint=runs/tiny/ckpt-N] [--version=N] [--overwrite]
"""
from absl import flags

from cmlm.commands import flag_parsing

FLAGS = flag_parsing.command_flags(__name__)
flags.DEFINE_string("model_dir", None, "The training run to export.",
                    flag_values=FLAGS)
flags.DEFINE_string("export_dir", None, "Where the encoder/, preprocessor/ "
                    "and serving/<version>/ SavedModels go.", flag_values=FLAGS)
flags.DEFINE_string("checkpoint", None, "A checkpoint prefix, e.g. "
                    "MODEL_DIR/ckpt-1000 (default: the latest in --model_dir).",
                    flag_values=FLAGS)
flags.DEFINE_integer("version", None, "The TF Serving version (default: the "
                     "checkpoint's step).", flag_values=FLAGS)
flags.DEFINE_bool("overwrite", False, "Replace encoder/, preprocessor/ and "
                  "the serving version when they exist.", flag_values=FLAGS)
flags.DEFINE_bool("normalize", True, "L2-normalise the serving model's "
                  "embeddings.", flag_values=FLAGS)
flags.DEFINE_bool("export_mlm", False, "Give the encoder the .mlm subobject "
                  "(masked_lm_positions -> mlm_logits).", flag_values=FLAGS)


def main(argv) -> None:
  flag_parsing.parse("export", __doc__, FLAGS, argv)
  from experiments import registry  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  from export import exporter  # pylint: disable=g-import-not-at-top
  result = exporter.export_run(
      FLAGS.model_dir, FLAGS.export_dir, checkpoint=FLAGS.checkpoint,
      version=FLAGS.version, overwrite=FLAGS.overwrite,
      normalize=FLAGS.normalize, export_mlm=FLAGS.export_mlm)
  print(f"Exported {result.checkpoint_path} (step {result.step}):\n"
        f"  encoder       {result.encoder_dir}\n"
        f"  preprocessor  {result.preprocessor_dir}\n"
        f"  serving       {result.serving_dir}")
