"""One sentence-encoder task: a shared encoder and weighted objectives.

`SentenceEncoderTaskConfig` = the encoder (`model`), the run's one
tokenization (`tokenization`) and a mapping of named objectives
(`objectives`, see `objectives/base.py`), each with a weight. The task's
`train_step` is one replica's forward and backward pass: the model runs
every objective's forward pass on its features, `build_losses` returns

    L = sum_k weight_k * L_k

and the step returns L and its gradients; the trainer (training/trainer.py)
applies them behind its non-finite guard, then runs each objective's
`after_update` hook.

Paper section 4.2's L = L_cmlm + alpha * L_br is the case {cmlm: 1,
bitext_retrieval: 0.2}. Batches are dicts nested by objective name
(`{"cmlm": {...}, "bitext_retrieval": {...}}`), model outputs likewise.

Checkpoints name their parts (`SentenceEncoderModel.checkpoint_items`):
`encoder`, `<name>_head` for each objective with a head, `<name>_state` for
each with state. Export, eval and pcr restore the encoder alone (and export
`--mlm` the CMLM head); a later stage restores whichever items it shares with
the checkpoint it starts from.
"""
import dataclasses
from typing import Dict, List, Optional

from absl import logging
import tensorflow as tf
import tf_keras

import cmlm.objectives as objectives_lib  # noqa: F401  (registers the objectives)
from cmlm.data_pipelines import tokenization as tokenization_lib
from cmlm.data_pipelines import vocabulary
from cmlm.training import checkpoints
from cmlm.modeling import model_builder
from cmlm.modeling.siamese_encoder import SiameseEncoder
from cmlm.objectives import base as objective_base
from official.core import base_task
from official.core import config_definitions as cfg
from official.core import task_factory


def without_autotuning_model(dataset: tf.data.Dataset) -> tf.data.Dataset:
  """`dataset` with tf.data's autotuning model off
  (`tf.data.Options().autotune.enabled = False`).

  The model runs a thread beside each iterator that sleeps between its
  optimisations, a period that doubles up to a minute while the iterator
  lives. Releasing the iterator waits for that sleep to end, and the
  release happens in Python's garbage collector, holding the GIL: a process
  that trains and then goes on (the demo, the Python API, a test session)
  stopped dead for up to a minute at a random later moment, when the
  finished run's input iterator was collected. Without the model, the
  pipelines' AUTOTUNE values take tf.data's defaults: maps and interleaves
  run as many calls at once as there are cores (at most 16), and prefetch
  buffers grow while the step waits for them.
  """
  options = tf.data.Options()
  options.autotune.enabled = False
  return dataset.with_options(options)


@dataclasses.dataclass
class SentenceEncoderTaskConfig(cfg.TaskConfig):
  """The encoder, its tokenization and the weighted objectives of a run.

  `train_data` / `validation_data` only say which split a dataset is for
  (Model Garden's trainer passes them to `build_inputs`); each objective's
  own data, batch size included, is under `task.objectives.<name>`.
  `skip_non_finite_batches`: a step whose loss or gradient is not finite is
  skipped and counted, instead of stopping training (training/trainer.py).
  `seed`: one seed for everything random in a run (None: unseeded). Before
  the model is built, `training.train.run` seeds Python's, NumPy's and
  TensorFlow's generators with it (`tf_keras.utils.set_random_seed`), which
  fixes the initialisation of the encoder and of every objective's head and
  the stream of dropout masks; and it is the data seed (order, masks) of
  every objective whose `train_data.seed` is unset. Two runs with the same
  seed and config start from the same weights and read the same batches; two
  arms of an experiment that differ only in an objective get the same
  encoder initialisation and data order (`seeded_data`). A resumed run
  reads the same batches (seeded pipelines follow the batch index) but draws
  its dropout masks afresh from the seed.
  """
  model: model_builder.SiameseEncoderConfig = dataclasses.field(
      default_factory=model_builder.SiameseEncoderConfig)
  tokenization: tokenization_lib.TokenizationConfig = dataclasses.field(
      default_factory=tokenization_lib.TokenizationConfig)
  objectives: objective_base.ObjectivesConfig = dataclasses.field(
      default_factory=objective_base.ObjectivesConfig)
  train_data: cfg.DataConfig = dataclasses.field(
      default_factory=lambda: cfg.DataConfig(is_training=True))
  validation_data: cfg.DataConfig = dataclasses.field(
      default_factory=lambda: cfg.DataConfig(is_training=False))
  skip_non_finite_batches: bool = False
  seed: Optional[int] = None

  def active_objectives(self) -> Dict[str, objective_base.ObjectiveConfig]:
    """{name: config} of the objectives with a weight above 0."""
    return {name: getattr(self.objectives, name)
            for name in self.objectives.names()
            if getattr(self.objectives, name).weight > 0}


