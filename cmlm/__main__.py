"""The garden's command line: `python -m cmlm COMMAND [--flags]`.

Commands:
  train   train an experiment (Model Garden flags; see cmlm/train.py)
  demo    the main job: train cmlm/tiny on the embedded corpus, then show how
          far the loss fell and nearest neighbours of held-out sentences
  vocab   build a WordPiece vocabulary from a corpus, or a cased multilingual
          one from LANG=CORPUS,... with language smoothing (section 4.4)
  stages  multistage multilingual training s1 | s2 | s3 (section 4.2;
          cmlm/stages.py)
  pcr     fit each language's principal component for a trained model
          (section 5.2; cmlm/pcr.py)
  export  write a checkpoint as TF-Hub encoder + preprocessor and a TF Serving
          text-to-embedding SavedModel (see export/exporter.py)
  encode  embed a file of sentences with an exported model (export/encode.py)
  import  pretrained BERT weights (Hugging Face, sentence-transformers, Model
          Garden, TF-Hub) as a training run at step 0, ready to export or
          to train from (modeling/importers/importer.py)
  eval    evaluate any sentence encoder on STS, SentEval transfer, Tatoeba,
          parallel mining and the language distribution of retrieved
          sentences; writes report.json and report.md (evaluation/runner.py)

Run `python -m cmlm COMMAND --help` for a command's flags. Errors in what you
give (a path, a file, a config value) print one line and exit with status 2;
set CMLM_DEBUG=1 to see the traceback instead.
"""
import os
import sys

# Quiet TensorFlow's C++ start-up chatter (no GPU here, CPU instructions...)
# unless the user asked for it.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import cmlm  # noqa: F401  (selects Keras 2 before TensorFlow loads)
from absl import app
from absl import flags
from absl import logging

from official.common import flags as tfm_flags

COMMANDS = ("train", "demo", "vocab", "stages", "pcr", "export", "encode",
            "eval", "import")

tfm_flags.define_flags()
flags.DEFINE_enum("strategy", None, ["one_device", "mirrored",
                                     "multi_worker_mirrored", "tpu"],
                  "Distribution strategy; overrides "
                  "runtime.distribution_strategy of the experiment.")
flags.DEFINE_string("input", None, "vocab: corpus path (file, directory, glob "
                    "or comma-separated list); encode: a text file, one "
                    "sentence a line.")
flags.DEFINE_string("output", None, "vocab: where to write the vocabulary; "
                    "encode: the .npy file of embeddings.")
flags.DEFINE_integer("vocab_size", 8000, "vocab: target vocabulary size.")
flags.DEFINE_bool("lower_case", True, "vocab: lower-case the text (uncased).")
flags.DEFINE_integer("train_steps", None, "demo: training steps (default: the "
                     "experiment's).")
flags.DEFINE_string("export_dir", None, "export: where the encoder/, "
                    "preprocessor/ and serving/<version>/ SavedModels go.")
flags.DEFINE_string("checkpoint", None, "export, eval: a checkpoint prefix, "
                    "e.g. MODEL_DIR/ckpt-1000 (default: the latest in "
                    "--model_dir; for eval, in --model).")
flags.DEFINE_integer("version", None, "export: the TF Serving version "
                     "(default: the checkpoint's step).")
flags.DEFINE_bool("overwrite", False, "export, encode: replace what is "
                  "already there.")
flags.DEFINE_bool("normalize", True, "export: L2-normalise the serving "
                  "model's embeddings; encode: the written embeddings.")
flags.DEFINE_bool("export_mlm", False, "export: give the encoder the .mlm "
                  "subobject (masked_lm_positions -> mlm_logits).")
flags.DEFINE_string("model", None, "encode, eval: an export directory "
                    "(encoder/ + preprocessor/), a text-to-embedding "
                    "SavedModel, or a TF Serving base path; eval also takes a "
                    "training --model_dir or ENCODER_DIR,PREPROCESSOR_DIR.")
flags.DEFINE_integer("batch_size", 256, "encode, eval: sentences per batch.")
flags.DEFINE_string("tasks", None, "eval: comma-separated tasks (sts12..sts16, "
                    "sts-b, sick-r, mr, cr, subj, mpqa, sst2, trec, mrpc, "
                    "sick-e, tatoeba, mining, langdist) or groups (sts, "
                    "transfer, multilingual, all).")
flags.DEFINE_string("data_dir", None, "eval: root of the benchmark files in "
                    "SentEval's layout (default ../shared/data/eval from the "
                    "repository root, when it exists).")
flags.DEFINE_string("task_data", None, "eval: NAME=PATH,... to read a task's "
                    "data from PATH instead of its place under --data_dir.")
flags.DEFINE_string("report_dir", "runs/eval", "eval: where report.json, "
                    "report.md and the language-distribution PNG go.")
flags.DEFINE_integer("max_examples", None, "eval: at most this many examples "
                     "per split (a fixed random subset), for quick runs.")
flags.DEFINE_string("bitext_dir", None, "eval: line-aligned bitext for the "
                    "default mining test and language pool (default "
                    "../shared/data/bitext; Multi30k val).")
