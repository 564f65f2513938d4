"""The garden's command line: `python -m cmlm COMMAND [--flags]`.

Commands:
  train   train an experiment (Model Garden flags; training/train.py)
  demo    the main job: train cmlm/demo on the embedded corpus, then show how
          far the loss fell and nearest neighbours of held-out sentences
  vocab   build a WordPiece vocabulary from a corpus, or a cased multilingual
          one from LANG=CORPUS,... with language smoothing (section 4.4)
  stages  multistage multilingual training s1 | s2 | s3 (section 4.2;
          training/stages.py)
  pcr     fit each language's principal component for a trained model
          (section 5.2; cmlm/pcr.py)
  export  write a checkpoint as TF-Hub encoder + preprocessor and a TF Serving
          text-to-embedding SavedModel (export/exporter.py)
  encode  embed sentences (.txt, .jsonl, .csv, .tsv, stdin) with any model
          into .npy, .jsonl or .parquet, truncated and quantized on request
          (inference/encode_files.py); in Python: `from cmlm import SentenceEncoder`
  import  pretrained BERT weights (Hugging Face, sentence-transformers, Model
          Garden, TF-Hub) as a training run at step 0, ready to export or
          to train from (training/import_run.py)
  prepare build training records from a corpus at scale (Apache Beam):
          text files (local or gs://, .txt/.gz, LANG=keys) to the shuffled,
          sharded TFRecords training streams, or bitext to records;
          DirectRunner on one machine, Dask/Dataflow/Flink/Spark on a cluster
          (data_pipelines/beam_pairs.py)
  eval    evaluate any sentence encoder on STS, SentEval transfer, Tatoeba,
          parallel mining, the language distribution of retrieved
          sentences and MTEB's tasks; writes report.json and report.md
          (evaluation/runner.py)
  fetch   download the public benchmarks eval reads (STS12-16, STS-B, SICK,
          SentEval transfer, Tatoeba) from their sources into eval's
          --data_dir layout, with checksums and each license shown
          (evaluation/benchmark_fetch.py)
  mine    mine parallel sentences from two corpora (sentences or
          embeddings) with the margin criterion on FAISS: exact, IVF or
          HNSW, by shards (inference/bitext_mining.py)

Projects (projects/<name>/) add commands of their own; they are listed
below this text in `python -m cmlm --help`.

Each command is a module of cmlm/commands/ with its own flags: run
`python -m cmlm COMMAND --help` for them; a flag the command does not take
is an error. Errors in what you give (a flag, a path, a file, a config
value), a truncated or damaged file, and a full disk or a read-only target,
print one line and exit with status 2 (nothing half-written is left); set
CMLM_DEBUG=1 to see the traceback instead. A flag a command cannot run
without, and an input or output path that cannot be used, are said before
TensorFlow loads, within a second. SIGTERM and Ctrl-C (SIGINT) stop a command cleanly (what
it was writing removed; training saves a checkpoint first), with one line
and status 143 or 130; a second Ctrl-C stops it at once.
"""
import errno
import importlib
import os
import re
import signal
import sys
import textwrap

# Quiet TensorFlow's C++ start-up chatter (CPU instructions, oneDNN...)
# unless the user asked for it. Without an NVIDIA device, TensorFlow's CUDA
# build also logs "failed call to cuInit" at ERROR level on its first op:
# there, only FATAL C++ logs are shown (errors reach the user as Python
# exceptions, one line each).
os.environ.setdefault(
    "TF_CPP_MIN_LOG_LEVEL", "2" if os.path.exists("/dev/nvidiactl") else "3")

from absl import app
from absl import flags

from cmlm import MissingPkgResources
from cmlm import library_loading
from cmlm.commands import COMMANDS
from cmlm.commands import CORE_COMMANDS
from cmlm.commands import register_project_commands
from cmlm.training import stop_signals

# A command also freezes what TensorFlow and the libraries on it created
# while loading (cmlm/library_loading.py): later collections, and the one
# at exit, skip it.
library_loading.pause_collector_while_loading(freeze=True)

# MissingPkgResources: an environment to fix, said in one line (cmlm/__init__).
USER_ERRORS = (ValueError, KeyError, FileNotFoundError, FileExistsError,
               MissingPkgResources)
# What gin appends to an error raised inside a configurable (Model Garden's
# `create_trainer`): not the user's business, and not one line.
_GIN_NOTE = re.compile(r"\n\s*In call to configurable .*", re.DOTALL)


# A full disk, a read-only or forbidden target, a file size limit, a file
# where a folder of the target's path should be: reported
# by Python or pyarrow (errno), by TensorFlow's file system or by Beam (a
# RuntimeError naming the OSError of a step) in words, by NumPy as a short
# write.
_DISK_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES,
                errno.EPERM, errno.EFBIG, errno.ENOTDIR)
_DISK_WORDS = ("No space left on device", "Disk quota exceeded",
               "Read-only file system", "Permission denied", "File too large")
_SHORT_WRITE = re.compile(r"(\d+) requested and (\d+) written")
# Beam's note on an error raised inside a step of a pipeline.
_BEAM_STEP = re.compile(r" \[while running '([^']*)'\]")


