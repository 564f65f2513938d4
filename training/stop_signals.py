"""SIGTERM and SIGINT (Ctrl-C): stop cleanly, or at once on a second Ctrl-C.

A scheduler's SIGTERM and a user's Ctrl-C mean the same thing: stop soon and
leave everything complete. Training saves a checkpoint after the current
step and stops (`fault_tolerance.TerminationSignal`); elsewhere
(`raising_interrupted`, which `python -m cmlm` wraps around every command)
the signal raises `Interrupted` at the next line of Python, which the
garden's writers treat as any failure: what they were writing is removed
(`data_pipelines.atomic_file`, `training.atomic`; an export's
`versions/.tmp-*`), and nothing is published. The command prints one line
and exits with 128 + the signal's number: 130 for SIGINT, 143 for SIGTERM.
Python runs a signal handler only between two lines of Python, so a stop
waits for the TensorFlow call in progress (a training step, a batch).
TensorFlow's C++ sometimes prints the interrupted call's traceback itself
(a `SystemError` from `nest.flatten`); from the stop until the command's
line, file descriptor 2 goes to /dev/null so that the one line is all the
user sees (`CMLM_DEBUG=1` keeps it).

A second Ctrl-C ends the process at once, with status 130, even inside a
long TensorFlow call: `watch_for_second_interrupt` has Python's C-level
handler write each signal's number to a pipe (`signal.set_wakeup_fd`) that a
thread of its own reads. It removes the temporary files and directories
being written, prints one line and exits. A checkpoint being saved then is
left incomplete, which never harms the last complete one (the `checkpoint`
file that names it is replaced last) and is removed when the run starts
again (`fault_tolerance.repair_checkpoint_state`).

This module imports no TensorFlow: `python -m cmlm` uses it before any.
"""
import contextlib
import os
import signal
import threading
from typing import Iterator, Optional

from cmlm.data_pipelines import atomic_file

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
NAMES = {signal.SIGTERM: "SIGTERM", signal.SIGINT: "SIGINT (Ctrl-C)"}

_received = []  # the stop signals this process has handled, in order
_watching = []  # [True] once the second-Ctrl-C watcher runs
_saved_stderr = []  # fd 2's duplicate while a stop has silenced it
_raised = []  # the stop signals `raising_interrupted`'s handler raised for


class Interrupted(BaseException):
  """A stop signal came; raised where the program was, like
  KeyboardInterrupt (not an `Exception`: nothing catches it by mistake)."""

  def __init__(self, signum: int):
    super().__init__(f"stopped by {NAMES.get(signum, signum)}; what it was "
                     "writing was removed.")
    self.signum = signum


def exit_status(signum: int) -> int:
  """The status a process ended by `signum` reports: 128 + its number."""
  return 128 + int(signum)


def note(signum: int) -> bool:
  """Records a stop signal; True when it is the process's first."""
  _received.append(signum)
  return len(_received) == 1


def on_main_thread() -> bool:
  """Python sets signal handlers from the main thread only."""
  return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def raising_interrupted() -> Iterator[None]:
  """While entered, the first SIGTERM or SIGINT raises `Interrupted` where
  the main thread is; a later SIGTERM is ignored (the stop is under way)
  and a later SIGINT left to the watcher (`watch_for_second_interrupt`)."""
  if not on_main_thread():
    yield
    return

  def handle(signum, frame):
    del frame
    if note(signum):
      _raised.append(signum)
      silence_stderr()
      raise Interrupted(signum)
  previous = {number: signal.signal(number, handle)
              for number in STOP_SIGNALS}
  try:
    yield
  finally:
    for number, handler in previous.items():
      signal.signal(number, handler)
    restore_stderr()
    _raised.clear()  # the stop is the caller's now


def raise_if_stopped() -> None:
  """Raises `Interrupted` again when `raising_interrupted`'s handler raised
  it once: a stop that landed inside a C extension can come back as the
  extension's own error (a TypeError, a SystemError), which a library may
  catch and go on. The garden's writers call this before a temporary file
  or directory becomes its target (`atomic_file.BEFORE_REPLACE`), so such
  a stop still publishes nothing; `python -m cmlm` calls it when a command
  returns. Training's own handler (`fault_tolerance.TerminationSignal`),
  which saves a checkpoint before stopping, is not concerned."""
  if _raised:
    raise Interrupted(_raised[0])


atomic_file.BEFORE_REPLACE.append(raise_if_stopped)


def silence_stderr() -> None:
  """Sends file descriptor 2 to /dev/null until `restore_stderr` (not with
  CMLM_DEBUG set): what C++ prints while a stop unwinds is not the user's
  business."""
  if _saved_stderr or os.environ.get("CMLM_DEBUG"):
    return
  try:
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
  except OSError:
    return
  os.dup2(devnull, 2)
  os.close(devnull)
  _saved_stderr.append(saved)


def restore_stderr() -> None:
  """Gives file descriptor 2 back after `silence_stderr`."""
  if _saved_stderr:
    saved = _saved_stderr.pop()
    os.dup2(saved, 2)
    os.close(saved)


def watching() -> bool:
  """Whether a second Ctrl-C ends this process at once (the watcher runs)."""
  return bool(_watching)


def watch_for_second_interrupt(label: str) -> None:
  """From now on, a SIGINT after any stop signal ends the process at once
  (see the module docstring); `label` starts its line (`cmlm train`).
  Once per process, from the main thread (elsewhere it does nothing)."""
  if _watching or not on_main_thread():
    return
  read_fd, write_fd = os.pipe()
  os.set_blocking(write_fd, False)
  signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
  _watching.append(True)

  def watch():
    stops = 0
    while True:
      data = os.read(read_fd, 64)
      if not data:
        return
      for number in data:
        if number == signal.SIGINT and stops:
          _exit_at_once(label)
        if number in STOP_SIGNALS:
          stops += 1

  threading.Thread(target=watch, name="cmlm-second-ctrl-c",
                   daemon=True).start()


def _exit_at_once(label: str) -> None:
  atomic_file.remove_in_progress()
  restore_stderr()
  os.write(2, f"{label}: stopped at once by a second Ctrl-C; the files it "
              "was writing were removed (a checkpoint being saved is "
              "removed when the run starts again; the last complete one is "
              "kept).\n".encode())
  os._exit(exit_status(signal.SIGINT))  # pylint: disable=protected-access


def first_signal() -> Optional[int]:
  """The first stop signal this process handled, or None."""
  return _received[0] if _received else None