flags.DEFINE_string("mining_source", None, "eval mining: the source corpus "
                    "(BUCC 'ID TAB sentence' lines, or one sentence a line).")
flags.DEFINE_string("mining_target", None, "eval mining: the target corpus.")
flags.DEFINE_string("mining_gold", None, "eval mining: gold pairs, "
                    "'SOURCE_ID TAB TARGET_ID' a line.")
flags.DEFINE_float("mining_threshold", None, "eval mining: also score at this "
                   "ratio-margin threshold (e.g. one found on training data).")
flags.DEFINE_string("tatoeba_languages", None, "eval tatoeba: comma-separated "
                    "ISO 639-3 codes (default: every tatoeba.XXX-eng.XXX).")
flags.DEFINE_bool("tatoeba_pcr", False, "eval tatoeba: remove each "
                  "language's first principal component first (paper section "
                  "5.2, table 8).")
flags.DEFINE_string("langdist_pool", None, "eval langdist: LANG=FILE,... "
                    "line-aligned files (default Multi30k val en, de, fr, cs).")
flags.DEFINE_integer("langdist_size", 200, "eval langdist: sentences per "
                     "language in the pool.")
flags.DEFINE_string("source", None, "import: a Hugging Face BERT directory "
                    "(config.json, weights, vocab.txt), a Model Garden "
                    "checkpoint or a TF-Hub BERT SavedModel; --model_dir is "
                    "where the imported run goes (--lower_case and "
                    "--overwrite apply when given).")
flags.DEFINE_enum("format", None, ["huggingface", "model_garden"],
                  "import: the kind of --source (default: guessed).")
flags.DEFINE_string("vocab_file", None, "import: the WordPiece vocabulary, "
                    "when --source does not hold one.")
flags.DEFINE_integer("seq_length", None, "import: the longest sequence, "
                     "[CLS] and [SEP] included (default: the source's, "
                     "else 256).")
flags.DEFINE_float("smoothing_exponent", 0.3, "vocab with LANG=CORPUS "
                   "inputs: the language smoothing exponent (section 4.4).")
flags.DEFINE_string("schedule", "s3", "stages: s1 (CMLM + BR), s2 (CMLM, then "
                    "BR), s3 (CMLM, then CMLM + BR).")
flags.DEFINE_list("stage_steps", None, "stages: training steps of each stage "
                  "(default the paper's: s1 2M; s2, s3 1.5M then 1M).")
flags.DEFINE_integer("sample_size", 1000, "pcr: sentences of each language "
                     "used to fit its component.")
FLAGS = flags.FLAGS


def _run_command(command: str):
  if command == "train":
    from cmlm import train
    if not FLAGS.experiment:
      raise ValueError("--experiment is required, e.g. --experiment=cmlm/tiny.")
    train.main(FLAGS)
  elif command == "demo":
    from cmlm import demo
    demo.main(model_dir=FLAGS.model_dir, train_steps=FLAGS.train_steps)
  elif command == "vocab":
    from data_pipelines import multilingual_vocab
    from data_pipelines import vocabulary
    if not FLAGS.input or not FLAGS.output:
      raise ValueError("vocab needs --input=CORPUS and --output=VOCAB_FILE.")
    if "=" in FLAGS.input:
      multilingual_vocab.build_vocab_from_language_corpora(
          FLAGS.input, FLAGS.output, FLAGS.vocab_size,
          FLAGS.smoothing_exponent, FLAGS.lower_case)
    else:
      vocabulary.build_vocab_from_corpus(FLAGS.input, FLAGS.output,
                                         FLAGS.vocab_size, FLAGS.lower_case)
  elif command == "stages":
    from cmlm import stages
    steps = FLAGS.stage_steps and tuple(int(n) for n in FLAGS.stage_steps)
    stages.run(FLAGS, FLAGS.schedule, steps)
  elif command == "pcr":
    from cmlm import pcr
    pcr.fit_for_model(FLAGS.model_dir, FLAGS.input, FLAGS.sample_size,
                      FLAGS.checkpoint)
  elif command == "export":
    from export import exporter
    exporter.main(FLAGS)
  elif command == "encode":
    from export import encode
    encode.main(FLAGS)
  elif command == "eval":
    from evaluation import runner
    runner.main(FLAGS)
  elif command == "import":
    from modeling.importers import importer
    importer.main(FLAGS)


def main(argv):
  commands = [a for a in argv[1:] if not a.startswith("-")]
  if len(commands) != 1 or commands[0] not in COMMANDS:
    print(__doc__)
    sys.exit(f"Give exactly one command among {', '.join(COMMANDS)}; "
             f"got {' '.join(commands) or 'none'}.")
  if not FLAGS["verbosity"].present:  # orbit prints progress itself
    logging.set_verbosity(logging.WARNING)
  try:
    _run_command(commands[0])
  except (ValueError, KeyError, FileNotFoundError, FileExistsError) as error:
    if os.environ.get("CMLM_DEBUG"):
      raise
    message = str(error).strip().strip('"')
    print(f"cmlm {commands[0]}: error: {message}", file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
  app.run(main)
