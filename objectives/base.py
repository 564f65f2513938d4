"""The objective seam: a training objective is one module behind one class.

An objective declares, side by side (keras-hub's task + preprocessor habit):
  * its config (an `ObjectiveConfig` subclass, `with_data(its data class)`:
    `weight`, its `train_data` and optional `validation_data`, its own
    hyperparameters);
  * its input pipeline (`build_inputs`): un-prefixed features; the task nests
    them under the objective's name, so objectives never collide;
  * its head (`build_head`, or None), checkpointed as `<name>_head`;
  * its state (`build_state`, or None): non-trainable objective state such as
    a queue or a momentum copy, checkpointed as `<name>_state`;
  * its forward pass over the shared encoder (`call`);
  * its loss (`compute_loss`), which calls a plain function of `modeling/`;
  * its metrics (`build_metrics`, `update_metrics`);
  * an optional hook after each optimizer update (`after_update`), run by the
    trainer inside the same "finite update" branch as the update itself and
    skipped with it when a non-finite batch is skipped.

`SentenceEncoderTask` (training/task.py) sums `weight * loss` over the
objectives of `task.objectives` in Model Garden's one train step. Objectives
register with `register_objective("kind")`; `objectives/__init__.py` imports
every objective module, the one list there is.
"""
import copy
import dataclasses
import functools
from typing import Callable, Dict, List, Optional, Type

import tensorflow as tf
import tf_keras

from cmlm.data_pipelines.tokenization import TokenizationConfig
from cmlm.data_pipelines.vocabulary import VocabularyFile
from cmlm.modeling import losses
from cmlm.modeling.model_builder import SiameseEncoderConfig
from cmlm.modeling.siamese_encoder import SiameseEncoder
from official.core import config_definitions as cfg
from official.modeling.hyperparams import base_config

_REGISTRY: Dict[str, Type["Objective"]] = {}


@dataclasses.dataclass
class ObjectiveConfig(base_config.Config):
  """What every objective's config has.

  Attributes:
    type: the registered kind of objective ("cmlm", "bitext_retrieval",
      "nli", ...); the key under `task.objectives` is its name in the run.
    weight: its weight in the total loss; 0 leaves it out of the run.
    train_data: its training data (each objective has its own data class:
      its config subclasses `with_data(data class)`).
    validation_data: its held-out data; no input_path means none.

  Examples:
    A config subclass per objective, its data and hyperparameters beside
    the common fields:

    >>> @dataclasses.dataclass
    ... class MyObjectiveConfig(ObjectiveConfig):
    ...   type: str = "my_objective"
    ...   temperature: float = 0.05
    >>> MyObjectiveConfig(weight=0.5).as_dict()["temperature"]
    0.05
  """
  type: str = ""
  weight: float = 1.0
  train_data: cfg.DataConfig = dataclasses.field(
      default_factory=cfg.DataConfig)
  validation_data: cfg.DataConfig = dataclasses.field(
      default_factory=cfg.DataConfig)


@functools.lru_cache(maxsize=None)
def with_data(data_config_cls: Type[cfg.DataConfig]) -> Type[ObjectiveConfig]:
  """The `ObjectiveConfig` whose `train_data` and `validation_data` are each
  a `data_config_cls` (its defaults): the base of an objective's config,
  which adds its `type` and hyperparameters. One class per data class.

  Examples:
    >>> @dataclasses.dataclass
    ... class MyObjectiveConfig(with_data(cfg.DataConfig)):
    ...   type: str = "my_objective"
    ...   temperature: float = 0.05
    >>> config = MyObjectiveConfig()
    >>> type(config.validation_data).__name__, config.temperature
    ('DataConfig', 0.05)
  """
  @dataclasses.dataclass
  class DataObjectiveConfig(ObjectiveConfig):
    train_data: data_config_cls = dataclasses.field(
        default_factory=data_config_cls)
    validation_data: data_config_cls = dataclasses.field(
        default_factory=data_config_cls)

  DataObjectiveConfig.__name__ = DataObjectiveConfig.__qualname__ = (
      f"ObjectiveConfig[{data_config_cls.__name__}]")
  return DataObjectiveConfig


def has_data(data: cfg.DataConfig) -> bool:
  """Whether a data config names any data."""
  return bool(getattr(data, "input_path", "") or
              getattr(data, "tfds_name", ""))


