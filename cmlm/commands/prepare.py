r"""Prepare a corpus at scale with Apache Beam: text files -> the shuffled,
sharded TFRecords that training streams (data_pipelines/beam_pairs.py,
beam_bitext.py). Needs Beam: pip install -r requirements-beam.txt.

    python -m cmlm prepare --input=CORPUS --output=PREFIX \
        --vocab_file=vocab.txt --seq_length=256 [--num_shards=16] [--seed=0] \
        [--direct_num_workers=0]                  # the DirectRunner, all cores
    python -m cmlm prepare ... --runner=DaskRunner [--dask_workers=0]
                                                  # a local Dask cluster
    python -m cmlm prepare ... --runner=DaskRunner -- \
        --dask_client_address=tcp://SCHEDULER:8786  # a Dask cluster
    python -m cmlm prepare --input=en=gs://b/cc/en/*.gz,de=gs://b/cc/de/*.gz \
        --output=gs://b/pairs/train --vocab_file=gs://b/vocab.txt \
        --num_shards=4096 --runner=DataflowRunner -- --project=P \
        --region=us-central1 --temp_location=gs://b/tmp \
        --extra_package=dist/cmlm-0.1.0-py3-none-any.whl \
        --requirements_file=requirements.txt
    python -m cmlm prepare --data=bitext --input="en-de.tsv,a.en|a.de" \
        --output=PREFIX                           # translation pairs

Arguments after `--` are Beam's pipeline options, passed through. The
output is published only when the job succeeded: shards first, then
PREFIX.pairs.json (or PREFIX.bitext.json); a table of what was read,
skipped and why, and pairs by language ends the run. A job the cluster
lost (on Dask: a task whose every worker died) is one line, exit status
1, nothing published. Guide: docs/preparing_at_scale.md.
"""
import contextlib
import importlib.util
import logging
import os
import sys
from typing import List, Tuple

from absl import flags

from cmlm.commands import flag_parsing
from cmlm.data_pipelines import atomic_file

INSTALL_HINT = ("needs Apache Beam, which `make demo` does not "
                "install: run `pip install -r requirements-beam.txt` (or "
                "`pip install -e .[beam]`).")

FLAGS = flag_parsing.command_flags(__name__)
flags.DEFINE_enum("data", "pairs", ["pairs", "bitext"], "pairs: CMLM pairs "
                  "from running text (section 3); bitext: translation pairs "
                  "for bitext retrieval, TLM and XLCo (section 4.2).",
                  flag_values=FLAGS)
flags.DEFINE_string("input", None, "pairs: text files (.txt, .txt.gz), a "
                    "local directory, or globs, local or gs://, "
                    "comma-separated, each optionally LANG=PATH; bitext: TSV "
                    "files or globs and source|target line-aligned pairs.",
                    flag_values=FLAGS)
flags.DEFINE_string("output", None, "The output prefix: PREFIX.tfrecord-"
                    "NNNNN-of-NNNNN and the manifest beside them.",
                    flag_values=FLAGS)
flags.DEFINE_enum("pair_unit", "sequence", ["sequence", "sentence"],
                  "sequence: consecutive spans of whole sentences packed to "
                  "--seq_length - 2 tokens (the paper's unit); sentence: "
                  "single consecutive sentences.", flag_values=FLAGS)
flags.DEFINE_string("vocab_file", None, "The run's WordPiece vocabulary "
                    "(task.tokenization.vocab_file); sequence pairs count "
                    "tokens with it.", flag_values=FLAGS)
flags.DEFINE_integer("seq_length", 256, "The run's task.tokenization."
                     "seq_length (the paper: 256).", flag_values=FLAGS)
flags.DEFINE_bool("lower_case", True, "The run's task.tokenization."
                  "lower_case.", flag_values=FLAGS)
flags.DEFINE_enum("text_normalization", "tf_text", ["tf_text", "huggingface"],
                  "The run's task.tokenization.text_normalization.",
                  flag_values=FLAGS)
flags.DEFINE_enum("document_unit", "paragraph", ["paragraph", "file"],
                  "paragraph: blank lines separate documents; file: each "
                  "file is one document.", flag_values=FLAGS)