def seeded_data(data_config, seed: Optional[int]):
  """`data_config`, with `seed` as its seed when it has none (`task.seed`)."""
  if seed is None or getattr(data_config, "seed", 0) is not None:
    return data_config
  return data_config.replace(seed=seed)


def build_objectives(config: SentenceEncoderTaskConfig,
                     vocab: Optional[vocabulary.VocabularyFile] = None
                     ) -> Dict[str, objective_base.Objective]:
  """The `Objective` of each active entry of `config.objectives` (`vocab`:
  `config.tokenization.vocab_file` as the run read it, for their checks and
  tokenizers)."""
  names = config.objectives.names()
  for name in names:
    weight = getattr(config.objectives, name).weight
    if weight < 0:
      raise ValueError(f"task.objectives.{name}.weight must be >= 0, got "
                       f"{weight}.")
  active = config.active_objectives()
  if not active:
    raise ValueError("task.objectives has no objective with a weight above 0 "
                     f"(given: {', '.join(names) or 'none'}): nothing to "
                     "train.")
  return {name: objective_base.objective_class(objective.type)(
      name, objective, config.model, config.tokenization, vocab=vocab)
          for name, objective in active.items()}


class SentenceEncoderModel(tf_keras.Model):
  """The shared `SiameseEncoder`, each objective's head and state.

  `call` runs each objective whose features the batch carries; outputs are
  nested by objective name.
  """

  def __init__(self, encoder: SiameseEncoder,
               objectives: Dict[str, objective_base.Objective], **kwargs):
    super().__init__(**kwargs)
    self.encoder = encoder
    self._objective_list = list(objectives.values())  # not checkpointed
    self.heads = {}
    self.states = {}
    for name, objective in objectives.items():
      head = objective.build_head(encoder)
      if head is not None:
        self.heads[name] = head
    for name, objective in objectives.items():
      state = objective.build_state(encoder, self.heads.get(name))
      if state is not None:
        self.states[name] = state

  @property
  def objectives(self) -> Dict[str, objective_base.Objective]:
    return {objective.name: objective for objective in self._objective_list}

  def call(self, features, training=None):
    outputs = {}
    for name, objective in self.objectives.items():
      if name in features:
        outputs[name] = objective.call(
            self.encoder, self.heads.get(name), self.states.get(name),
            features[name], training=training)
    return outputs

  def after_update(self) -> None:
    """Each objective's hook after an optimizer update (replica context)."""
    for name, objective in self.objectives.items():
      objective.after_update(self.encoder, self.heads.get(name),
                             self.states.get(name))

  @property
  def checkpoint_items(self):
    """The parts of a checkpoint, by name (beside `model=` itself)."""
    items = dict(encoder=self.encoder)
    items.update({f"{name}_head": head for name, head in self.heads.items()})
    items.update({f"{name}_state": state
                  for name, state in self.states.items()})
    return items


