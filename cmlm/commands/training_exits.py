"""How `train` and `stages` end when training stops early: one line on stderr
and the exit status a scheduler can act on."""
import contextlib
import sys


@contextlib.contextmanager
def training_exits(command: str):
  """Runs the body; maps how training stopped to a line and a status.

  SIGTERM or SIGINT (a checkpoint was saved): 143 or 130, as if the signal
  had ended the process (128 + its number). A non-finite loss or gradient: 1.
  A checkpoint that could not be saved (e.g. a full disk; its temporary
  files removed): 2.
  """
  # Imported here: `--help` and flag errors answer before TensorFlow loads.
  from cmlm.training import fault_tolerance  # pylint: disable=g-import-not-at-top
  from cmlm.training import stop_signals  # pylint: disable=g-import-not-at-top
  try:
    yield
  except fault_tolerance.TrainingPreempted as stopped:
    print(f"cmlm {command}: {stopped}", file=sys.stderr, flush=True)
    sys.exit(stop_signals.exit_status(stopped.signum))
  except fault_tolerance.NonFiniteTrainingError as error:
    print(f"cmlm {command}: error: {error}", file=sys.stderr, flush=True)
    sys.exit(1)
  except fault_tolerance.CheckpointSaveError as error:
    print(f"cmlm {command}: error: {error}", file=sys.stderr, flush=True)
    sys.exit(2)
