r"""Mark a corpus's PMI n-grams for MiSAD (Li et al. 2020, section 3.1):
per document, the top-k n-grams (2 to --max_ngram_length words) by PMI,
marked in parentheses in each sentence, one sentence a line
(projects/misad/pmi_ngrams.py).

    python -m cmlm ngrams --input=CORPUS --output=ngrams.txt \
        [--max_ngram_length=6] [--min_count=2] [--top_k=3000] \
        [--formula=paper|code] [--document_unit=file|paragraph]
"""
import os

from absl import flags

from cmlm import commands
from cmlm.commands import flag_parsing
from cmlm.data_pipelines import atomic_file

FLAGS = flag_parsing.command_flags(__name__)
flags.DEFINE_string("input", None, "The corpus: a file, a directory (its "
                    "*.txt), a glob or a comma-separated list; documents are "
                    "read one at a time.", flag_values=FLAGS)
flags.DEFINE_string("output", None, "Where to write the marked sentences.",
                    flag_values=FLAGS)
flags.DEFINE_integer("max_ngram_length", 6, "Longest n-gram in words (the "
                     "paper's N = 6).", flag_values=FLAGS)
flags.DEFINE_integer("min_count", 2, "N-grams seen fewer times in their "
                     "document are not scored.", flag_values=FLAGS)
flags.DEFINE_integer("top_k", 3000, "N-grams kept per document (paper: "
                     "3000).", flag_values=FLAGS)


def define_marking_flags(flag_values: flags.FlagValues,
                         module_name: str) -> None:
  """How sentences are marked, as `ngrams` and `prepare_ngrams` take it:
  the PMI formula, what a document is, and whether unmarked sentences are
  written."""
  flags.DEFINE_enum("formula", "paper", ["paper", "code"], "paper: 1/|w| "
                    "(log P(w) - sum log P(x_k)) (section 3.1); code: log "
                    "count(w) - sum log count(x_k), as the reference "
                    "pmi.py.", flag_values=flag_values,
                    module_name=module_name)
  flags.DEFINE_enum("document_unit", "file", ["file", "paragraph"], "What "
                    "one document is: a corpus file, or a blank-line "
                    "separated paragraph.", flag_values=flag_values,
                    module_name=module_name)
  flags.DEFINE_bool("keep_unmarked", False, "Also write sentences that hold "
                    "no n-gram.", flag_values=flag_values,
                    module_name=module_name)


define_marking_flags(FLAGS, __name__)
flags.DEFINE_bool("overwrite", False, "Replace --output if it exists.",
                  flag_values=FLAGS)
flags.DEFINE_bool("skip_invalid_lines", False, "Skip (and count) lines that "
                  "are not UTF-8 instead of stopping at the first.",
                  flag_values=FLAGS)


def main(argv) -> None:
  flag_parsing.parse("ngrams", __doc__, FLAGS, argv)
  if not FLAGS.input or not FLAGS.output:
    raise ValueError("ngrams needs --input=CORPUS and --output=FILE.")
  atomic_file.check_output_path(FLAGS.output, "--output", directory=False)
  if os.path.exists(FLAGS.output) and not FLAGS.overwrite:
    raise FileExistsError(f"--output={FLAGS.output} exists; pass --overwrite "
                          "to replace it.")
  from cmlm.projects.misad import pmi_ngrams  # pylint: disable=g-import-not-at-top
  pmi_ngrams.extract_ngrams(
      FLAGS.input, FLAGS.output,
      pmi_ngrams.PmiConfig(max_ngram_length=FLAGS.max_ngram_length,
                           min_count=FLAGS.min_count, top_k=FLAGS.top_k,
                           formula=FLAGS.formula,
                           document_unit=FLAGS.document_unit),
      keep_unmarked=FLAGS.keep_unmarked,
      skip_invalid_lines=FLAGS.skip_invalid_lines)


commands.register_command("ngrams", __name__)
