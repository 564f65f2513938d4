"""Training a run: Model Garden's train_lib + orbit, one strategy scope.

`run_config.build_config` makes an experiment's config from Model Garden's
inputs (the experiment name, YAML files, `a.b=c` overrides) and our
`strategy`, with what it read (the vocabulary, `task.init_checkpoint`
resolved) for the run to take; `prepared_run.prepare` builds and checks it
once; `run` trains
(and/or evaluates) it in a model_dir. `python -m cmlm train`
(cmlm/commands/train.py) is the command over them. Checkpoints and
TensorBoard summaries (loss, each objective's loss and metrics,
learning_rate, examples_per_second) go to the model_dir; a run started again
in the same model_dir resumes from its latest checkpoint that reads (a
damaged one is moved aside: `checkpoint_integrity`).

Multi-worker (`TF_CONFIG`): every worker runs the same command on a shared
`--model_dir`; only the chief writes params.yaml, checkpoints and summaries
there (the others save to a throw-away directory, as collective saves need
every worker) and every worker resumes from the chief's latest checkpoint.
SIGTERM or SIGINT (Ctrl-C) saves a checkpoint after the current step (after
the current loop on TPUs and across workers), then stops the run
(`fault_tolerance.TrainingPreempted`; the command exits with status 143 or
130); a second Ctrl-C stops at once (`stop_signals`).
"""
import contextlib
import copy
import dataclasses
import shutil
import tempfile
from typing import Optional

import tensorflow as tf
import tf_keras

from official.common import distribute_utils
from official.core import task_factory
from official.core import train_lib
from official.core import train_utils
from official.modeling import performance
from cmlm.training import best_checkpoint
from cmlm.training import checkpoint_integrity
from cmlm.training import checkpoints
from cmlm.training import config_inputs
from cmlm.training import fault_tolerance
from cmlm.training import run_lock
from cmlm.training import prepared_run
from cmlm.training import progress as progress_lib
from cmlm.training import run_config
from cmlm.training import run_dir
from cmlm.training import strategies
from cmlm.training.strategies import PRECISIONS
from cmlm.training.trainer import SentenceEncoderTrainer


def seed_run(task_config) -> None:
  """`task.seed` (when set) seeds Python's, NumPy's and TensorFlow's
  generators, before the model is built: the encoder's and heads'
  initialisation and the dropout masks follow it; `task.seeded_data`
  makes it the data seed of every objective that has none."""
  if task_config.seed is not None:
    tf_keras.utils.set_random_seed(task_config.seed)


def make_strategy(params):
  """The runtime's strategy; a clear error when no TPU answers `--tpu`.

  A config that `run_config.build_config` made names its strategy and GPU
  count; one that leaves them to the hardware (an experiment's own, as
  `exp_factory` gives it) takes `strategies.choose_for_runtime`'s, without
  a line (and without setting them in `params`).
  """
  runtime = params.runtime
  choice = strategies.choose_for_runtime(runtime, run_config.find_hardware)
  try:
    return distribute_utils.get_distribution_strategy(
        distribution_strategy=choice.strategy,
        all_reduce_alg=runtime.all_reduce_alg,
        num_gpus=choice.num_gpus,
        tpu_address=choice.tpu)
  except (ValueError, tf.errors.OpError) as error:
    if choice.strategy != "tpu":
      raise
    if not choice.tpu:
      raise ValueError("--strategy=tpu found no TPU on this machine; give "
                       "--tpu=NAME (a Cloud TPU's name or grpc:// address) "
                       "or set runtime.tpu.") from None
    raise ValueError(f"No TPU found for --tpu={choice.tpu!r} "
                     f"(runtime.tpu): {str(error).splitlines()[0]}") from None


@contextlib.contextmanager
def mixed_precision(dtype: Optional[str]):
  """Sets the Keras policy for `runtime.mixed_precision_dtype`, then resets it."""
  if dtype and dtype not in PRECISIONS:
    raise ValueError(f"runtime.mixed_precision_dtype must be one of "
                     f"{', '.join(PRECISIONS)}, got {dtype!r}.")
  previous = tf_keras.mixed_precision.global_policy()
  if dtype:
    performance.set_mixed_precision_policy(tf.as_dtype(dtype))
  try:
    yield
  finally:
    tf_keras.mixed_precision.set_global_policy(previous)