flags.DEFINE_enum("split", "all", ["all", "train", "heldout"], "Keep the "
                  "documents of this split (by a hash of their text).",
                  flag_values=FLAGS)
flags.DEFINE_integer("heldout_percent", 0, "Share of documents in the "
                     "heldout split, in percent.", flag_values=FLAGS)
flags.DEFINE_integer("num_shards", 16, "Output files; a worker sorts one in "
                     "memory, so keep a shard under ~1 GB (1B sequence pairs "
                     "of 256 tokens: ~4096 shards).", flag_values=FLAGS)
flags.DEFINE_integer("seed", 0, "The shuffle: the same input and seed give "
                     "the same bytes on any runner.", flag_values=FLAGS)


def define_beam_flags(flag_values: flags.FlagValues, module_name: str) -> None:
  """`--runner`, `--direct_num_workers` and `--overwrite`, as every Beam
  command (`prepare`, a project's) takes them; `pipeline_args` reads them."""
  flags.DEFINE_string("runner", "DirectRunner", "The Beam runner: "
                      "DirectRunner (the launching machine), DaskRunner (prepare "
                      "only), DataflowRunner, FlinkRunner, SparkRunner, "
                      "PortableRunner...", flag_values=flag_values,
                      module_name=module_name)
  flags.DEFINE_integer("direct_num_workers", 0, "DirectRunner: worker "
                       "processes (0: one per CPU core; 1: in this "
                       "process).", flag_values=flag_values,
                       module_name=module_name)
  flags.DEFINE_bool("overwrite", False, "Replace an existing output of the "
                    "same prefix.", flag_values=flag_values,
                    module_name=module_name)


def check_beam_flags(flag_values: flags.FlagValues) -> None:
  """ValueError, one sentence naming the flag, for a value of
  `define_beam_flags`'s flags Beam cannot run with (said before it loads:
  a negative `--direct_num_workers` ended in Beam's IndexError)."""
  workers = flag_values.direct_num_workers
  if workers < 0:
    raise ValueError(f"--direct_num_workers must be 0 (one process per CPU "
                     f"core) or more, got {workers}.")


define_beam_flags(FLAGS, __name__)
flags.DEFINE_integer("dask_workers", 0, "DaskRunner without "
                     "--dask_client_address or --dask_scheduler_file after "
                     "`--`: the worker processes of the local Dask cluster "
                     "started on 127.0.0.1 for the job (0: one per CPU "
                     "core).", flag_values=FLAGS)


def pipeline_args(runner: str, direct_num_workers: int,
                  passed_through: List[str]) -> List[str]:
  """Beam's options: the runner, the DirectRunner's processes, then the
  user's own (which win)."""
  args = [f"--runner={runner}"]
  if runner == "DirectRunner":
    workers = direct_num_workers or os.cpu_count() or 1
    args.append(f"--direct_num_workers={workers}")
    if workers > 1:
      # The workers log a step's error with its traceback before the job
      # raises it; the command says it in one line (CMLM_DEBUG=1: all).
      args += ["--direct_running_mode=multi_processing",
               "--default_sdk_harness_log_level=CRITICAL"]
  return args + list(passed_through)


@contextlib.contextmanager
def quiet_beam_import():
  """Beam warns at import about optional cloud clients it does not find."""
  logging.disable(logging.WARNING)
  try:
    yield
  finally:
    logging.disable(logging.NOTSET)


def split_beam_arguments(argv: List[str]) -> Tuple[List[str], List[str]]:
  """(the command's arguments, Beam's options after `--`)."""
  argv = list(argv)
  if "--" not in argv:
    return argv, []
  index = argv.index("--")
  return argv[:index], argv[index + 1:]


def beam_installed() -> bool:
  try:
    return importlib.util.find_spec("apache_beam") is not None
  except ValueError:  # a module set to None in sys.modules: hidden
    return False


def exit_without_beam(command: str) -> None:
  """One line and exit status 2 when Apache Beam is not installed."""
  if not beam_installed():
    print(f"cmlm {command}: error: {command} {INSTALL_HINT}", file=sys.stderr)
    sys.exit(2)


