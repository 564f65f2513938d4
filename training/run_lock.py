"""One writer per run directory: a lock file in the model_dir.

Two `train` (or `stages`) processes on one `--model_dir` would each save
`ckpt-N` over the other's and write two TensorBoard event files. So the
process that writes a run directory (the chief, in multi-worker runs: the
other workers write nothing there) first takes `<model_dir>/.cmlm-train.lock`
and holds it until it ends; a second one fails at once, in one line naming
the holder (pid, host, start time, command).

The lock is an advisory `fcntl.flock` on the open lock file, which the
kernel releases whenever the holder ends, kill -9 included; the file's text
(JSON: pid, host, started, command) is only for the message. A lock file
whose lock nobody holds was left by a process that was killed: it is taken
over, with a printed note. Paths that are not local (`gs://...`) cannot be
locked this way and are not locked.
"""
import contextlib
import datetime
import errno
import json
import os
import socket
import sys
from typing import Iterator, Optional

try:
  import fcntl
except ImportError:  # Windows: no flock; runs are not locked there.
  fcntl = None

LOCK_FILE_NAME = ".cmlm-train.lock"


class RunDirectoryInUse(ValueError):
  """Another live process holds the run directory's lock."""


def lock_path(model_dir: str, name: str = LOCK_FILE_NAME) -> str:
  return os.path.join(model_dir, name)


def _describe(holder: dict) -> str:
  return (f"pid {holder.get('pid', '?')} on host {holder.get('host', '?')}, "
          f"since {holder.get('started', '?')}: "
          f"{' '.join(str(holder.get('command', '?')).split())}")


def _read_holder(fd: int) -> dict:
  os.lseek(fd, 0, os.SEEK_SET)
  data = os.read(fd, 65536)
  try:
    holder = json.loads(data.decode("utf-8")) if data.strip() else {}
  except (UnicodeDecodeError, ValueError):
    holder = {}
  return holder if isinstance(holder, dict) else {}


def _same_file(fd: int, path: str) -> bool:
  """Whether `fd` is still the file at `path` (not one its holder removed)."""
  try:
    return os.fstat(fd).st_ino == os.stat(path).st_ino
  except FileNotFoundError:
    return False


def acquire(model_dir: str, command: Optional[str] = None,
            name: str = LOCK_FILE_NAME, what: str = "training process",
            flag: str = "--model_dir") -> Optional[int]:
  """Takes the lock of `model_dir` (created if absent); returns its fd.

  `name` is the lock file's, `what` the kind of process holding it and
  `flag` the command's flag that names `model_dir` (for the message).
  Returns None for a path that cannot be locked (not local).

  Raises:
    RunDirectoryInUse: another live process holds it.
  """
  if fcntl is None or "://" in model_dir:
    return None
  os.makedirs(model_dir, exist_ok=True)
  path = lock_path(model_dir, name)
  while True:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
      if error.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
        os.close(fd)
        raise
      holder = _read_holder(fd)
      os.close(fd)
      raise RunDirectoryInUse(
          f"{model_dir} is in use by another {what} "
          f"({_describe(holder)}); wait for it to end or stop it, or give "
          f"another {flag}.") from None
    if _same_file(fd, path):
      break
    os.close(fd)  # its holder released and removed it meanwhile: retry
  previous = _read_holder(fd)
  if previous:
    print(f"Taking over the lock of {model_dir} left by a process that is no "
          f"longer running ({_describe(previous)}).", flush=True)
  holder = dict(pid=os.getpid(), host=socket.gethostname(),
                started=datetime.datetime.now().isoformat(timespec="seconds"),
                command=command or " ".join(sys.argv))
  try:
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, json.dumps(holder).encode("utf-8") + b"\n")
    os.fsync(fd)
  except OSError:  # a full disk: no lock file is left behind
    release(model_dir, fd, name)
    raise
  return fd


def release(model_dir: str, fd: Optional[int],
            name: str = LOCK_FILE_NAME) -> None:
  """Removes the lock file (still holding the lock), then releases it."""
  if fd is None:
    return
  try:
    if _same_file(fd, lock_path(model_dir, name)):
      os.unlink(lock_path(model_dir, name))
  finally:
    os.close(fd)  # releases the flock


@contextlib.contextmanager
def hold(model_dir: str, command: Optional[str] = None,
         name: str = LOCK_FILE_NAME, what: str = "training process",
         flag: str = "--model_dir") -> Iterator[None]:
  """While entered, this process is the only writer of `model_dir`.

  A `model_dir` made for the lock and still empty at the end (the run
  failed before writing anything) is removed again.
  """
  created = "://" not in model_dir and not os.path.exists(model_dir)
  try:
    fd = acquire(model_dir, command, name, what, flag)
  except OSError:
    _remove_if_made_empty(model_dir, created)
    raise
  try:
    yield
  finally:
    release(model_dir, fd, name)
    _remove_if_made_empty(model_dir, created)


def _remove_if_made_empty(model_dir: str, created: bool) -> None:
  if created:
    with contextlib.suppress(OSError):
      os.rmdir(model_dir)  # only if empty


def is_chief_from_tf_config() -> bool:
  """Whether this process writes the run directory: the chief of
  `TF_CONFIG`'s cluster (task `chief`, or worker 0 when there is none), or
  any process without `TF_CONFIG`."""
  try:
    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
  except ValueError:
    return True
  task = config.get("task") or {}
  cluster = config.get("cluster") or {}
  kind, index = task.get("type"), int(task.get("index", 0) or 0)
  if not kind:
    return True
  if "chief" in cluster:
    return kind == "chief"
  return kind == "worker" and index == 0