@task_factory.register_task_cls(SentenceEncoderTaskConfig)
class SentenceEncoderTask(base_task.Task):
  """Weighted objectives over one sentence encoder, one train step."""

  def __init__(self, params: SentenceEncoderTaskConfig, logging_dir=None,
               name=None,
               objectives: Optional[Dict[str, objective_base.Objective]] = None,
               init_checkpoint: Optional[str] = None):
    """`objectives`: the run's, built once
    (`training.prepared_run.prepare`); built from `params` when not given
    (Model Garden's `task_factory`). `init_checkpoint`: `task.init_checkpoint`
    as `prepare` resolved it; resolved when the run starts when not given
    (`task_factory`, a stage starting from the one before it)."""
    super().__init__(params, logging_dir=logging_dir, name=name)
    self.objectives = (objectives if objectives is not None
                       else build_objectives(params))
    self._init_checkpoint = init_checkpoint

  @property
  def examples_per_step(self) -> int:
    """Examples in one global training batch, over all objectives."""
    return sum(objective.config.train_data.global_batch_size
               for objective in self.objectives.values())

  def build_model(self) -> SentenceEncoderModel:
    config = self.task_config
    encoder = model_builder.build_siamese_encoder(
        config.model, seq_length=config.tokenization.seq_length)
    return SentenceEncoderModel(encoder, self.objectives,
                                name="sentence_encoder_model")

  def build_inputs(self, params: cfg.DataConfig, input_context=None):
    """Batches of every objective's features, nested by objective name.

    `params` says the split: training batches hold every objective's
    training data; validation batches every objective that has validation
    data.
    """
    datasets = {}
    for name, objective in self.objectives.items():
      data = (seeded_data(objective.config.train_data, self.task_config.seed)
              if params.is_training else objective.config.validation_data)
      if params.is_training or objective_base.has_data(data):
        datasets[name] = objective.build_inputs(data, input_context)
    if not datasets:
      raise ValueError("No objective of task.objectives has validation data "
                       "(validation_data.input_path); nothing to evaluate.")
    return without_autotuning_model(tf.data.Dataset.zip(datasets))

  def train_step(self, inputs, model: SentenceEncoderModel,
                 optimizer: tf_keras.optimizers.Optimizer, metrics=None):
    """One replica's forward and backward pass; applies nothing.

    Returns:
      (loss, gradients): the replica's loss L (`build_losses`) and the
      gradients of L / num_replicas with respect to
      `model.trainable_variables` (replicas' gradients add up, as in Model
      Garden's step; a `LossScaleOptimizer`'s scale is applied to the loss
      and taken out of the gradients). `metrics` are updated.
    """
    with tf.GradientTape() as tape:
      outputs = model(inputs, training=True)
      loss = self.build_losses(labels=inputs, model_outputs=outputs,
                               aux_losses=model.losses)
      scaled_loss = loss / tf.distribute.get_strategy().num_replicas_in_sync
      scaled = isinstance(optimizer,
                          tf_keras.mixed_precision.LossScaleOptimizer)
      if scaled:
        scaled_loss = optimizer.get_scaled_loss(scaled_loss)
    gradients = tape.gradient(scaled_loss, model.trainable_variables)
    if scaled:
      gradients = optimizer.get_unscaled_gradients(gradients)
    if metrics:
      self.process_metrics(metrics, inputs, outputs)
    return loss, gradients

  def build_losses(self, labels, model_outputs, aux_losses=None) -> tf.Tensor:
    """sum_k weight_k * L_k over the objectives in `model_outputs`."""
    self._objective_losses = {}
    loss = tf.constant(0.0)
    for name, objective in self.objectives.items():
      if name not in model_outputs:
        continue
      value = objective.compute_loss(labels[name], model_outputs[name])
      self._objective_losses[name] = value
      loss += objective.config.weight * value
    if aux_losses:
      loss += tf.add_n(aux_losses)
    return loss

  def build_metrics(self, training=None):
    """Each objective's metrics as `<name>/<metric>`, and `<name>/loss`."""
    del training
    metrics = []
    for name, objective in self.objectives.items():
      metrics.append(tf_keras.metrics.Mean(name=f"{name}/loss"))
      for metric in objective.build_metrics():
        metric._name = f"{name}/{metric.name}"  # pylint: disable=protected-access
        metrics.append(metric)
    return metrics

  def process_metrics(self, metrics: List[tf_keras.metrics.Metric], labels,
                      model_outputs):
    by_objective = {}
    for metric in metrics:
      name, _, short = metric.name.partition("/")
      by_objective.setdefault(name, {})[short] = metric
    losses = getattr(self, "_objective_losses", {})
    for name, objective in self.objectives.items():
      if name not in model_outputs:
        continue
      own = by_objective.get(name, {})
      if "loss" in own:
        value = losses.get(name)
        if value is None:  # validation: build_losses did not run
          value = objective.compute_loss(labels[name], model_outputs[name])
        own["loss"].update_state(value)
      objective.update_metrics(own, labels[name], model_outputs[name])

  def validation_step(self, inputs, model: tf_keras.Model, metrics=None):
    self._objective_losses = {}
    return super().validation_step(inputs, model, metrics)

  def initialize(self, model: SentenceEncoderModel):
    """Starts from `task.init_checkpoint`: its encoder, and each head or
    state of ours that it also holds (by checkpoint item name); then each
    objective's `after_initialize` hook. Runs only when a run starts fresh."""
    path = self.task_config.init_checkpoint
    if path:
      restore_items(model, self._init_checkpoint or checkpoints.resolve(path),
                    required=("encoder",))
    for name, objective in model.objectives.items():
      objective.after_initialize(model.encoder, model.heads.get(name),
                                 model.states.get(name))


