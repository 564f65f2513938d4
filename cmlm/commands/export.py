r"""Write a checkpoint as TF-Hub encoder + preprocessor SavedModels and a TF
Serving text-to-embedding SavedModel (export/exporter.py).

    python -m cmlm export --model_dir=runs/tiny --export_dir=exports/tiny \
        [--checkpoint=runs/tiny/ckpt-N] [--version=N] [--overwrite] \
        [--eval_report=runs/tiny/eval] [--package_dir=hub/tiny]

Each export carries a model card, README.md (export/model_card.py);
--package_dir also packs the export as .tar.gz archives for TF-Hub and
Kaggle Models (export/packaging.py).
"""
import os

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
flags.DEFINE_string("eval_report", None, "The run's `cmlm eval` report.json "
                    "(or its directory), whose figures the model card shows "
                    "(default: MODEL_DIR/eval/report.json when present).",
                    flag_values=FLAGS)
flags.DEFINE_bool("model_card", True, "Write the model card README.md "
                  "(TF-Hub / Kaggle Models metadata) with the export.",
                  flag_values=FLAGS)
flags.DEFINE_string("package_dir", None, "Also pack the published export "
                    "into this new directory: encoder.tar.gz, "
                    "preprocessor.tar.gz, serving.tar.gz (SavedModel at the "
                    "archive's root, as TF-Hub and Kaggle Models take them), "
                    "README.md and Kaggle's metadata JSON.", flag_values=FLAGS)


def main(argv) -> None:
  flag_parsing.parse("export", __doc__, FLAGS, argv)
  from experiments import registry  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  from export import exporter  # pylint: disable=g-import-not-at-top
  from export import packaging  # pylint: disable=g-import-not-at-top
  from training import atomic  # pylint: disable=g-import-not-at-top
  if FLAGS.package_dir:  # refused before the export, not after
    atomic.check_writable([FLAGS.package_dir], FLAGS.overwrite)
  result = exporter.export_run(
      FLAGS.model_dir, FLAGS.export_dir, checkpoint=FLAGS.checkpoint,
      version=FLAGS.version, overwrite=FLAGS.overwrite,
      normalize=FLAGS.normalize, export_mlm=FLAGS.export_mlm,
      eval_report=FLAGS.eval_report, write_card=FLAGS.model_card)
  print(f"Exported {result.checkpoint_path} (step {result.step}):\n"
        f"  encoder       {result.encoder_dir}\n"
        f"  preprocessor  {result.preprocessor_dir}\n"
        f"  serving       {result.serving_dir}")
  if FLAGS.model_card:
    print(f"  model card    {result.export_dir}/README.md")
  if FLAGS.package_dir:
    paths = packaging.package_export(result.export_dir, FLAGS.package_dir,
                                     FLAGS.overwrite)
    print(f"Packed for TF-Hub / Kaggle Models into {FLAGS.package_dir}: "
          f"{', '.join(os.path.basename(p) for p in paths)}")
