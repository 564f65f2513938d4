r"""Pretrained BERT weights (Hugging Face, sentence-transformers, Model
Garden, TF-Hub) as a training run at step 0, ready to export or to train
from (training/import_run.py).

    python -m cmlm import --source=SRC --model_dir=OUT \
        [--format=huggingface|model_garden|tf_hub] [--vocab_file=V] \
        [--seq_length=N] [--lower_case|--nolower_case] [--overwrite] \
        [--source_name=sentence-transformers/all-MiniLM-L6-v2] \
        [--source_license=apache-2.0]

The run records the source's name and license (import_info.json), which
the model card of its export credits.
"""
from absl import flags

from cmlm.commands import flag_parsing
from cmlm.data_pipelines import atomic_file
from cmlm.inference import input_paths

FLAGS = flag_parsing.command_flags(__name__)
flags.DEFINE_string("source", None, "A Hugging Face BERT directory "
                    "(config.json, weights, vocab.txt), a Model Garden "
                    "checkpoint, or a TF-Hub BERT-API encoder SavedModel: "
                    "ENCODER_DIR,PREPROCESSOR_DIR (the vocabulary, casing "
                    "and length are read from the preprocessor), an export "
                    "holding encoder/ and preprocessor/, or ENCODER_DIR "
                    "alone.", flag_values=FLAGS)
flags.DEFINE_string("model_dir", None, "Where the imported run goes.",
                    flag_values=FLAGS)
flags.DEFINE_enum("format", None, ["huggingface", "model_garden", "tf_hub"],
                  "The kind of --source (default: guessed).", flag_values=FLAGS)
flags.DEFINE_string("vocab_file", None, "The WordPiece vocabulary, when "
                    "--source does not hold one.", flag_values=FLAGS)
flags.DEFINE_integer("seq_length", None, "The longest sequence, [CLS] and "
                     "[SEP] included (default: the source's, else 256).",
                     flag_values=FLAGS)
flags.DEFINE_bool("lower_case", None, "Lower-case the text (default: as the "
                  "source's tokenizer does).", flag_values=FLAGS)
flags.DEFINE_bool("overwrite", False, "Replace --model_dir when it exists.",
                  flag_values=FLAGS)
flags.DEFINE_string("source_name", None, "The source's name for the model "
                    "card, e.g. sentence-transformers/all-MiniLM-L6-v2 (an "
                    "owner/name gives the card a Hugging Face link). "
                    "Default: a Hugging Face cache's owner/name, else the "
                    "title of the source's README.md, else its directory's "
                    "name; never a path.", flag_values=FLAGS)
flags.DEFINE_string("source_license", None, "The source's license, an SPDX "
                    "id such as apache-2.0 (default: the license its "
                    "README.md's front matter states, if any).",
                    flag_values=FLAGS)


def main(argv) -> None:
  flag_parsing.parse("import", __doc__, FLAGS, argv)
  atomic_file.check_output_path(FLAGS.model_dir, "--model_dir", True)
  # What it is given, said before TensorFlow loads and any work: the
  # values first, then the paths.
  source_license = FLAGS.source_license
  if source_license:
    from cmlm.inference import run_facts  # pylint: disable=g-import-not-at-top
    source_license = run_facts.license_id(source_license, "--source_license")
  flag_parsing.require(FLAGS, "source", "a Hugging Face model directory, a "
                       "Model Garden checkpoint or a TF-Hub encoder "
                       "(ENCODER_DIR[,PREPROCESSOR_DIR])")
  flag_parsing.require(FLAGS, "model_dir", "where the imported run goes")
  input_paths.check_model(FLAGS.source, "--source", checkpoint_prefix=True)
  from cmlm import registry_imports  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  from cmlm.training import import_run  # pylint: disable=g-import-not-at-top
  result = import_run.import_model(
      FLAGS.source, FLAGS.model_dir, source_format=FLAGS.format,
      vocab_file=FLAGS.vocab_file, lower_case=FLAGS.lower_case,
      seq_length=FLAGS.seq_length, overwrite=FLAGS.overwrite,
      source_name=FLAGS.source_name, source_license=source_license)
  print(import_run.describe(result))