def main(argv) -> None:
  ours, passed_through = split_beam_arguments(argv)
  flag_parsing.parse("prepare", __doc__, FLAGS, ours)
  if not FLAGS.input or not FLAGS.output:
    raise ValueError("prepare needs --input=CORPUS and --output=PREFIX.")
  atomic_file.check_output_path(FLAGS.output, "--output")  # a prefix
  check_beam_flags(FLAGS)
  if (FLAGS.data == "pairs" and FLAGS.pair_unit == "sequence"
      and not FLAGS.vocab_file):
    raise ValueError("--pair_unit=sequence packs sentences to the run's "
                     "token budget: give the run's --vocab_file (and "
                     "--seq_length, --lower_case).")
  exit_without_beam("prepare")
  args = pipeline_args(FLAGS.runner, FLAGS.direct_num_workers, passed_through)
  with quiet_beam_import():
    # pylint: disable=g-import-not-at-top
    from cmlm.data_pipelines import beam_runners
    # pylint: enable=g-import-not-at-top
  with contextlib.ExitStack() as stack:
    # Beam's temporaries in the system's temporary directory, removed at the
    # end: also a pipeline's own, which Beam leaves when the job never runs.
    stack.enter_context(atomic_file.private_temporary_directory("cmlm-beam"))
    if (beam_runners.uses_dask(args)
        and not beam_runners.dask_scheduler_given(args)):
      workers = FLAGS.dask_workers or os.cpu_count() or 1
      address = stack.enter_context(beam_runners.local_dask_cluster(workers))
      print(local_cluster_line(workers, address), file=sys.stderr,
            flush=True)
      args.append(f"--dask_client_address={address}")
    try:
      _run_job(args)
    except beam_runners.JobFailed as failed:
      print(f"cmlm prepare: error: {failed}", file=sys.stderr)
      sys.exit(1)


def local_cluster_line(workers: int, address: str) -> str:
  """What prepare says of the local Dask cluster it started."""
  processes = "process" if workers == 1 else "processes"
  return (f"prepare: a local Dask cluster of {workers} worker {processes} at "
          f"{address}")


def _run_job(args: List[str]) -> None:
  """Runs the job the flags describe with Beam's options `args`; prints the
  table and the last line."""
  with quiet_beam_import():
    # pylint: disable=g-import-not-at-top
    from cmlm.data_pipelines import beam_bitext
    from cmlm.data_pipelines import beam_pairs
    from cmlm.data_pipelines import beam_text
    from cmlm.data_pipelines import tokenization
    # pylint: enable=g-import-not-at-top
  if FLAGS.data == "bitext":
    result = beam_bitext.prepare_bitext(
        FLAGS.input, FLAGS.output, FLAGS.num_shards, FLAGS.seed, args,
        overwrite=FLAGS.overwrite)
    rows = beam_bitext.REPORT_ROWS
  else:
    tokenization_config = None
    if FLAGS.pair_unit == "sequence":
      tokenization_config = tokenization.TokenizationConfig(
          vocab_file=FLAGS.vocab_file, seq_length=FLAGS.seq_length,
          lower_case=FLAGS.lower_case,
          text_normalization=FLAGS.text_normalization)
    config = beam_pairs.PairsConfig(
        pair_unit=FLAGS.pair_unit, tokenization_config=tokenization_config,
        num_shards=FLAGS.num_shards, seed=FLAGS.seed,
        document_unit=FLAGS.document_unit, split=FLAGS.split,
        heldout_percent=FLAGS.heldout_percent)
    result = beam_pairs.prepare_pairs(FLAGS.input, FLAGS.output, config,
                                      args, overwrite=FLAGS.overwrite)
    rows = beam_text.REPORT_ROWS
  print(beam_text.report_table(result.counts, rows))
  print(f"prepare: wrote {len(result.shard_paths)} shards, {result.pairs} "
        f"pairs ({result.pairs / max(result.seconds, 1e-9):.0f} pairs/s) in "
        f"{result.seconds:.1f}s; manifest {result.manifest_path}")
