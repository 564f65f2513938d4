r"""Evaluate any sentence encoder on STS, SentEval transfer, Tatoeba, parallel
mining, the language distribution of retrieved sentences and MTEB's tasks;
writes report.json and report.md (evaluation/runner.py).

    python -m cmlm eval --model=M --tasks=T1,T2 --data_dir=DIR \
        [--report_dir=runs/eval] [--max_examples=N] [--batch_size=256]
    python -m cmlm eval --model=M --mteb_tasks=STSBenchmark,SICK-R

--data_dir holds the benchmark files in SentEval's layout; there is no
default (`python -m cmlm fetch` downloads the public ones into it;
docs/benchmark_data.md says where each benchmark comes from).
MTEB's tasks are loaded by MTEB itself (from the Hugging Face Hub).
"""
import shlex
from typing import List, Optional

from absl import flags

from cmlm.commands import flag_parsing
from cmlm.inference import input_paths

FLAGS = flag_parsing.command_flags(__name__)
flags.DEFINE_string("model", None, "A training --model_dir, an export "
                    "directory (encoder/ + preprocessor/), "
                    "ENCODER_DIR,PREPROCESSOR_DIR, a text-to-embedding "
                    "SavedModel, or a TF Serving base path.", flag_values=FLAGS)
flags.DEFINE_string("checkpoint", None, "With a training --model: a "
                    "checkpoint prefix, e.g. MODEL_DIR/ckpt-1000 (default: "
                    "the latest).", flag_values=FLAGS)
flags.DEFINE_string("tasks", None, "Comma-separated tasks (sts12..sts16, "
                    "sts-b, sick-r, mr, cr, subj, mpqa, sst2, trec, mrpc, "
                    "sick-e, tatoeba, mining, langdist, and those the "
                    "projects register) or groups (sts, transfer, "
                    "multilingual, all, and the projects'); an unknown name "
                    "lists every registered one.", flag_values=FLAGS)
flags.DEFINE_string("mteb_tasks", None, "Comma-separated MTEB 2 task names "
                    "(e.g. STSBenchmark,SICK-R,STS12), run through MTEB's "
                    "own loaders (pip install mteb; data from the Hugging "
                    "Face Hub); scored beside --tasks in the same report, "
                    "main score x 100.", flag_values=FLAGS)
flags.DEFINE_integer("batch_size", 256, "Sentences per batch.",
                     flag_values=FLAGS)
flag_parsing.define_backend_flags(
    FLAGS, __name__, ", so its quality is measured with the same code.")
flags.DEFINE_string("data_dir", None, "Root of the benchmark files in "
                    "SentEval's layout (sts/STSBenchmark/sts-test.csv, "
                    "transfer/CR/custrev.pos, ...; docs/benchmark_data.md); "
                    "required by the tasks that read files under it.",
                    flag_values=FLAGS)
flags.DEFINE_string("task_data", None, "NAME=PATH,... to read a task's data "
                    "from PATH instead of its place under --data_dir.",
                    flag_values=FLAGS)
flags.DEFINE_string("report_dir", "runs/eval", "Where report.json, report.md "
                    "and the language-distribution PNG go.", flag_values=FLAGS)
flags.DEFINE_integer("max_examples", None, "At most this many examples per "
                     "split (a fixed random subset), for quick runs.",
                     flag_values=FLAGS)
flags.DEFINE_string("bitext_dir", None, "mining, langdist: a folder holding "
                    "Multi30k's multi30k/val.{en,de,fr,cs}.gz, to build the "
                    "mining test and the language pool from when "
                    "--mining_* or --langdist_pool are not given.",
                    flag_values=FLAGS)
flags.DEFINE_string("mining_source", None, "mining: the source corpus (BUCC "
                    "'ID TAB sentence' lines, or one sentence a line).",
                    flag_values=FLAGS)
flags.DEFINE_string("mining_target", None, "mining: the target corpus.",
                    flag_values=FLAGS)
flags.DEFINE_string("mining_gold", None, "mining: gold pairs, "
                    "'SOURCE_ID TAB TARGET_ID' a line (or one space in place "
                    "of the TAB).", flag_values=FLAGS)
flags.DEFINE_float("mining_threshold", None, "mining: also score at this "
                   "ratio-margin threshold (e.g. one found on training data).",
                   flag_values=FLAGS)
flags.DEFINE_string("tatoeba_languages", None, "tatoeba: comma-separated ISO "
                    "639-3 codes (default: every tatoeba.XXX-eng.XXX).",
                    flag_values=FLAGS)
flags.DEFINE_bool("tatoeba_pcr", False, "tatoeba: remove each language's "
                  "first principal component first (section 5.2, table 8).",
                  flag_values=FLAGS)
flags.DEFINE_float("binary_threshold", None, "tatoeba, sts-b, sick-r: also "
                   "score by Hamming and Jaccard on the binary vectors "
                   "default >= T (the sparse codes of a ReLU pooling head; "
                   "Kiros et al. 2020 use T=1.0), with their active fraction; needs the raw "
                   "embedding (a run, or encoder + preprocessor).",
                   flag_values=FLAGS)
flags.DEFINE_string("langdist_pool", None, "langdist: LANG=FILE,... "
                    "line-aligned files (default Multi30k val en, de, fr, "
                    "cs).", flag_values=FLAGS)
flags.DEFINE_integer("langdist_size", 200, "langdist: sentences per language "
                     "in the pool.", flag_values=FLAGS)


def main(argv) -> dict:
  flag_parsing.parse("eval", __doc__, FLAGS, argv)
  input_paths.check_model(FLAGS.model)  # said before TensorFlow loads
  from cmlm import registry_imports  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  from cmlm.evaluation import runner  # pylint: disable=g-import-not-at-top
  from cmlm.evaluation.task_data import EvalOptions  # pylint: disable=g-import-not-at-top
  options = EvalOptions(
      model=FLAGS.model or "", report_dir=FLAGS.report_dir,
      bitext_dir=FLAGS.bitext_dir or "",
      batch_size=FLAGS.batch_size, max_examples=FLAGS.max_examples,
      tatoeba_languages=_split(FLAGS.tatoeba_languages),
      tatoeba_pcr=FLAGS.tatoeba_pcr, binary_threshold=FLAGS.binary_threshold,
      mining_source=FLAGS.mining_source,
      mining_target=FLAGS.mining_target, mining_gold=FLAGS.mining_gold,
      mining_threshold=FLAGS.mining_threshold,
      langdist_pool=runner.parse_assignments(FLAGS.langdist_pool,
                                             "langdist_pool") or None,
      langdist_size=FLAGS.langdist_size, backend=FLAGS.backend,
      quantized=FLAGS.quantized)
  def load_mteb_model():
    from cmlm import mteb_encoder  # pylint: disable=g-import-not-at-top
    return mteb_encoder.mteb_model(FLAGS.model, FLAGS.checkpoint,
                                   backend=FLAGS.backend,
                                   quantized=FLAGS.quantized)
  return runner.evaluate(
      FLAGS.model, _split(FLAGS.tasks) or [], options, FLAGS.data_dir,
      runner.parse_assignments(FLAGS.task_data, "task_data"),
      checkpoint=FLAGS.checkpoint,
      command_line=" ".join(shlex.quote(a) for a in
                            ["python", "-m", "cmlm", "eval", *argv]),
      mteb_task_names=_split(FLAGS.mteb_tasks) or [],
      load_mteb_model=load_mteb_model)


def _split(text: Optional[str]) -> Optional[List[str]]:
  items = [item.strip() for item in (text or "").split(",") if item.strip()]
  return items or None
