r"""Build a WordPiece vocabulary from a corpus, or a multilingual one from
LANG=CORPUS,... with language smoothing (section 4.4).

    python -m cmlm vocab --input=CORPUS --output=vocab.txt [--vocab_size=8000]
        [--overwrite]
    python -m cmlm vocab --input=en=corpus_en/,de=corpus_de.txt \
        --nolower_case --smoothing_exponent=0.3 --output=vocab.txt

An existing --output is replaced only with --overwrite: a run trained with
a vocabulary reads it by its path, and its checkpoints match those tokens.
"""
import os

from absl import flags

from cmlm.commands import flag_parsing
from cmlm.data_pipelines import atomic_file
from cmlm.data_pipelines import corpus

FLAGS = flag_parsing.command_flags(__name__)
flags.DEFINE_string("input", None, "The corpus: a file, a directory, a glob "
                    "or a comma-separated list; or LANG=CORPUS,... for a "
                    "multilingual vocabulary.", flag_values=FLAGS)
flags.DEFINE_string("output", None, "Where to write the vocabulary.",
                    flag_values=FLAGS)
flags.DEFINE_integer("vocab_size", 8000, "Target vocabulary size.",
                     flag_values=FLAGS)
flags.DEFINE_bool("lower_case", True, "Lower-case the text (uncased).",
                  flag_values=FLAGS)
flags.DEFINE_float("smoothing_exponent", 0.3, "With LANG=CORPUS inputs: the "
                   "language smoothing exponent (section 4.4).",
                   flag_values=FLAGS)
flags.DEFINE_bool("overwrite", False, "Replace an existing --output.",
                  flag_values=FLAGS)
flags.DEFINE_bool("skip_invalid_lines", False, "Skip (and count) lines that "
                  "are not UTF-8 instead of stopping at the first.",
                  flag_values=FLAGS)


def main(argv) -> None:
  flag_parsing.parse("vocab", __doc__, FLAGS, argv)
  if not FLAGS.input or not FLAGS.output:
    raise ValueError("vocab needs --input=CORPUS and --output=VOCAB_FILE.")
  atomic_file.check_output_path(FLAGS.output, "--output", directory=False)
  if os.path.lexists(FLAGS.output) and not FLAGS.overwrite:
    raise FileExistsError(f"{FLAGS.output} already exists; pass --overwrite "
                          "to replace it (a run trained with it would no "
                          "longer match its tokens).")
  corpus.check_path_spec(FLAGS.input)  # before TensorFlow loads
  # pylint: disable=g-import-not-at-top
  from cmlm.data_pipelines import multilingual_vocab
  from cmlm.data_pipelines import vocabulary
  # pylint: enable=g-import-not-at-top
  if "=" in FLAGS.input:
    multilingual_vocab.build_vocab_from_language_corpora(
        FLAGS.input, FLAGS.output, FLAGS.vocab_size, FLAGS.smoothing_exponent,
        FLAGS.lower_case, FLAGS.skip_invalid_lines)
  else:
    vocabulary.build_vocab_from_corpus(FLAGS.input, FLAGS.output,
                                       FLAGS.vocab_size, FLAGS.lower_case,
                                       FLAGS.skip_invalid_lines)
