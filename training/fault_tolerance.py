"""Preemption, crashes and numerical faults in training runs.

- `TerminationSignal`: SIGTERM or SIGINT (Ctrl-C) sets a flag instead of
  ending the process; `PreemptionCheckpoint` then saves a checkpoint and
  ends the run with `TrainingPreempted`: after the current step in one
  process (`SentenceEncoderTrainer` checks the flag between steps), after
  the current loop of `trainer.steps_per_loop` steps on TPUs and across
  workers (on every worker, when any worker got the signal). A second
  Ctrl-C ends the process at once (`stop_signals`).
- Checkpoints are atomic: TensorFlow writes a checkpoint's data files, then
  its index (through a temporary name and a rename), and only then the
  `checkpoint` state file that names the latest one (again a temporary file
  and a rename). A crash at any point leaves "latest" naming the previous,
  complete checkpoint; `repair_checkpoint_state` removes what such a crash
  leaves behind and, should the state file itself be unreadable or name a
  checkpoint whose files are gone, points it at the newest complete one.
- A save that fails because the disk is full (`guard_disk_full_saves`)
  removes its temporary files at once (a `ckpt-N_temp/` can be as large as
  a checkpoint) and ends the run with `CheckpointSaveError`; the previous
  checkpoint stays the latest, and the same command resumes from it.
  A checkpoint that does not read back as written, or no longer reads when
  a run starts, is moved aside: `checkpoint_integrity`.
- `all_replicas_finite`: the non-finite guard of `SentenceEncoderTrainer`
  (a non-finite loss or gradient stops training, or its batch is skipped).
"""
import errno
import os
import re
import shutil
import signal

from absl import logging
import tensorflow as tf

from cmlm.training import stop_signals

# What a save interrupted by a crash can leave in a model_dir: the shards
# directory, a half-written index, a half-written state file.
_SAVE_LEFTOVERS = re.compile(
    r"ckpt-\d+_temp|ckpt-\d+\.index\.tempstate\d*|checkpoint\.tmp[0-9a-f]*"
    r"|ckpt-\d+\.manifest\.json\.tmp")
_FUNCTION_NODE = re.compile(r"\{\{function_node [^}]*\}\}\s*")
_DATA_FILE = re.compile(r"\.data-(\d{5})-of-(\d{5})$")


class TrainingPreempted(Exception):
  """SIGTERM or SIGINT stopped training after a checkpoint; the same run
  resumes it. `signum` is the signal's number."""

  def __init__(self, step: int, checkpoint: str,
               signum: int = signal.SIGTERM):
    super().__init__(f"Stopped by {stop_signals.NAMES.get(signum, signum)} "
                     f"at step {step} after saving {checkpoint}; run the same "
                     "command to resume.")
    self.step = step
    self.checkpoint = checkpoint
    self.signum = signum


class NonFiniteTrainingError(FloatingPointError):
  """A training step had a non-finite loss or gradient."""

  def __init__(self, step: int, count: int):
    super().__init__(
        f"Training stopped: the loss or a gradient was not finite at step "
        f"{step} ({count} such step(s) in this loop); no checkpoint was saved "
        "after it, so the latest checkpoint is the last good one. Set "
        "task.skip_non_finite_batches=true to skip such batches instead.")
    self.step = step


class CheckpointSaveError(OSError):
  """A checkpoint could not be written (the disk is full, or it did not read
  back as written); what it left was removed or moved aside and the previous
  checkpoint is still the latest."""

  def __init__(self, model_dir: str, latest: str, reason: str,
               problem: str = "the disk is full",
               cleanup: str = "its temporary files were removed",
               advice: str = "Free some space and run"):
    resume = (f"resumes from {os.path.basename(latest)}" if latest
              else "starts over")
    super().__init__(
        f"Saving a checkpoint in {model_dir} failed: {problem} ({reason}); "
        f"{cleanup}. {advice} the same command: it {resume}.")


def _is_disk_full(error: BaseException) -> bool:
  if isinstance(error, tf.errors.ResourceExhaustedError):
    return True  # TensorFlow's file systems report ENOSPC so
  return isinstance(error, OSError) and error.errno in (errno.ENOSPC,
                                                        errno.EDQUOT)


