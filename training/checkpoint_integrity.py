"""Checkpoints checked before they are trusted: a damaged one costs one
checkpoint interval, not the run.

- **After each save** (the chief's) the new checkpoint is read back, every
  tensor (TensorFlow's reader checks each against the CRC32C its index
  holds), and `ckpt-N.manifest.json` is written beside it, last: each file's
  size and SHA-256. A checkpoint that does not read back (a torn write) is
  moved aside at once and the run stops with one line
  (`fault_tolerance.CheckpointSaveError`; the previous checkpoint stays
  the latest).
- **`check(prefix)`**: a checkpoint with a manifest reads when its files
  are the ones written; one without (an older run's, or a save killed before
  its manifest) is read in full, every tensor.
- **When a run starts** (`verified`, on the chief's manager), the latest
  checkpoint is checked and then restored; one that fails either is moved
  into `<model_dir>/damaged/` (never deleted), the state file is pointed at
  the next older one, and so on: one line says which were moved and where
  the run resumes. With none that reads, `NoReadableCheckpoint` (one line,
  exit 2); run again, training starts over.
- **Readers** of a run (export, eval, encode, pcr, a later stage's start)
  take `newest_readable`: the same order and check, nothing moved (a reader
  may not own the run, and a trainer may be writing there); one line names
  what it skipped.
"""
import collections
import json
import os
import re
import sys
import time
from typing import Callable, Dict, List, Optional

from absl import logging
import tensorflow as tf

from cmlm.data_pipelines import file_digests
from cmlm.training import fault_tolerance

MANIFEST_SUFFIX = ".manifest.json"
DAMAGED_DIR = "damaged"
# What reading a damaged, truncated or foreign checkpoint raises (a
# truncated data file gives IndexError from the reader).
READ_ERRORS = (tf.errors.OpError, ValueError, AssertionError, IndexError,
               KeyError)
# Errors of a restore that mean the bytes are bad, not that the checkpoint
# is another model's (that is a config mistake: the files are kept).
_DAMAGE_ERRORS = (tf.errors.DataLossError, tf.errors.OutOfRangeError,
                  IndexError)
# The checks this process has passed, by the files' sizes and times: a
# checkpoint read by two steps of one command is read once.
_PASSED: Dict[str, tuple] = {}
# Tensors read by one RestoreV2 call when a checkpoint is read in full.
_TENSORS_PER_READ = 64
_REPORTED = set()


class DamagedCheckpoint(ValueError):
  """A checkpoint that does not read as it was written."""

  def __init__(self, prefix: str, reason: str):
    super().__init__(f"The checkpoint {prefix} is damaged: {reason}.")
    self.prefix = prefix
    self.reason = reason


class NoReadableCheckpoint(ValueError):
  """Every checkpoint of a directory is damaged."""

  def __init__(self, directory: str, damaged: List[DamagedCheckpoint],
               moved_to: Optional[str] = None, then: str = ""):
    names = ", ".join(f"{os.path.basename(d.prefix)} ({d.reason})"
                      for d in damaged)
    moved = f"; moved into {moved_to}" if moved_to else ""
    super().__init__(f"No checkpoint of {directory} reads: {names}{moved}."
                     + (f" {then}" if then else ""))
    self.damaged = damaged


def _first_line(error: BaseException) -> str:
  text = str(getattr(error, "message", "") or error).strip()
  return text.splitlines()[0] if text else type(error).__name__


def _step(prefix: str) -> int:
  match = re.search(r"-(\d+)$", prefix)
  return int(match.group(1)) if match else -1


def checkpoint_files(prefix: str) -> List[str]:
  """The names of `prefix`'s index and data shards in its directory."""
  directory, name = os.path.split(prefix)
  return sorted(f for f in tf.io.gfile.listdir(directory or ".")
                if f == name + ".index" or f.startswith(name + ".data-"))


def _signature(prefix: str) -> tuple:
  directory = os.path.dirname(prefix)
  signature = []
  for name in checkpoint_files(prefix) + [os.path.basename(prefix) +
                                          MANIFEST_SUFFIX]:
    path = os.path.join(directory, name)
    if "://" not in path and os.path.exists(path):  # times to the ns
      stat = os.stat(path)
      signature.append((name, stat.st_size, stat.st_mtime_ns,
                        stat.st_ctime_ns, stat.st_ino))
    elif tf.io.gfile.exists(path):
      stat = tf.io.gfile.stat(path)
      signature.append((name, stat.length, stat.mtime_nsec))
  return tuple(signature)


