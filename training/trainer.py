"""Model Garden's trainer, with throughput, XLA on any device and fault guards.

`SentenceEncoderTrainer` is `base_trainer.Trainer` whose step is, in order:
the task's `train_step` (forward and backward pass of one replica, returning
the loss and gradients), the non-finite guard, the optimizer update, then
each objective's `after_update` hook. Beside that step it adds:
  * `examples_per_second` (global batch x steps / wall time of the loop) in
    each loop's logs, which orbit writes to TensorBoard;
  * `runtime.enable_xla` honoured on CPUs too (Model Garden compiles only on
    GPUs): the forward and backward pass of the task's own `train_step` runs
    under `tf.function(jit_compile=True)`;
  * the non-finite guard: a step whose loss or gradient is not finite (on
    any replica) updates nothing and runs no objective's `after_update`
    hook; at the end of the loop training stops with
    `NonFiniteTrainingError` naming the step, before any checkpoint is saved,
    or, with `task.skip_non_finite_batches`, the step is skipped and counted
    (`skipped_batches` in the logs);
  * every model variable, and the optimizer's slots for them, made before
    a checkpoint is restored (see `_build_model_variables`): the step is
    then traced once, not a second time after its first call made the
    slots;
  * the input position in the checkpoint: with one replica in all (CPU, one
    GPU), the trainer iterates the task's `tf.data` dataset itself and saves
    the iterator with the model (`train_data_iterator`), so a resumed run
    continues the data stream where the checkpoint was taken.
    `tf.distribute` iterators (several replicas or workers, TPUs) cannot be
    saved; those runs restart their input pipelines;
  * a stop between two steps: in one process (not on TPUs) a loop is a
    Python loop over the compiled step, which checks `preemption` (a
    `fault_tolerance.PreemptionCheckpoint`, set by the runner) before each
    step; after SIGTERM or SIGINT it ends the loop and saves and stops at
    once. On TPUs (one compiled loop) and across workers (who must agree
    first) the stop comes at the end of the loop.

The global step counts batches, skipped ones included; the optimizer's
`iterations` counts updates.
"""
import time

from absl import logging
import tensorflow as tf

from cmlm.training import fault_tolerance
from official.core import base_trainer
from orbit.utils import loop_fns


def apply_update(model, optimizer, gradients) -> None:
  """The update after a finite step: the optimizer applies `gradients` to
  `model.trainable_variables`, then each objective's `after_update` hook
  runs (momentum copies, queues)."""
  optimizer.apply_gradients(zip(gradients, model.trainable_variables))
  after_update = getattr(model, "after_update", None)
  if after_update is not None:
    after_update()


def build_optimizer_variables(optimizer, variables) -> None:
  """Makes `optimizer`'s slots for `variables` and its hyperparameters now.

  Otherwise the first `apply_gradients`, inside the traced train step, makes
  them, and `tf.function` traces the step again without variable creation:
  about a second of every run's start on a CPU. Model Garden's optimizers are
  Keras 2's (`OptimizerV2`, wrapped by a `LossScaleOptimizer` under mixed
  precision, which makes them for its inner one); the newer Keras 2
  optimizer has `build`.
  """
  if hasattr(optimizer, "_create_all_weights"):  # OptimizerV2
    optimizer._create_all_weights(variables)  # pylint: disable=protected-access
  elif hasattr(optimizer, "build"):
    optimizer.build(variables)


def _skips_non_finite(config) -> bool:
  return bool(getattr(config.task, "skip_non_finite_batches", False))