def guard_disk_full_saves(manager: tf.train.CheckpointManager
                          ) -> tf.train.CheckpointManager:
  """Makes a disk-full `manager.save` remove what it half wrote and raise
  `CheckpointSaveError` (one clear line) instead of TensorFlow's error."""
  save = manager.save

  def guarded_save(*args, **kwargs):
    try:
      return save(*args, **kwargs)
    except (tf.errors.ResourceExhaustedError, OSError) as error:
      if not _is_disk_full(error):
        raise
      remove_save_leftovers(manager.directory)
      _remove_incomplete_checkpoints(manager.directory)
      # TensorFlow puts the graph function's name first: not the user's.
      reason = (_FUNCTION_NODE.sub("", str(getattr(error, "message", "") or
                                           error)).strip().splitlines()
                or ["no space left"])[0]
      raise CheckpointSaveError(manager.directory, manager.latest_checkpoint,
                                reason) from None

  manager.save = guarded_save
  return manager


class TerminationSignal:
  """While entered, SIGTERM and SIGINT (Ctrl-C) set `received` (and
  `signum`) instead of ending the process; training then saves a checkpoint
  and stops. After the first, a second Ctrl-C ends the process at once: the
  watcher of `stop_signals` does when the command started it, or else the
  default action, restored here, once this handler has run."""

  def __init__(self):
    self.received = False
    self.signum = None
    self._previous = {}

  def _handle(self, signum, frame):
    del frame
    if self.received:
      return  # a repeated SIGTERM: the stop is under way
    self.received, self.signum = True, signum
    stop_signals.note(signum)
    # os.write, not print: a handler may run in the middle of a print.
    os.write(2, f"{stop_signals.NAMES.get(signum, signum)} received: saving "
                "a checkpoint, then stopping (Ctrl-C again stops at once; "
                "the last complete checkpoint is kept).\n".encode())
    if not stop_signals.watching():
      signal.signal(signal.SIGINT, signal.SIG_DFL)

  def __enter__(self):
    # Python signal handlers can only be set from the main thread.
    if stop_signals.on_main_thread():
      self._previous = {number: signal.signal(number, self._handle)
                        for number in stop_signals.STOP_SIGNALS}
    return self

  def __exit__(self, *exc_info):
    for number, handler in self._previous.items():
      signal.signal(number, handler)
    self._previous = {}


def num_workers(strategy: tf.distribute.Strategy) -> int:
  """How many worker processes train together under `strategy`."""
  resolver = getattr(strategy, "cluster_resolver", None)
  if resolver is None or isinstance(strategy, tf.distribute.TPUStrategy):
    return 1
  jobs = resolver.cluster_spec().as_dict()
  return max(1, len(jobs.get("worker", [])) + len(jobs.get("chief", [])))


def any_worker(strategy: tf.distribute.Strategy, flag: bool) -> bool:
  """True on every worker when `flag` is true on any of them (a collective)."""
  if num_workers(strategy) == 1:
    return flag
  value = strategy.run(lambda: tf.constant(int(flag)))
  return bool(strategy.reduce(tf.distribute.ReduceOp.SUM, value, axis=None))


class PreemptionCheckpoint:
  """Orbit train action: after SIGTERM or SIGINT, save a checkpoint and stop.

  Runs after each loop on every worker; the flag is agreed across workers so
  that all of them join the (collective) save. In one process the trainer
  also calls it as soon as a step ends with `requested` set.
  """

  def __init__(self, termination: TerminationSignal, strategy,
               checkpoint_manager: tf.train.CheckpointManager,
               global_step: tf.Variable):
    self._termination = termination
    self._strategy = strategy
    self._manager = checkpoint_manager
    self._global_step = global_step

  @property
  def requested(self) -> bool:
    """Whether this process got a stop signal."""
    return self._termination.received

  def __call__(self, output):
    del output
    if not any_worker(self._strategy, self._termination.received):
      return
    step = int(self._global_step.numpy())
    path = self._manager.save(checkpoint_number=step, check_interval=False)
    raise TrainingPreempted(step, path or self._manager.latest_checkpoint,
                            self._termination.signum or signal.SIGTERM)