def restore_items(model: SentenceEncoderModel, checkpoint_path: str,
                  required=("encoder",)) -> List[str]:
  """Restores the named items of `model` that `checkpoint_path` holds.

  Every item in `required` must be there; every variable of a restored item
  must be found (`assert_existing_objects_matched`), but for the encoder's
  parts that the checkpoint lacks, which start fresh
  (`checkpoints.encoder_view`). Returns the names of the restored items.
  """
  available = checkpoints.item_names(checkpoint_path)
  missing = [name for name in required if name not in available]
  if missing:
    raise ValueError(f"The checkpoint {checkpoint_path} has no "
                     f"{', '.join(missing)} item (it holds "
                     f"{', '.join(sorted(available)) or 'nothing'}).")
  items = {name: item for name, item in model.checkpoint_items.items()
           if name in available}
  if checkpoints.ENCODER in items:
    items[checkpoints.ENCODER], fresh = checkpoints.encoder_view(
        model.encoder, checkpoint_path, allow_fresh=True)
    for part in fresh:
      print(f"The encoder's {part} starts fresh: {checkpoint_path} has "
            "none.", flush=True)
  checkpoints.read_partial(tf.train.Checkpoint(**items), checkpoint_path
                           ).assert_existing_objects_matched()
  logging.info("Restored %s from %s.", ", ".join(sorted(items)),
               checkpoint_path)
  print(f"Started from {checkpoint_path}: {', '.join(sorted(items))}.",
        flush=True)
  return sorted(items)


def check_vocab_matches_encoder(
    vocab_file: str, vocab_size: int,
    vocab: Optional[vocabulary.VocabularyFile] = None):
  """Fails early when the vocabulary file and the embedding table disagree
  (`vocab`: the file, already read)."""
  if not vocab_file:
    return
  size = len(vocabulary.read_vocabulary(vocab_file, vocab).tokens)
  if size != vocab_size:
    raise ValueError(
        f"The vocabulary {vocab_file} has {size} tokens but "
        f"task.model.encoder.vocab_size is {vocab_size}; make them equal.")
  logging.info("Vocabulary %s: %d tokens.", vocab_file, size)