def write_manifest(prefix: str) -> str:
  """Writes `prefix.manifest.json` (each file's size and SHA-256),
  atomically; returns its path."""
  directory = os.path.dirname(prefix)
  manifest = dict(checkpoint=os.path.basename(prefix),
                  files=file_digests.digests(directory,
                                             checkpoint_files(prefix),
                                             tf.io.gfile.GFile))
  path = prefix + MANIFEST_SUFFIX
  with tf.io.gfile.GFile(path + ".tmp", "w") as f:
    f.write(json.dumps(manifest, indent=1))
  tf.io.gfile.rename(path + ".tmp", path, overwrite=True)
  return path


def read_manifest(prefix: str) -> Optional[dict]:
  """`prefix`'s manifest, or None when it has none (or an unreadable one:
  then the checkpoint is read in full)."""
  path = prefix + MANIFEST_SUFFIX
  if not tf.io.gfile.exists(path):
    return None
  try:
    with tf.io.gfile.GFile(path) as f:
      manifest = json.load(f)
    if isinstance(manifest.get("files"), dict) and manifest["files"]:
      return manifest
  except (ValueError, AttributeError, tf.errors.OpError):
    pass
  logging.warning("%s is unreadable; reading the checkpoint in full.", path)
  return None


def read_every_tensor(prefix: str) -> None:
  """Reads every tensor of `prefix` (each checked against its CRC32C);
  `DamagedCheckpoint` when one does not read."""
  try:
    dtypes = sorted(tf.train.load_checkpoint(prefix)
                    .get_variable_to_dtype_map().items())
    # RestoreV2, as a restore reads them: variant tensors too (the input
    # iterator's state), which the reader cannot turn into NumPy.
    for start in range(0, len(dtypes), _TENSORS_PER_READ):
      names, types = zip(*dtypes[start:start + _TENSORS_PER_READ])
      with tf.device("CPU:0"):
        tf.raw_ops.RestoreV2(prefix=prefix, tensor_names=list(names),
                             shape_and_slices=[""] * len(names),
                             dtypes=list(types))
  except READ_ERRORS as error:
    raise DamagedCheckpoint(prefix, _first_line(error)) from None


def check(prefix: str) -> None:
  """`DamagedCheckpoint` unless `prefix` reads as it was written: its files
  against its manifest, or (without one) every tensor read.

  Examples:
    >>> check("runs/tiny/ckpt-20")  # None, or DamagedCheckpoint
  """
  if not fault_tolerance.checkpoint_is_complete(prefix):
    raise DamagedCheckpoint(prefix, "its index or a data shard is missing")
  signature = _signature(prefix)
  if _PASSED.get(prefix) == signature:
    return
  manifest = read_manifest(prefix)
  if manifest is None:
    read_every_tensor(prefix)
  else:
    difference = file_digests.first_difference(
        os.path.dirname(prefix), manifest["files"], tf.io.gfile.GFile,
        _size)
    if difference:
      raise DamagedCheckpoint(prefix, difference)
  _PASSED[prefix] = signature


def _size(path: str) -> int:
  """A file's size on any file system (FileNotFoundError when missing)."""
  if not tf.io.gfile.exists(path):
    raise FileNotFoundError(path)
  return tf.io.gfile.stat(path).length


def candidates(directory: str) -> List[str]:
  """The checkpoint the state file of `directory` names as the latest, then
  the older complete ones on disk, newest first; [] without a state file."""
  unreadable = False
  try:
    state = tf.train.get_checkpoint_state(directory)
  except Exception:  # pylint: disable=broad-except
    state, unreadable = None, True  # then what is on disk
  # get_checkpoint_state already puts `directory` before a relative path
  # (joining again broke a relative --model_dir such as runs/tiny).
  latest = state.model_checkpoint_path if state else None
  if not latest and not unreadable:
    return []
  on_disk = fault_tolerance.complete_checkpoints(directory)
  if not latest:
    if not on_disk:
      return []
    latest = on_disk[-1]
  older = [p for p in on_disk if _step(p) < _step(latest)]
  return [latest] + older[::-1]


def newest_readable(directory: str,
                    report: Optional[Callable[[str], None]] = None
                    ) -> Optional[str]:
  """The newest checkpoint of `directory` that passes `check` (the state
  file's latest first), moving nothing; None when it has none. Damaged ones
  skipped are named in one line through `report` (default: stderr, once per
  process); `NoReadableCheckpoint` when none reads.

  Examples:
    >>> newest_readable("runs/tiny")
    'runs/tiny/ckpt-20'
  """
  report = report or _stderr
  damaged = []
  for prefix in candidates(directory):
    try:
      check(prefix)
    except DamagedCheckpoint as error:
      damaged.append(error)
      continue
    if damaged and prefix not in _REPORTED:
      _REPORTED.add(prefix)
      report(f"Skipping {_listing(damaged)} of {directory}: reading "
             f"{os.path.basename(prefix)}, the newest checkpoint that reads.")
    return prefix
  if damaged:
    raise NoReadableCheckpoint(directory, damaged)
  return None