def checkpoint_is_complete(prefix: str) -> bool:
  """True when the index and every data shard of checkpoint `prefix` exist."""
  directory, name = os.path.split(prefix)
  if not tf.io.gfile.exists(prefix + ".index"):
    return False
  shards = [_DATA_FILE.search(f) for f in tf.io.gfile.listdir(directory or ".")
            if f.startswith(name + ".data-")]
  shards = [m for m in shards if m]
  return bool(shards) and len(shards) == int(shards[0].group(2))


def complete_checkpoints(model_dir: str):
  """Complete `ckpt-N` prefixes in `model_dir`, oldest first."""
  numbers = [int(m.group(1)) for m in
             (re.fullmatch(r"ckpt-(\d+)\.index", f)
              for f in tf.io.gfile.listdir(model_dir)) if m]
  prefixes = [os.path.join(model_dir, f"ckpt-{n}") for n in sorted(numbers)]
  return [p for p in prefixes if checkpoint_is_complete(p)]


def remove_save_leftovers(model_dir: str) -> None:
  """Removes the temporary files of an interrupted or failed save."""
  for name in tf.io.gfile.listdir(model_dir):
    if _SAVE_LEFTOVERS.fullmatch(name.rstrip("/")):
      path = os.path.join(model_dir, name.rstrip("/"))
      logging.warning("Removing %s, left by an interrupted checkpoint save.",
                      path)
      if tf.io.gfile.isdir(path):
        shutil.rmtree(path, ignore_errors=True)
      else:
        tf.io.gfile.remove(path)


def _remove_incomplete_checkpoints(model_dir: str) -> None:
  """Removes the files of every `ckpt-N` that lacks its index or a shard
  (a save that failed after its shards were moved into place)."""
  names = tf.io.gfile.listdir(model_dir)
  numbers = {m.group(1) for m in (re.match(r"ckpt-(\d+)\.(index|data-)", n)
                                  for n in names) if m}
  for number in numbers:
    prefix = os.path.join(model_dir, f"ckpt-{number}")
    if checkpoint_is_complete(prefix):
      continue
    for name in names:
      if name.startswith(f"ckpt-{number}."):
        logging.warning("Removing %s, of a checkpoint whose save failed.",
                        name)
        tf.io.gfile.remove(os.path.join(model_dir, name))


def repair_checkpoint_state(model_dir: str) -> None:
  """Leaves `model_dir` ready to resume after a crash at any point.

  Removes the temporary files of an interrupted save; if the `checkpoint`
  state file cannot be read or its latest checkpoint is incomplete, rewrites
  it (atomically) to name the newest complete checkpoint on disk.
  """
  if not tf.io.gfile.isdir(model_dir):
    return
  remove_save_leftovers(model_dir)
  try:
    state = tf.train.get_checkpoint_state(model_dir)
  except Exception as error:  # pylint: disable=broad-except
    logging.warning("The checkpoint state file of %s is unreadable (%s).",
                    model_dir, error)
    state = None
  latest = state.model_checkpoint_path if state else None
  if latest and not os.path.isabs(latest):
    latest = os.path.join(model_dir, latest)
  if latest and checkpoint_is_complete(latest):
    return
  complete = complete_checkpoints(model_dir)
  if not complete:
    if latest or tf.io.gfile.exists(os.path.join(model_dir, "checkpoint")):
      logging.warning("No complete checkpoint in %s: training starts over.",
                      model_dir)
      tf.io.gfile.remove(os.path.join(model_dir, "checkpoint"))
    return
  logging.warning("The latest checkpoint of %s (%s) is missing or incomplete;"
                  " resuming from %s.", model_dir, latest, complete[-1])
  tf.compat.v1.train.update_checkpoint_state(
      model_dir, complete[-1], all_model_checkpoint_paths=complete)


def all_replicas_finite(loss, gradients=()) -> tf.Tensor:
  """Whether `loss` and `gradients` are finite on every replica (a bool)."""
  local = tf.math.is_finite(loss)
  gradients = [g for g in gradients if g is not None]
  if gradients:
    local = tf.logical_and(
        local, tf.math.is_finite(tf.linalg.global_norm(gradients)))
  non_finite = tf.cast(tf.logical_not(local), tf.int32)
  context = tf.distribute.get_replica_context()
  if context is not None and context.num_replicas_in_sync > 1:
    non_finite = context.all_reduce(tf.distribute.ReduceOp.SUM, non_finite)
  return tf.equal(non_finite, 0)
