"""Training a run: Model Garden's train_lib + orbit, one strategy scope.

`build_params` makes an experiment's config from Model Garden's inputs (the
experiment name, YAML files, `a.b=c` overrides) and our `strategy`; `run`
trains (and/or evaluates) it in a model_dir. `python -m cmlm train`
(cmlm/commands/train.py) is the command over them. Checkpoints and
TensorBoard summaries (loss, each objective's loss and metrics,
learning_rate, examples_per_second) go to the model_dir; a run started again
in the same model_dir resumes from its latest checkpoint.

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
import os
import shutil
import tempfile
import time
from typing import Dict, Optional, Sequence

import orbit
import tensorflow as tf
import tf_keras

from official.common import distribute_utils
from official.core import config_definitions as cfg
from official.core import exp_factory
from official.core import task_factory
from official.core import train_lib
from official.core import train_utils
from official.modeling import hyperparams
from official.modeling import performance
from cmlm.data_pipelines import unk_rate
from cmlm.modeling import model_builder
from cmlm.objectives import base as objective_base
from cmlm.training import best_checkpoint
from cmlm.training import fault_tolerance
from cmlm.training import run_dir
from cmlm.training import run_lock
from cmlm.training import task as task_lib
from cmlm.training import checkpoints
from cmlm.training.strategies import PRECISIONS
from cmlm.training.strategies import STRATEGIES
from cmlm.training.trainer import SentenceEncoderTrainer



class ProgressReporter:
  """An orbit train action printing step, losses, metrics, speed and ETA.

  Prints `loss`, then every objective's `<name>/<metric>` (its loss and
  whatever metrics it declares), examples/s and the learning rate.
  """

  def __init__(self, total_steps: int, global_step: tf.Variable):
    self._total = total_steps
    self._global_step = global_step
    self._last = None  # (time, step) of the previous report
    self.first_loss = None  # mean training loss of the first loop
    self.last_loss = None   # ... and of the latest one

  def __call__(self, output):
    now, step = time.perf_counter(), int(self._global_step.numpy())
    fields = [f"step {step}/{self._total} ({100 * step / self._total:.0f}%)"]
    output = tf.nest.map_structure(orbit.utils.get_value, output)
    if "training_loss" in output:
      self.last_loss = float(output["training_loss"])
      if self.first_loss is None:
        self.first_loss = self.last_loss
      fields.append(f"loss {self.last_loss:.4g}")
    for key in sorted(k for k in output if "/" in k):
      fields.append(f"{key} {float(output[key]):.4g}")
    for key, label in (("examples_per_second", "ex/s"),
                       ("learning_rate", "lr")):
      if key in output:
        fields.append(f"{label} {float(output[key]):.4g}")
    if output.get("skipped_batches"):
      fields.append(f"skipped {int(output['skipped_batches'])} non-finite")
    if self._last is not None and step > self._last[1]:
      seconds_per_step = (now - self._last[0]) / (step - self._last[1])
      eta = seconds_per_step * max(self._total - step, 0)
      fields.append(f"ETA {eta // 60:.0f}m{eta % 60:02.0f}s")
    self._last = (now, step)
    print(" | ".join(fields), flush=True)


def build_params(experiment: str, config_files: Sequence[str] = (),
                 params_override: str = "", strategy: Optional[str] = None,
                 tpu: Optional[str] = None,
                 lock: bool = True) -> cfg.ExperimentConfig:
  """An experiment's config, as Model Garden's flags would make it.

  The registered `experiment`, then each YAML of `config_files`, then
  `params_override` (`a.b=c,...` or YAML), then `strategy`
  (runtime.distribution_strategy) and `tpu` (runtime.tpu). A run that
  `task.init_checkpoint` names gives its encoder config (see
  `adopt_init_checkpoint_encoder`). Locked unless `lock` is False. The
  config is checked once, by `prepare`, when the run starts.
  """
  if not experiment:
    raise ValueError("--experiment is required, e.g. --experiment=cmlm/tiny.")
  if strategy and strategy not in STRATEGIES:
    raise ValueError(f"--strategy must be one of {', '.join(STRATEGIES)}, "
                     f"got {strategy!r}.")
  try:
    params = exp_factory.get_exp_config(experiment)
  except (KeyError, LookupError, AssertionError):
    raise ValueError(f"Unknown --experiment={experiment!r}; the registered "
                     f"ones are {', '.join(registered_experiments())}."
                     ) from None
  for config_file in config_files or ():
    params = hyperparams.override_params_dict(params, config_file,
                                              is_strict=True)
  if params_override:
    params = hyperparams.override_params_dict(params, params_override,
                                              is_strict=True)
  if strategy:
    params.override({"runtime": {"distribution_strategy": strategy}})
  if tpu:
    params.override({"runtime": {"tpu": tpu}})
  adopt_init_checkpoint_encoder(params)
  params.validate()
  if lock:
    params.lock()
  return params


def registered_experiments() -> list:
  """The names of Model Garden's registered experiments, e.g. cmlm/tiny.

  Model Garden keeps them as a tree keyed by the parts of the name
  (`{"cmlm": {"tiny": factory}}`); this lists the paths to its leaves.
  """
  def leaves(tree, prefix):
    for key, value in tree.items():
      name = f"{prefix}/{key}" if prefix else key
      if isinstance(value, dict):
        yield from leaves(value, name)
      else:
        yield name
  return sorted(leaves(exp_factory._REGISTERED_CONFIGS, ""))  # pylint: disable=protected-access


def adopt_init_checkpoint_encoder(params) -> None:
  """A run starts with the encoder of the run it starts from.

  When `task.init_checkpoint` is a run of ours (params.yaml beside the
  checkpoint), its `task.model` replaces the experiment's: the transformer
  must be that run's to be restored. What the experiment trains on top
  stays the experiment's: its dropout rates, its pooling head and frozen
  core when it sets them, its pooling when it sets one other than the
  default mean (SimCSE's recipe reads [CLS] from a mean-pooled import),
  and its CMLM projection head (`num_projections`;
  0 for a method that trains none), unless the source's embedding reads its
  projections ("proj"). A part the source lacks starts fresh
  (`checkpoints.encoder_view`); one the experiment lacks is not read. An unset
  `task.tokenization.vocab_file` takes that run's vocabulary, casing and
  text normalization (the sequence length stays the experiment's). NLI
  fine-tuning (cmlm/xnli) thus needs only the run and the data.
  """
  task = params.task
  if not getattr(task, "init_checkpoint", ""):
    return
  try:
    source_dir = os.path.dirname(checkpoints.resolve(task.init_checkpoint))
  except FileNotFoundError:
    return  # `prepare` says so, in one line, when the run starts
  if not run_dir.is_run_dir(source_dir):
    return
  source = run_dir.load_params(source_dir).task
  if task.model.as_dict() == source.model.as_dict() and (
      task.tokenization.vocab_file):
    return
  own = task.model.as_dict()
  kept = {"encoder": {key: own["encoder"][key] for key in
                      ("dropout_rate", "attention_dropout_rate")}}
  kept_names = ["its dropout rates"]
  if own["pooling_head"]["type"] != "none" or not own["trainable_core"]:
    kept.update(pooling_head=own["pooling_head"],
                trainable_core=own["trainable_core"])
    kept_names.append("pooling head and trainable_core")
  if own["pooling"] != model_builder.SiameseEncoderConfig().pooling:
    kept["pooling"] = own["pooling"]
    kept_names.append(f"{own['pooling']} pooling")
  if source.model.sentence_representation != "proj":
    kept["num_projections"] = own["num_projections"]
    kept_names.append("num_projections")
  task.model.override(source.model.as_dict(), is_strict=True)
  task.model.override(kept, is_strict=True)
  taken = f"task.model (but {', '.join(kept_names)})"
  if not task.tokenization.vocab_file:
    task.tokenization.override(
        {key: getattr(source.tokenization, key) for key in
         ("vocab_file", "lower_case", "text_normalization")}, is_strict=True)
    taken += " and the vocabulary"
  print(f"{taken} taken from {source_dir}, the run task.init_checkpoint "
        "starts from.", flush=True)


@dataclasses.dataclass
class PreparedRun:
  """A run's description, built and checked once (`prepare`), then passed
  down: the locked config, the mode, and the objectives the task trains."""
  params: cfg.ExperimentConfig
  mode: str
  objectives: Dict[str, objective_base.Objective]


def prepare(params: cfg.ExperimentConfig, mode: str = "train",
            init_checkpoint_from_earlier_stage: bool = False
            ) -> PreparedRun:
  """Builds the run's objectives once and checks, before anything is
  written, everything the run will read: the model config, each
  objective's weight, config and the data `mode` reads, the vocabulary
  against the embedding table, `task.init_checkpoint`, and (training) the
  tokenization against a sample of the training text. One clear error each.

  `init_checkpoint_from_earlier_stage`: `task.init_checkpoint` is the
  directory an earlier stage of the same schedule will write
  (`training.stages`), so it need not exist yet; everything else is checked.
  """
  task_config = params.task
  task_config.model.validate()
  if "train" in mode:
    check_trainer(params.trainer)
  objectives = task_lib.build_objectives(task_config)
  for objective in objectives.values():
    objective.validate(mode)
  task_lib.check_vocab_matches_encoder(task_config.tokenization.vocab_file,
                                       task_config.model.encoder.vocab_size)
  if task_config.init_checkpoint and not init_checkpoint_from_earlier_stage:
    checkpoints.resolve(task_config.init_checkpoint)
  if "train" in mode:
    check_training_text(task_config, objectives)
  return PreparedRun(params, mode, objectives)


def check_trainer(trainer: cfg.TrainerConfig) -> None:
  """What orbit's controller would refuse only once params.yaml is
  written: the loop length and the summary interval."""
  loop = trainer.steps_per_loop
  if loop < 1:
    raise ValueError(f"trainer.steps_per_loop must be 1 or more, got {loop}.")
  if trainer.train_steps < 1:
    raise ValueError(f"trainer.train_steps must be 1 or more, got "
                     f"{trainer.train_steps}.")
  if trainer.summary_interval and trainer.summary_interval % loop:
    raise ValueError(f"trainer.summary_interval ({trainer.summary_interval}) "
                     f"must be a multiple of trainer.steps_per_loop ({loop}): "
                     "summaries are written at the end of a loop.")


def check_training_text(task_config, objectives) -> None:
  """Tokenizes a sample of each objective's training text with the run's
  tokenization and prints its [UNK] rate; refuses a vocabulary of the wrong
  casing (`data_pipelines.unk_rate.check`)."""
  for name, objective in objectives.items():
    data = objective.config.train_data
    sentences = objective.text_sample(data, unk_rate.SAMPLE_SENTENCES)
    source = f"{name}'s training data"
    if getattr(data, "input_path", ""):
      source += f" ({data.input_path})"
    unk_rate.check(task_config.tokenization, sentences, source)


def seed_run(task_config) -> None:
  """`task.seed` (when set) seeds Python's, NumPy's and TensorFlow's
  generators, before the model is built: the encoder's and heads'
  initialisation and the dropout masks follow it; `task_lib.seeded_data`
  makes it the data seed of every objective that has none."""
  if task_config.seed is not None:
    tf_keras.utils.set_random_seed(task_config.seed)


def make_strategy(params):
  """The runtime's strategy; a clear error when no TPU answers `--tpu`."""
  runtime = params.runtime
  try:
    return distribute_utils.get_distribution_strategy(
        distribution_strategy=runtime.distribution_strategy,
        all_reduce_alg=runtime.all_reduce_alg,
        num_gpus=runtime.num_gpus,
        tpu_address=runtime.tpu)
  except (ValueError, tf.errors.OpError) as error:
    if runtime.distribution_strategy != "tpu":
      raise
    raise ValueError(f"No TPU found for --tpu={runtime.tpu!r} "
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
      return checkpoints.save_at_interval_multiples(
          fault_tolerance.guard_disk_full_saves(
              super()._maybe_build_checkpoint_manager()))
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
    latest = tf.train.latest_checkpoint(self._restore_dir)
    if latest is None:
      return super().restore_or_initialize()
    self.checkpoint.restore(latest)
    self._last_checkpoint_step = int(self._step_counter.numpy())
    return latest


@dataclasses.dataclass
class TrainResult:
  model: tf_keras.Model
  trainer: SentenceEncoderTrainer
  progress: Optional[ProgressReporter]
  best: Optional[best_checkpoint.BestCheckpointSelector] = None


def run(params, model_dir: str, mode: str = "train", strategy=None,
        best_checkpoint_scorer: Optional[best_checkpoint.Scorer] = None
        ) -> TrainResult:
  """Trains (and/or evaluates) `params` in `model_dir`.

  `params` is an experiment config, checked here by `prepare`, or a
  `PreparedRun` already checked. Training takes `model_dir`'s lock
  (`run_lock`; the chief only) before writing anything.

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
    fault_tolerance.CheckpointSaveError: the disk was full during a save;
      its temporary files were removed.
  """
  if not model_dir:
    raise ValueError("--model_dir is required: checkpoints and summaries go "
                     "there, and a run resumes from it.")
  if isinstance(params, PreparedRun):
    prepared, params, mode = params, params.params, params.mode
  else:
    prepared = None
  with contextlib.ExitStack() as stack:
    stack.enter_context(mixed_precision(params.runtime.mixed_precision_dtype))
    # The strategy comes first: a multi-worker one must be made before any
    # TensorFlow op runs, and `prepare` tokenizes text.
    strategy = strategy or make_strategy(params)
    prepared = prepared or prepare(params, mode)
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
      task = task_factory.get_task(params.task, logging_dir=model_dir,
                                   objectives=prepared.objectives)
      trainer = train_utils.create_trainer(
          params, task, train="train" in mode, evaluate="eval" in mode,
          trainer_cls=SentenceEncoderTrainer)
    if chief:
      train_utils.serialize_config(params, model_dir)
    progress = best = None
    actions = []
    if "train" in mode:
      progress = ProgressReporter(params.trainer.train_steps,
                                  trainer.global_step)
      actions.append(progress)
    if selecting and chief:
      best = best_checkpoint.BestCheckpointSelector(
          trainer.model, params, model_dir, best_checkpoint_scorer,
          trainer.global_step)
      actions.append(best)
    with fault_tolerance.TerminationSignal() as termination:
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
