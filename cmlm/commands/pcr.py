r"""Fit each language's principal component for a trained model, section 5.2
(cmlm/pcr.py); `python -m cmlm export` then adds the serving_pcr signature.

    python -m cmlm pcr --model_dir=RUN --input=en=sample.en,de=sample.de \
        [--sample_size=1000] [--checkpoint=RUN/ckpt-N]
"""
from absl import flags

from cmlm.commands import flag_parsing
from cmlm.data_pipelines import corpus
from cmlm.inference import input_paths

FLAGS = flag_parsing.command_flags(__name__)
flags.DEFINE_string("model_dir", None, "The training run; "
                    "pcr_components.json is written there.", flag_values=FLAGS)
flags.DEFINE_string("input", None, "LANG=FILE,...: sentences of each "
                    "language, one a line.", flag_values=FLAGS)
flags.DEFINE_integer("sample_size", 1000, "Sentences of each language used "
                     "to fit its component.", flag_values=FLAGS)
flags.DEFINE_string("checkpoint", None, "A checkpoint prefix, e.g. "
                    "MODEL_DIR/ckpt-1000 (default: the latest in --model_dir).",
                    flag_values=FLAGS)


def main(argv) -> None:
  flag_parsing.parse("pcr", __doc__, FLAGS, argv)
  # What it is given, said before TensorFlow loads.
  flag_parsing.require(FLAGS, "model_dir", "the training run whose "
                       "components are fitted (they are saved there)")
  input_paths.check_model(FLAGS.model_dir, "--model_dir")
  flag_parsing.require(FLAGS, "input", "LANG=FILE,LANG=FILE, the sentences "
                       "of each language, one a line")
  for path in corpus.parse_language_files(FLAGS.input).values():
    input_paths.check_file(path, "--input")
  from cmlm import registry_imports  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  from cmlm import pcr  # pylint: disable=g-import-not-at-top
  pcr.fit_for_model(FLAGS.model_dir, FLAGS.input, FLAGS.sample_size,
                    FLAGS.checkpoint)