class _ExperimentRunner(train_lib.OrbitExperimentRunner):
  """Model Garden's runner: chief-only outputs, SIGTERM checkpoints."""

  def __init__(self, termination, scored_selection=False, **kwargs):
    self._termination = termination
    self._scored_selection = scored_selection
    super().__init__(**kwargs)

  def _build_best_checkpoint_exporter(self):
    # An injected scorer keeps the best checkpoint itself (a train action,
    # training/best_checkpoint.py); validation logs lack its metric.
    if self._scored_selection:
      return None
    return super()._build_best_checkpoint_exporter()

  def _maybe_build_checkpoint_manager(self):
    # Every worker saves at the same steps (collective saves need them all).
    if self.strategy.extended.should_checkpoint:
      fault_tolerance.repair_checkpoint_state(self.model_dir)
      # Each save read back and given its manifest; the newest checkpoint
      # that reads is restored, damaged ones moved aside.
      return checkpoints.save_at_interval_multiples(
          fault_tolerance.guard_disk_full_saves(checkpoint_integrity.verified(
              super()._maybe_build_checkpoint_manager())))
    return checkpoints.save_at_interval_multiples(_WorkerCheckpointManager(
        self.trainer.checkpoint, restore_dir=self.model_dir,
        step_counter=self.trainer.global_step,
        checkpoint_interval=self.params.trainer.checkpoint_interval,
        init_fn=self.trainer.initialize))

  def _build_controller(self, trainer, evaluator, train_actions=None,
                        **kwargs):
    if trainer:
      preemption = fault_tolerance.PreemptionCheckpoint(
          self._termination, self.strategy, self.checkpoint_manager,
          self.trainer.global_step)
      # Checked between steps too, where the trainer can stop there.
      trainer.preemption = preemption
      train_actions = list(train_actions or []) + [preemption]
    return super()._build_controller(trainer, evaluator,
                                     train_actions=train_actions, **kwargs)


class _WorkerCheckpointManager(tf.train.CheckpointManager):
  """A non-chief worker's: saves to a throw-away directory (collective saves
  need every worker), restores what the chief wrote in `restore_dir`."""

  def __init__(self, checkpoint, restore_dir, **kwargs):
    super().__init__(checkpoint, tempfile.mkdtemp(prefix="cmlm-worker-"),
                     max_to_keep=1, **kwargs)
    self._restore_dir = restore_dir

  def restore_or_initialize(self):
    latest = checkpoint_integrity.newest_readable(self._restore_dir)
    if latest is None:
      return super().restore_or_initialize()
    self.checkpoint.restore(latest)
    self._last_checkpoint_step = int(self._step_counter.numpy())
    return latest


@dataclasses.dataclass
class TrainResult:
  model: tf_keras.Model
  trainer: SentenceEncoderTrainer
  progress: Optional[progress_lib.ProgressReporter]
  best: Optional[best_checkpoint.BestCheckpointSelector] = None


# The fields of `task.model` that shape its variables or what it computes:
# a checkpoint trained with other values cannot be resumed or evaluated.
_MODEL_FIELDS = (
    ("encoder", "vocab_size"), ("encoder", "hidden_size"),
    ("encoder", "num_layers"), ("encoder", "num_attention_heads"),
    ("encoder", "intermediate_size"), ("encoder", "max_position_embeddings"),
    ("encoder", "type_vocab_size"), ("encoder", "embedding_size"),
    ("num_projections",), ("pooling",), ("sentence_representation",),
    ("pooling_head",))


def check_run_fits(params, model_dir: str, mode: str) -> None:
  """Refuses, in one sentence and before anything is written, a
  `model_dir` whose checkpoints `params` cannot resume or evaluate: a run
  of another model or other objectives (its params.yaml would be
  overwritten, then the restore fail), and an evaluation (`--mode=eval`)
  of a directory with no checkpoint (it would score random weights)."""
  if not tf.train.latest_checkpoint(model_dir):
    if mode == "eval":
      raise FileNotFoundError(
          f"--mode=eval scores the latest checkpoint of --model_dir="
          f"{model_dir}, which holds none: train first, or give "
          "--mode=continuous_eval to score each checkpoint as it comes.")
    return
  if not run_dir.is_run_dir(model_dir):
    return
  saved = run_dir.load_params(model_dir).task
  here, there = params.task.model.as_dict(), saved.model.as_dict()
  for path in _MODEL_FIELDS:
    mine = config_inputs.lookup(here, path)
    theirs = config_inputs.lookup(there, path)
    if mine != theirs:
      raise ValueError(
          f"--model_dir={model_dir} holds a run of another model "
          f"(task.model.{'.'.join(path)}: {theirs!r} there, {mine!r} in "
          "this config), which it cannot resume or read; give a new "
          "--model_dir, or the run's own config.")
  kinds = lambda task: sorted(f"{name} ({objective.type})" for name, objective
                              in task.active_objectives().items())
  if kinds(params.task) != kinds(saved):
    raise ValueError(
        f"--model_dir={model_dir} holds a run that trained "
        f"{', '.join(kinds(saved))}; this config trains "
        f"{', '.join(kinds(params.task))}, which cannot resume from it; give "
        "a new --model_dir, or the run's own config.")