def disk_error_line(error: BaseException):
  """The one line of a write the disk refused, or None for another error.
  Every writer of the garden writes to a temporary name and removes it on
  any error (`data_pipelines.atomic_file`, `training.atomic`), so nothing
  half-written is left or published."""
  text = str(error)
  short = _SHORT_WRITE.search(text) if isinstance(error, OSError) else None
  if isinstance(error, OSError) and error.errno in _DISK_ERRNOS:
    where = f" {error.filename}" if error.filename else ""
    reason = error.strerror or os.strerror(error.errno)
  elif short:
    where = ""
    reason = (f"the file system took {short.group(2)} of {short.group(1)} "
              "bytes (the disk is full, or a quota or size limit was hit)")
  elif (isinstance(error, (OSError, RuntimeError)) or
        type(error).__module__.startswith("tensorflow")) and any(
            words in text for words in _DISK_WORDS):
    where = ""
    reason = next(words for words in _DISK_WORDS if words in text)
  else:
    return None
  return (f"cannot write{where}: {reason}. Nothing was published: what was "
          "being written was removed.")


def pipeline_error_line(error: BaseException):
  """The one line of an error Beam raised from a step of a pipeline (a
  RuntimeError naming the step and the original error), or None."""
  step = _BEAM_STEP.search(str(error))
  if not isinstance(error, RuntimeError) or step is None:
    return None
  reason = _BEAM_STEP.sub("", str(error)).strip().splitlines()
  return (f"the pipeline stopped in its step '{step.group(1)}': "
          f"{reason[-1] if reason else type(error).__name__}. Nothing was "
          "published (CMLM_DEBUG=1 shows the traceback).")


def error_line(error: BaseException) -> str:
  """The one line a user error prints: its message, without gin's note."""
  return _GIN_NOTE.sub("", str(error)).strip().strip('"')


def main(argv):
  command = argv[1] if len(argv) > 1 else ""
  if command not in CORE_COMMANDS:
    # A project's command, or a listing of all: the projects' `commands.py`
    # register theirs (their objectives are not imported).
    register_project_commands()
  if command in ("-h", "-help", "--help"):
    print(__doc__ + project_commands())
    return
  if command not in COMMANDS:
    print(__doc__ + project_commands())
    print(f"cmlm: error: give a command among {', '.join(COMMANDS)} first; "
          f"got {command or 'none'}.", file=sys.stderr)
    sys.exit(2)
  module = importlib.import_module(COMMANDS[command])
  # SIGTERM and SIGINT stop every command cleanly, a second SIGINT at once
  # (training/stop_signals.py; imports no TensorFlow).
  stop_signals.watch_for_second_interrupt(f"cmlm {command}")
  try:
    with stop_signals.raising_interrupted():
      module.main(argv[2:])
      stop_signals.raise_if_stopped()  # a stop a library swallowed
  except Exception as error:  # pylint: disable=broad-except
    signum = stop_signals.first_signal()
    if signum is not None and not os.environ.get("CMLM_DEBUG"):
      # The stop landed inside a C extension, which raised its own error
      # (pybind11 turns the handler's `Interrupted` into a TypeError): it is
      # still the stop, and the writers removed what they were writing.
      print(f"cmlm {command}: {stop_signals.Interrupted(signum)}",
            file=sys.stderr)
      sys.exit(stop_signals.exit_status(signum))
    if isinstance(error, USER_ERRORS):
      if os.environ.get("CMLM_DEBUG"):
        raise
      print(f"cmlm {command}: error: {error_line(error)}", file=sys.stderr)
      sys.exit(2)
    line = disk_error_line(error) or pipeline_error_line(error)
    if line is None or os.environ.get("CMLM_DEBUG"):
      raise
    print(f"cmlm {command}: error: {line}", file=sys.stderr)
    sys.exit(2)
  except (stop_signals.Interrupted, KeyboardInterrupt) as stopped:
    signum = getattr(stopped, "signum", signal.SIGINT)
    print(f"cmlm {command}: {stopped or stop_signals.Interrupted(signum)}",
          file=sys.stderr)
    sys.exit(stop_signals.exit_status(signum))


def project_commands() -> str:
  """The projects' commands under the core's list, each with the first
  paragraph of its module's docstring, whole, wrapped as the core's."""
  entries = []
  for name, module_name in COMMANDS.items():
    if name not in CORE_COMMANDS:
      doc = importlib.import_module(module_name).__doc__ or ""
      summary = " ".join(doc.strip().split("\n\n")[0].split())
      entries.append(textwrap.fill(
          summary, width=79, initial_indent=f"  {name:7s} ",
          subsequent_indent=" " * 10, break_on_hyphens=False))
  return ("\nCommands of the projects:\n" + "\n".join(entries) + "\n"
          if entries else "")


def _parse_no_global_flags(argv):
  """absl's global FLAGS parse nothing (each command parses its own flags);
  marking them parsed lets app.run set up absl logging as usual."""
  flags.FLAGS(argv[:1])
  return argv


def run():
  """The `cmlm` console script of an installed copy (pyproject.toml)."""
  app.run(main, flags_parser=_parse_no_global_flags)


if __name__ == "__main__":
  run()