class Objective:
  """One training objective over the shared `SiameseEncoder`.

  Subclasses set `config_cls` and implement `build_inputs`, `call` and
  `compute_loss`; the rest has defaults (no head, no state, no metrics,
  nothing after an update).

  Attributes:
    name: the objective's key in `task.objectives` (its features, outputs,
      metrics and checkpoint items are named by it).
    config: its `ObjectiveConfig`.
    model_config: the run's `SiameseEncoderConfig`.
    tokenization: the run's `TokenizationConfig`.
    vocab: its vocabulary file as the run read it once
      (`training.prepared_run.prepare`), for the objective's checks and
      tokenizers; None: they read `tokenization.vocab_file` themselves.

  Examples:
    An objective that pulls two dropout views of a sentence together
    (the full pattern: docs/architecture.md, "Adding an objective"):

    >>> @register_objective("my_objective")
    ... class MyObjective(Objective):
    ...   config_cls = MyObjectiveConfig
    ...   def build_inputs(self, data_config, input_context=None):
    ...     return my_sentence_dataset(data_config, self.tokenization,
    ...                                self.vocab)
    ...   def call(self, encoder, head, state, features, training=None):
    ...     return {"a": encoder(features, training=training)["default"],
    ...             "b": encoder(features, training=training)["default"]}
    ...   def compute_loss(self, features, outputs):
    ...     return my_contrastive_loss(outputs["a"], outputs["b"],
    ...                                self.config.temperature)

    It then trains beside the others from the command line:
    `--params_override=task.objectives.my_objective.weight=0.5`.
  """
  config_cls: Type[ObjectiveConfig] = ObjectiveConfig

  def __init__(self, name: str, config: ObjectiveConfig,
               model_config: SiameseEncoderConfig,
               tokenization: TokenizationConfig,
               vocab: Optional[VocabularyFile] = None):
    self.name = name
    self.config = config
    self.model_config = model_config
    self.tokenization = tokenization
    self.vocab = vocab

  # Data.
  def validate(self, mode: str) -> None:
    """Checks the data `mode` ("train", "eval", "train_and_eval", ...) reads
    with `check_data`: the training data when training, the validation data
    when evaluating and there is some."""
    if "train" in mode:
      self._check_data_at("train_data")
    if "eval" in mode and has_data(self.config.validation_data):
      self._check_data_at("validation_data")

  def _check_data_at(self, field: str) -> None:
    """`check_data` of `self.config.<field>`; an error its data config class
    names ("CmlmDataConfig: ...") names where in the experiment instead, as
    `--params_override` takes it (a task may hold several such configs)."""
    data_config = getattr(self.config, field)
    try:
      self.check_data(data_config)
    except ValueError as e:
      prefix = f"{type(data_config).__name__}: "
      if type(e) is not ValueError or not str(e).startswith(prefix):  # pylint: disable=unidiomatic-typecheck
        raise
      raise ValueError(f"task.objectives.{self.name}.{field} "
                       f"({type(data_config).__name__}): "
                       f"{str(e)[len(prefix):]}") from None

  def check_data(self, data_config: cfg.DataConfig) -> None:
    """One clear ValueError per problem of `data_config`, before a run
    starts and before any data is read."""
    del data_config

  def build_inputs(self, data_config: cfg.DataConfig,
                   input_context: Optional[tf.distribute.InputContext] = None
                   ) -> tf.data.Dataset:
    """Batches of this objective's features (un-prefixed dict)."""
    raise NotImplementedError

  def text_sample(self, data_config: cfg.DataConfig,
                  max_sentences: int) -> List[str]:
    """Up to `max_sentences` sentences of `data_config`'s text, read cheaply
    (the first ones), for the tokenizer check before training
    (`data_pipelines.unk_rate`); [] when there is no text to sample."""
    del data_config, max_sentences
    return []

  # Model.
  def build_head(self, encoder: SiameseEncoder
                 ) -> Optional[tf_keras.layers.Layer]:
    """The objective's trainable head on top of `encoder`, or None."""
    del encoder
    return None

  def build_state(self, encoder: SiameseEncoder,
                  head: Optional[tf_keras.layers.Layer]
                  ) -> Optional[tf.Module]:
    """Non-trainable objective state (queues, momentum copies), or None."""
    del encoder, head
    return None

  def call(self, encoder: SiameseEncoder, head, state, features,
           training=None) -> Dict[str, tf.Tensor]:
    """The forward pass: this objective's outputs for its features."""
    raise NotImplementedError

  # Loss and metrics.
  def compute_loss(self, features, outputs) -> tf.Tensor:
    """This objective's scalar loss (unweighted), per replica as Model
    Garden's step expects: replicas' losses add up over the global batch."""
    raise NotImplementedError

  def build_metrics(self) -> List[tf_keras.metrics.Metric]:
    return []

  def update_metrics(self, metrics: Dict[str, tf_keras.metrics.Metric],
                     features, outputs) -> None:
    """Updates `metrics` ({un-prefixed name: metric}) from a batch."""
    del metrics, features, outputs

  def dummy_features(self, batch_size: int = 1):
    """A batch of zeros-like features that builds the head's variables (for
    restoring a head outside training), or None when there is no head."""
    del batch_size
    return None

  # When a run starts fresh, after `task.init_checkpoint` is restored.
  def after_initialize(self, encoder: SiameseEncoder, head, state) -> None:
    """Runs once when training starts without a checkpoint of its own, after
    the task restored `task.init_checkpoint` (if any): e.g. copies the
    starting encoder into frozen state. Not run when a run resumes."""
    del encoder, head, state

  # After each optimizer update.
  def after_update(self, encoder: SiameseEncoder, head, state) -> None:
    """Runs right after a finite optimizer update (replica context)."""
    del encoder, head, state


