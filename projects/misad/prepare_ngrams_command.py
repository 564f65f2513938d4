r"""Mark PMI n-grams for MiSAD at scale with Apache Beam (the `ngrams` job
as a Beam pipeline: projects/misad/beam_ngrams.py); per document (the
paper's section 4) or over the whole corpus (section 3.1's counts, a
combine). Needs Beam: pip install -r requirements-beam.txt.

    python -m cmlm prepare_ngrams --input=CORPUS --output=runs/ngrams/en \
        [--scope=document|corpus] [--num_shards=16] [--seed=0] \
        [--max_ngram_length=6] [--min_count=2] [--top_k=3000] \
        [--runner=DirectRunner] [--direct_num_workers=0] [-- BEAM_OPTIONS]

Writes PREFIX-NNNNN-of-NNNNN.txt (MiSAD's data config reads them with
`input_path=PREFIX-*.txt`), only when the job succeeded; a table of what
was read, skipped and why ends the run.
"""
import importlib.util
import sys

from absl import flags

from cmlm import commands
from cmlm.commands import flag_parsing
from cmlm.commands import prepare
from cmlm.data_pipelines import atomic_file
from cmlm.projects.misad import ngrams_command

FLAGS = flag_parsing.command_flags(__name__)
flags.DEFINE_string("input", None, "The corpus: files (.txt, .txt.gz), a "
                    "local directory or globs, local or gs://, "
                    "comma-separated, each optionally LANG=PATH.",
                    flag_values=FLAGS)
flags.DEFINE_string("output", None, "The output prefix: PREFIX-NNNNN-of-"
                    "NNNNN.txt.", flag_values=FLAGS)
flags.DEFINE_enum("scope", "document", ["document", "corpus"], "document: "
                  "each document's own top n-grams (the paper, section 4; "
                  "what `ngrams` writes); corpus: counts and top n-grams "
                  "over the whole corpus (section 3.1).", flag_values=FLAGS)
flags.DEFINE_integer("max_ngram_length", 6, "Longest n-gram in words (the "
                     "paper's N = 6).", flag_values=FLAGS)
flags.DEFINE_integer("min_count", 2, "N-grams seen fewer times (in their "
                     "document, or the corpus) are not scored.",
                     flag_values=FLAGS)
flags.DEFINE_integer("top_k", 3000, "N-grams kept per document, or over the "
                     "corpus (paper: 3000 per document).", flag_values=FLAGS)
ngrams_command.define_marking_flags(FLAGS, __name__)
flags.DEFINE_integer("num_shards", 16, "Output files.", flag_values=FLAGS)
flags.DEFINE_integer("seed", 0, "Which shard each document goes to: the same "
                     "input and seed give the same bytes.", flag_values=FLAGS)
prepare.define_beam_flags(FLAGS, __name__)


def main(argv) -> None:
  ours, passed_through = prepare.split_beam_arguments(argv)
  flag_parsing.parse("prepare_ngrams", __doc__, FLAGS, ours)
  if not FLAGS.input or not FLAGS.output:
    raise ValueError("prepare_ngrams needs --input=CORPUS and "
                     "--output=PREFIX.")
  atomic_file.check_output_path(FLAGS.output, "--output")  # a prefix
  prepare.check_beam_flags(FLAGS)
  prepare.exit_without_beam("prepare_ngrams")
  args = prepare.pipeline_args(FLAGS.runner, FLAGS.direct_num_workers,
                               passed_through)
  with prepare.quiet_beam_import():
    # pylint: disable=g-import-not-at-top
    from cmlm.data_pipelines import beam_text
    from cmlm.projects.misad import beam_ngrams
    from cmlm.projects.misad import pmi_ngrams
    # pylint: enable=g-import-not-at-top
  result = beam_ngrams.prepare_ngrams(
      FLAGS.input, FLAGS.output,
      pmi_ngrams.PmiConfig(max_ngram_length=FLAGS.max_ngram_length,
                           min_count=FLAGS.min_count, top_k=FLAGS.top_k,
                           formula=FLAGS.formula,
                           document_unit=FLAGS.document_unit),
      scope=FLAGS.scope, num_shards=FLAGS.num_shards, seed=FLAGS.seed,
      keep_unmarked=FLAGS.keep_unmarked, pipeline_args=args,
      overwrite=FLAGS.overwrite)
  print(beam_text.report_table(result.counts, beam_ngrams.REPORT_ROWS))
  print(f"prepare_ngrams: wrote {len(result.shard_paths)} shards "
        f"({FLAGS.output}-*-of-{FLAGS.num_shards:05d}.txt) in "
        f"{result.seconds:.1f}s", file=sys.stdout)


commands.register_command("prepare_ngrams", __name__)
