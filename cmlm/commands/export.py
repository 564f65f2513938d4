r"""Write a checkpoint as TF-Hub encoder + preprocessor SavedModels and a TF
Serving text-to-embedding SavedModel (export/exporter.py).

    python -m cmlm export --model_dir=runs/tiny --export_dir=exports/tiny \
        [--checkpoint=runs/tiny/ckpt-N] [--version=N] [--overwrite] \
        [--eval_report=runs/tiny/eval] [--package_dir=hub/tiny] \
        [--model_name=cmlm-en-base] [--dataset_name=wikipedia] \
        [--license=apache-2.0] [--language=en] \
        [--formats=saved_model,tflite,onnx,sentence_transformers]

Each export carries a model card, README.md (export/cards/model_card.py), that
names no local path; --model_name, --dataset_name, --license and
--language state what the run cannot tell. --package_dir also packs the
export as .tar.gz archives for TF-Hub and Kaggle Models
(export/packaging.py), which needs a license.
"""
import os

from absl import flags

from cmlm.commands import flag_parsing
from cmlm.data_pipelines import atomic_file
from cmlm.inference import input_paths

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
flags.DEFINE_list("formats", ["saved_model"], "What to write: saved_model "
                  "(encoder/, preprocessor/, serving/N/; always written) and "
                  "any of tflite (tflite/model.tflite and "
                  "model_int8.tflite) and onnx (onnx/model.onnx and "
                  "model_int8.onnx): the encoder as TFLite or ONNX models, "
                  "float32 and int8, with the vocabulary their Python "
                  "tokenizer reads and tokenizer.json (the same tokenization "
                  "for Hugging Face's tokenizers), checked against the "
                  "SavedModel. encode, eval and SentenceEncoder then use the "
                  "fastest (--backend, --quantized). A format the model "
                  "cannot be converted to is reported in one line and left "
                  "out. sentence_transformers writes sentence_transformers/, "
                  "the model as a sentence-transformers / Hugging Face "
                  "folder (BERT weights, tokenizer.json, Transformer -> "
                  "Pooling -> Normalize, ONNX float32 and int8); a run "
                  "whose embedding it cannot express (a pooling head, "
                  "sentence_representation=proj) is refused in one line.",
                  flag_values=FLAGS)
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

flags.DEFINE_string("model_name", None, "The model's name on a hub, e.g. "
                    "cmlm-en-base or owner/cmlm-en-base: the card's title, "
                    "its model-index name and the Kaggle slug (default: the "
                    "run directory's name).", flag_values=FLAGS)
flags.DEFINE_multi_string("dataset_name", None, "The training data by name, "
                          "for the card and Kaggle's trainingData: NAME for "
                          "every objective or OBJECTIVE=NAME for one; "
                          "repeat for several (default: the file names of "
                          "each objective's input_path; for an import, the "
                          "datasets its source's model card lists)",
                          flag_values=FLAGS)
flags.DEFINE_string("license", None, "The weights' license, an SPDX id such "
                    "as apache-2.0, mit or cc-by-4.0. Default: for a run of "
                    "`python -m cmlm import`, the license its source's model "
                    "card states; otherwise 'unknown', which the card says "
                    "plainly and --package_dir refuses. There is no other "
                    "default because a model's terms follow from its "
                    "training data's, which only you know; the license of "
                    "the code that trained it does not carry over to the "
                    "weights.",
                    flag_values=FLAGS)
flags.DEFINE_list("language", None, "The languages the model reads, ISO 639 "
                  "codes (en, or en,de,fr) or 'multilingual'. Default: for "
                  "an import, its source's; otherwise 'multilingual' when "
                  "the run trains bitext retrieval or its vocabulary is "
                  "mostly outside ASCII, else 'en' (the card says it was "
                  "guessed).", flag_values=FLAGS)


def card_options():
  """The card's flags, checked: one error line for a bad value."""
  from cmlm.export.cards import card_facts  # pylint: disable=g-import-not-at-top
  return card_facts.check_options(card_facts.CardOptions(
      model_name=FLAGS.model_name or "",
      dataset_names=tuple(FLAGS.dataset_name or ()),
      license=FLAGS.license or "", languages=tuple(FLAGS.language or ())))


def main(argv) -> None:
  flag_parsing.parse("export", __doc__, FLAGS, argv)
  atomic_file.check_output_path(FLAGS.export_dir, "--export_dir", True)
  atomic_file.check_output_path(FLAGS.package_dir, "--package_dir", True)
  options = card_options()  # before TensorFlow loads, and before any work
  flag_parsing.require(FLAGS, "export_dir", "where the SavedModels go")
  if FLAGS.model_dir:
    input_paths.check_model(FLAGS.model_dir, "--model_dir")
    if os.path.realpath(FLAGS.export_dir) == os.path.realpath(FLAGS.model_dir):
      raise flag_parsing.UsageError(
          "--export_dir is the run's own directory (--model_dir); give "
          f"another, such as --export_dir="
          f"{os.path.join(FLAGS.model_dir, 'export')}.")
  elif not FLAGS.checkpoint:
    raise flag_parsing.UsageError("--model_dir is required: the training run "
                                  "to export (or its --checkpoint).")
  from cmlm import registry_imports  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  from cmlm.export import artifacts  # pylint: disable=g-import-not-at-top
  from cmlm.export import exporter  # pylint: disable=g-import-not-at-top
  from cmlm.inference import run_facts  # pylint: disable=g-import-not-at-top
  from cmlm.export import packaging  # pylint: disable=g-import-not-at-top
  from cmlm.inference import run_record  # pylint: disable=g-import-not-at-top
  from cmlm.training import atomic  # pylint: disable=g-import-not-at-top
  if FLAGS.package_dir:  # refused before the export, not after
    atomic.check_writable([FLAGS.package_dir], FLAGS.overwrite)
  artifacts.parse_formats(FLAGS.formats)  # before the run is read
  model_dir = FLAGS.model_dir or os.path.dirname(
      (FLAGS.checkpoint or "").rstrip("/"))
  run = None
  if model_dir:  # the run, read once for the license check and the export
    run = run_record.read_run(
        model_dir, FLAGS.checkpoint,
        eval_report=FLAGS.eval_report if FLAGS.model_card else None,
        find_report=FLAGS.model_card)
  if FLAGS.package_dir and run is not None:
    packaging.check_license(run_facts.default_license(run, options.license))
  result = exporter.export_run(
      FLAGS.model_dir, FLAGS.export_dir, checkpoint=FLAGS.checkpoint,
      version=FLAGS.version, overwrite=FLAGS.overwrite,
      normalize=FLAGS.normalize, export_mlm=FLAGS.export_mlm,
      eval_report=FLAGS.eval_report, write_card=FLAGS.model_card,
      card_options=options, formats=FLAGS.formats, run=run)
  print(f"Exported {result.checkpoint_path} (step {result.step}):\n"
        f"  encoder       {result.encoder_dir}\n"
        f"  preprocessor  {result.preprocessor_dir}\n"
        f"  serving       {result.serving_dir}")
  for name, manifest in result.artifacts.items():
    print(f"  {name:<13} {result.export_dir}/{name}/ "
          f"({', '.join(manifest['files'].values())})")
  if FLAGS.model_card:
    print(f"  model card    {result.export_dir}/README.md")
  if FLAGS.package_dir:
    paths = packaging.package_export(result.export_dir, FLAGS.package_dir,
                                     FLAGS.overwrite)
    print(f"Packed for TF-Hub / Kaggle Models into {FLAGS.package_dir}: "
          f"{', '.join(os.path.basename(p) for p in paths)}")