def global_batch_sum(value):
  """Sums `value` over all replicas; returns (sum, number of replicas)."""
  context = tf.distribute.get_replica_context()
  if context is None:  # cross-replica context: this batch is the whole batch
    return value, 1
  return (context.all_reduce(tf.distribute.ReduceOp.SUM, value),
          context.num_replicas_in_sync)


def global_masked_lm_loss(masked_lm_ids, mlm_logits, masked_lm_weights):
  """`losses.conditional_mlm_loss` normalised by the masked-token count of
  the GLOBAL batch, so replicas add up to exactly the loss (and gradient) one
  device would compute on the whole batch.

  Model Garden's step divides each replica's loss by the replica count and
  sums gradients, so each replica reports num_replicas times its share.
  """
  weights = tf.cast(masked_lm_weights, tf.float32)
  global_weight, num_replicas = global_batch_sum(tf.reduce_sum(weights))
  return losses.conditional_mlm_loss(masked_lm_ids, mlm_logits, weights,
                                     normalizer=global_weight / num_replicas)


class MaskedTokenObjective(Objective):
  """An objective predicting masked tokens: features `masked_lm_ids` and
  `masked_lm_weights`, outputs `mlm_logits`; the loss is
  `global_masked_lm_loss`, the metric masked-token accuracy."""

  def compute_loss(self, features, outputs):
    return global_masked_lm_loss(features["masked_lm_ids"],
                                 outputs["mlm_logits"],
                                 features["masked_lm_weights"])

  def build_metrics(self):
    return [tf_keras.metrics.SparseCategoricalAccuracy(
        name="masked_lm_accuracy")]

  def update_metrics(self, metrics, features, outputs):
    metrics["masked_lm_accuracy"].update_state(
        features["masked_lm_ids"], outputs["mlm_logits"],
        features["masked_lm_weights"])


def register_objective(kind: str) -> Callable[[type], type]:
  """Class decorator: makes an `Objective` subclass available as `kind`.

  Examples:
    >>> @register_objective("my_objective")
    ... class MyObjective(Objective):
    ...   config_cls = MyObjectiveConfig
    >>> objective_class("my_objective") is MyObjective
    True
  """
  def register(cls):
    if kind in _REGISTRY and _REGISTRY[kind] is not cls:
      raise ValueError(f"An objective is already registered as {kind!r}.")
    _REGISTRY[kind] = cls
    return cls
  return register


def objective_class(kind: str) -> Type[Objective]:
  if kind not in _REGISTRY:
    raise ValueError(f"Unknown objective type {kind!r}; the registered "
                     f"ones are {', '.join(sorted(_REGISTRY))}.")
  return _REGISTRY[kind]


def registered_kinds() -> List[str]:
  return sorted(_REGISTRY)


class ObjectivesConfig(base_config.Config):
  """`task.objectives`: named objectives, each an `ObjectiveConfig` subclass.

  A mapping, not a fixed set of fields: a YAML file or `--params_override`
  may add an objective by name, giving its `type`
  (`task.objectives.aux.type=cmlm,task.objectives.aux.weight=0.5`). An entry
  whose name is a registered kind may leave `type` out.
  """

  def _typed(self, name: str, value):
    if isinstance(value, ObjectiveConfig):
      return copy.deepcopy(value)
    if not isinstance(value, dict):
      raise ValueError(f"task.objectives.{name} must be a mapping of the "
                       f"objective's fields, got {value!r}.")
    kind = value.get("type") or name
    config = objective_class(kind).config_cls()
    config.override(dict(value, type=kind), is_strict=True)
    return config

  def _set(self, k, v):
    if k in self.RESERVED_ATTR or k.startswith("_"):
      return super()._set(k, v)
    if k in self.__dict__ and isinstance(v, dict):
      self.__dict__[k].override(v, is_strict=True)
    else:
      self.__dict__[k] = self._typed(k, v)

  def _override(self, override_dict, is_strict=True):
    for name, value in override_dict.items():
      if name in self.RESERVED_ATTR:
        continue
      if name not in self.__dict__:
        self.__dict__[name] = self._typed(name, value)
      elif isinstance(value, (dict, base_config.Config)):
        self.__dict__[name].override(value, is_strict)
      else:
        raise ValueError(f"task.objectives.{name} must be a mapping of the "
                         f"objective's fields, got {value!r}.")

  def names(self) -> List[str]:
    return [k for k in self.as_dict()]