def run(params, model_dir: str, mode: str = "train", strategy=None,
        best_checkpoint_scorer: Optional[best_checkpoint.Scorer] = None
        ) -> TrainResult:
  """Trains (and/or evaluates) `params` in `model_dir`.

  `params` is an experiment config or a `run_config.BuiltConfig` (what
  building it read is not read again), checked here by
  `prepared_run.prepare`, or a `PreparedRun` already checked. Training
  takes `model_dir`'s lock (`run_lock`; the chief only) before writing
  anything.

  With `best_checkpoint_scorer` (embeddings function -> score), training
  scores the encoder every `trainer.validation_interval` steps and keeps the
  best checkpoint in `<model_dir>/<trainer.best_checkpoint_export_subdir>`
  (training/best_checkpoint.py; `trainer.best_checkpoint_eval_metric` names
  the score).

  Raises:
    run_lock.RunDirectoryInUse: another process trains in `model_dir`.
    ValueError: the vocabulary's casing does not fit the training text.
    fault_tolerance.TrainingPreempted: SIGTERM or SIGINT came; a checkpoint
      was saved.
    fault_tolerance.NonFiniteTrainingError: a step's loss or gradient was not
      finite (unless `task.skip_non_finite_batches`).
    fault_tolerance.CheckpointSaveError: the disk was full during a save
      (its temporary files were removed), or a checkpoint did not read back
      as written (it was moved aside).
    checkpoint_integrity.NoReadableCheckpoint: no checkpoint of `model_dir`
      reads (they were moved aside; run again to start over).

  Examples:
    >>> from cmlm.training import run_config
    >>> built = run_config.build_config(
    ...     "cmlm/tiny", params_override="trainer.train_steps=200")
    >>> result = run(built, "runs/tiny")  # resumes when run again
    >>> int(result.trainer.global_step.numpy())
    200
  """
  if not model_dir:
    raise ValueError("--model_dir is required: checkpoints and summaries go "
                     "there, and a run resumes from it.")
  if isinstance(params, prepared_run.PreparedRun):
    prepared, params, mode = params, params.params, params.mode
    built = None
  else:
    built, prepared = params, None
    if isinstance(params, run_config.BuiltConfig):
      params = params.params
  with contextlib.ExitStack() as stack:
    stack.enter_context(mixed_precision(params.runtime.mixed_precision_dtype))
    # The strategy comes first: a multi-worker one must be made before any
    # TensorFlow op runs, and `prepare` tokenizes text.
    strategy = strategy or make_strategy(params)
    prepared = prepared or prepared_run.prepare(built, mode)
    check_run_fits(params, model_dir, mode)
    selecting = best_checkpoint_scorer is not None and "train" in mode
    if selecting:
      best_checkpoint.check_config(params.trainer)
    # Our SIGTERM handling replaces Model Garden's on-demand preemption
    # checkpoints (which keep the process running after the save).
    runner_params = copy.deepcopy(params)
    runner_params.trainer.preemption_on_demand_checkpoint = False
    chief = strategy.extended.should_checkpoint
    if chief and "train" in mode:
      # One writer per run directory, before anything is written there.
      stack.enter_context(run_lock.hold(model_dir))
    seed_run(params.task)
    with strategy.scope():
      start = prepared.init_checkpoint
      task = task_factory.get_task(params.task, logging_dir=model_dir,
                                   objectives=prepared.objectives,
                                   init_checkpoint=start.prefix if start else None)
      trainer = train_utils.create_trainer(
          params, task, train="train" in mode, evaluate="eval" in mode,
          trainer_cls=SentenceEncoderTrainer)
    if chief and "train" in mode:  # what trained the run, not what read it
      train_utils.serialize_config(params, model_dir)
    progress = best = None
    actions = []
    if "train" in mode:
      progress = progress_lib.ProgressReporter(params.trainer.train_steps,
                                               trainer.global_step)
      actions.append(progress)
    if selecting and chief:
      best = best_checkpoint.BestCheckpointSelector(
          trainer.model, params, model_dir, best_checkpoint_scorer,
          trainer.global_step, vocab=prepared.vocab)
      actions.append(best)
    # Training saves a checkpoint on SIGTERM or Ctrl-C, then stops; an
    # evaluation stops at once (the command's own handler), even while it
    # waits for a checkpoint.
    termination = fault_tolerance.TerminationSignal()
    with (termination if "train" in mode else
          contextlib.nullcontext(termination)):
      runner = _ExperimentRunner(
          termination, scored_selection=selecting,
          distribution_strategy=strategy, task=task, mode=mode,
          params=runner_params, model_dir=model_dir, trainer=trainer,
          save_summary=chief, train_actions=actions or None)
      try:
        model, _ = runner.run()
      finally:
        if not chief and runner.checkpoint_manager:
          shutil.rmtree(runner.checkpoint_manager.directory,
                        ignore_errors=True)
  return TrainResult(model, trainer, progress, best)