class SentenceEncoderTrainer(base_trainer.Trainer):
  """`base_trainer.Trainer` + examples/s, XLA, non-finite guard, input state."""

  first_step_of_run = None  # the step this process started (or resumed) at
  skipped_batches = 0  # batches skipped as non-finite by this process
  # A `fault_tolerance.PreemptionCheckpoint`: checked between steps (see the
  # module docstring).
  preemption = None

  def __init__(self, config, task, model, optimizer, train=True,
               evaluate=True, train_dataset=None, validation_dataset=None,
               checkpoint_exporter=None):
    strategy = tf.distribute.get_strategy()
    self._is_tpu = isinstance(strategy, tf.distribute.TPUStrategy)
    self.jit_compile = config.runtime.enable_xla and not self._is_tpu
    if self.jit_compile and strategy.num_replicas_in_sync > 1 and all(
        "CPU" in d.upper() for d in strategy.extended.worker_devices):
      raise ValueError(
          "runtime.enable_xla: XLA cannot compile one step for several CPU "
          "devices of one process; use one_device (or GPUs) with XLA.")
    if self._is_tpu and _skips_non_finite(config):
      raise ValueError("task.skip_non_finite_batches is not supported on "
                       "TPUs; leave it false to stop at a non-finite step.")
    self._input_in_checkpoint = (train and train_dataset is None and
                                 strategy.num_replicas_in_sync == 1 and
                                 not self._is_tpu)
    if self._input_in_checkpoint:
      # Stateful random ops (unseeded masking) are left out of the saved
      # state; seeded pipelines draw from the batch index and resume exactly.
      options = tf.data.Options()
      options.experimental_external_state_policy = (
          tf.data.experimental.ExternalStatePolicy.IGNORE)
      train_dataset = task.build_inputs(
          config.task.train_data).with_options(options)
    super().__init__(config, task, model, optimizer, train=train,
                     evaluate=evaluate, train_dataset=train_dataset,
                     validation_dataset=validation_dataset,
                     checkpoint_exporter=checkpoint_exporter)
    self._forward_backward = (
        tf.function(self._forward_backward_step, jit_compile=True,
                    autograph=False)
        if self.jit_compile else self._forward_backward_step)
    self._build_model_variables(train)
    self._non_finite_steps = tf.Variable(0, dtype=tf.int64, trainable=False)
    self._first_non_finite_step = tf.Variable(-1, dtype=tf.int64,
                                              trainable=False)
    if self._input_in_checkpoint:
      # orbit iterates `self._train_iter`; made now, it is restored with the
      # model and continues where the checkpoint was taken.
      self._train_iter = iter(self.train_dataset)
      self.checkpoint.train_data_iterator = self._train_iter

  def _build_model_variables(self, train: bool):
    """Calls the model once on zeros shaped like a batch of its data.

    Every variable then exists before orbit restores a checkpoint (or the
    task loads `init_checkpoint`) into the model: a layer that made its
    variables at its first call, inside the train step, would otherwise
    start from fresh random values (`ProjectionHead` builds its MLPs so).
    """
    dataset = self.train_dataset if train else getattr(self, "eval_dataset",
                                                         None)
    if dataset is None:
      return
    spec = dataset.element_spec
    if isinstance(spec, tuple) and len(spec) == 2:
      spec = spec[0]  # (features, labels)
    def zeros(spec):
      spec = getattr(spec, "_value_specs", [spec])[0]  # PerReplicaSpec
      return tf.zeros([1 if d is None else d for d in spec.shape], spec.dtype)
    self.model(tf.nest.map_structure(zeros, spec), training=False)
    if train:
      build_optimizer_variables(self.optimizer,
                                self.model.trainable_variables)

  @property
  def stops_between_steps(self) -> bool:
    """Whether a stop signal ends the loop after the current step (one
    process, not a TPU); else at the end of the loop."""
    return (not self._is_tpu and
            fault_tolerance.num_workers(self.strategy) == 1)

  def create_train_loop_fn(self):
    """orbit's loop, or where a stop may come between steps, a Python loop
    over the compiled step that ends early once `preemption` is requested."""
    if not self.stops_between_steps:
      return super().create_train_loop_fn()
    # Without AutoGraph: the step's control flow is written in TensorFlow
    # ops (`tf.cond`, `tf.where`), and converting the model's and Model
    # Garden's Python source would cost seconds of each training process.
    step = tf.function(self.train_step, autograph=False)
    self.traced_step = step  # its tracing count is tested

    def loop(iterator, num_steps):
      try:
        for _ in range(int(num_steps)):
          if self.preemption is not None and self.preemption.requested:
            return
          step(iterator)
      except (StopIteration, tf.errors.OutOfRangeError):
        logging.info("The training data ended before the loop did.")
    return loop

  def create_eval_loop_fn(self, has_state: bool):
    """orbit's eval loop, its step traced without AutoGraph as the train
    step is (orbit's `tf.while_loop` form, when configured, is kept)."""
    if (self._eval_options.use_tf_while_loop or
        not self._eval_options.use_tf_function):
      return super().create_eval_loop_fn(has_state)
    return loop_fns.create_loop_fn(tf.function(self.eval_step,
                                               autograph=False))

  def train(self, num_steps):
    logs = super().train(num_steps)
    if (self.preemption is not None and self.preemption.requested and
        self.stops_between_steps):
      self.preemption(logs)  # saves a checkpoint, raises TrainingPreempted
    return logs

  @property
  def input_in_checkpoint(self) -> bool:
    """Whether checkpoints hold the position of the training input."""
    return self._input_in_checkpoint

  def train_loop_begin(self):
    super().train_loop_begin()
    self._loop_start = (time.perf_counter(), int(self.global_step.numpy()))
    if self.first_step_of_run is None:
      self.first_step_of_run = self._loop_start[1]
    self._non_finite_steps.assign(0)
    self._first_non_finite_step.assign(-1)

  def train_loop_end(self):
    logs = super().train_loop_end()
    count = int(self._non_finite_steps.numpy())
    if count and not _skips_non_finite(self.config):
      raise fault_tolerance.NonFiniteTrainingError(
          int(self._first_non_finite_step.numpy()), count)
    if count:
      logging.warning("Skipped %d batch(es) with a non-finite loss or "
                      "gradient, the first at step %d.", count,
                      int(self._first_non_finite_step.numpy()))
    logs["skipped_batches"] = count
    self.skipped_batches += count
    start_time, start_step = self._loop_start
    elapsed = time.perf_counter() - start_time
    steps = int(self.global_step.numpy()) - start_step
    batch = getattr(self.task, "examples_per_step",
                    self.config.task.train_data.global_batch_size)
    if elapsed > 0:
      logs["examples_per_second"] = steps * batch / elapsed
    return logs

  def _forward_backward_step(self, inputs):
    """The task's train step: (loss, gradients) of one replica."""
    return self.task.train_step(inputs, model=self.model,
                                optimizer=self.optimizer,
                                metrics=self.train_metrics)

  def _apply(self, gradients):
    """`apply_update` in the finite branch: a skipped non-finite batch runs
    neither the update nor the hooks."""
    apply_update(self.model, self.optimizer, gradients)

  def _check_and_log(self, loss, gradients):
    # A LossScaleOptimizer skips non-finite gradients itself, lowering its
    # scale (float16); only the (float32) loss is checked then.
    checked = (() if hasattr(self.optimizer, "get_unscaled_gradients")
               else gradients)
    finite = fault_tolerance.all_replicas_finite(loss, checked)
    self._train_loss.update_state(tf.where(finite, loss, 0.0),
                                  sample_weight=tf.cast(finite, tf.float32))
    return finite

  def train_step(self, iterator):
    """One batch; the update is applied only when loss and gradients are finite.

    Off TPUs the update runs in a second `strategy.run`, under a `tf.cond`
    in cross-replica context (an update inside replica-context control flow
    is not allowed by MirroredStrategy). On TPUs the step is Model Garden's,
    applied unconditionally and checked at the end of the loop.
    """
    strategy = self.strategy

    def guarded_step(inputs):
      loss, gradients = self._forward_backward(inputs)
      finite = self._check_and_log(loss, gradients)
      if self._is_tpu:
        self._apply(gradients)
        return finite
      return finite, gradients

    inputs = self.next_train_inputs(iterator)
    outputs = strategy.run(guarded_step, args=(inputs,),
                           options=self._runtime_options)
    finite = outputs if self._is_tpu else outputs[0]
    finite = strategy.experimental_local_results(finite)[0]
    if not self._is_tpu:
      tf.cond(finite,
              lambda: strategy.run(self._apply, args=(outputs[1],)),
              lambda: None)
    step = self.global_step + 1
    self._non_finite_steps.assign_add(tf.cast(tf.logical_not(finite),
                                              tf.int64))
    self._first_non_finite_step.assign(tf.where(
        tf.logical_and(tf.logical_not(finite),
                       self._first_non_finite_step < 0),
        step, self._first_non_finite_step))
    self.global_step.assign_add(1)