def _listing(damaged: List[DamagedCheckpoint]) -> str:
  return ("the damaged checkpoint" + ("s " if len(damaged) > 1 else " ") +
          ", ".join(f"{os.path.basename(d.prefix)} ({d.reason})"
                    for d in damaged))


def _stderr(line: str) -> None:
  print(line, file=sys.stderr, flush=True)


def _damaged_root(directory: str) -> str:
  return os.path.join(directory, DAMAGED_DIR) + "/"


def set_aside(prefix: str) -> str:
  """Moves `prefix`'s files (index, shards, manifest) into
  `<its directory>/damaged/` (`damaged/2/`, ... when those names are taken
  there); returns that directory. Nothing is deleted."""
  directory, name = os.path.split(prefix)
  names = [f for f in tf.io.gfile.listdir(directory)
           if f.startswith(name + ".")]
  target, k = os.path.join(directory, DAMAGED_DIR), 1
  while any(tf.io.gfile.exists(os.path.join(target, f)) for f in names):
    k += 1
    target = os.path.join(directory, DAMAGED_DIR, str(k))
  tf.io.gfile.makedirs(target)
  for f in names:
    tf.io.gfile.rename(os.path.join(directory, f), os.path.join(target, f))
  _PASSED.pop(prefix, None)
  return target


def _forget(manager: tf.train.CheckpointManager, prefix: str) -> None:
  """Makes `manager` (and its state file) name the newest complete
  checkpoint older than the moved `prefix` as the latest."""
  # pylint: disable=protected-access
  directory = manager.directory
  older = [p for p in fault_tolerance.complete_checkpoints(directory)
           if _step(p) < _step(prefix)]
  manager._maybe_delete.pop(prefix, None)
  manager._latest_checkpoint = older[-1] if older else None
  if not older:
    manager._maybe_delete.clear()
    state = os.path.join(directory, "checkpoint")
    if tf.io.gfile.exists(state):
      tf.io.gfile.remove(state)
    return
  kept = dict(manager._maybe_delete)
  kept.setdefault(older[-1], time.time())
  manager._maybe_delete = collections.OrderedDict(
      sorted(kept.items(), key=lambda item: _step(item[0])))
  manager._record_state()
  # pylint: enable=protected-access


def verified(manager: tf.train.CheckpointManager,
             report: Optional[Callable[[str], None]] = None
             ) -> tf.train.CheckpointManager:
  """Makes `manager` (the chief's) check each checkpoint it saves and
  restore the newest one that reads (see the module docstring)."""
  report = report or _stderr
  save, restore_or_initialize = manager.save, manager.restore_or_initialize
  directory = manager.directory

  def verified_save(*args, **kwargs):
    path = save(*args, **kwargs)
    if path is None:
      return path
    try:
      read_every_tensor(path)
    except DamagedCheckpoint as torn:
      set_aside(path)
      _forget(manager, path)
      raise fault_tolerance.CheckpointSaveError(
          directory, manager.latest_checkpoint, torn.reason,
          problem=f"{os.path.basename(path)} did not read back as written",
          cleanup=f"it was moved into {_damaged_root(directory)}",
          advice="Check the disk, then run") from None
    write_manifest(path)
    _remove_orphan_manifests(directory)
    _PASSED[path] = _signature(path)
    return path

  def restore_newest_readable():
    damaged = []
    while manager.latest_checkpoint is not None:
      latest = manager.latest_checkpoint
      try:
        check(latest)
        restored = restore_or_initialize()  # the real restore
      except DamagedCheckpoint as error:
        damaged.append(error)
      except _DAMAGE_ERRORS as error:
        damaged.append(DamagedCheckpoint(latest, _first_line(error)))
      else:
        if damaged:
          report(f"Moved {_listing(damaged)} of {directory} into "
                 f"{_damaged_root(directory)}; resuming from "
                 f"{os.path.basename(latest)} (the steps after it are "
                 "trained again).")
        return restored
      set_aside(latest)
      _forget(manager, latest)
    if damaged:
      raise NoReadableCheckpoint(
          directory, damaged, _damaged_root(directory),
          then="Run the same command again to start over from step 0.")
    return restore_or_initialize()

  manager.save = verified_save
  manager.restore_or_initialize = restore_newest_readable
  return manager


def _remove_orphan_manifests(directory: str) -> None:
  """Removes the manifests of checkpoints the manager deleted
  (`max_to_keep`): TensorFlow removes only the index and shards."""
  for name in tf.io.gfile.listdir(directory):
    if name.endswith(MANIFEST_SUFFIX):
      prefix = os.path.join(directory, name[:-len(MANIFEST_SUFFIX)])
      if not tf.io.gfile.exists(prefix + ".index"):
        tf.io.gfile.remove(os.path.join(directory, name))
