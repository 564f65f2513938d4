"""A run built and checked once, before anything is written: `prepare`.

`prepare` builds the run's objectives and checks everything the run will
read: the model config, each objective's weight, config and data, the
vocabulary against the embedding table, `task.init_checkpoint`, and (when
training) the tokenization against a sample of the training text. The
`PreparedRun` it returns is what `train.run` trains; `stages` prepares
every stage of a schedule before the first one starts. What the run reads
more than once is read once and passed along: `task.init_checkpoint`
resolved (`run_dir.resolve_init_checkpoint`), and the vocabulary file (to
every check, the objectives' data and the tokenizers). When the config was
built by `run_config.build_config`, both were read there and are taken from
its `BuiltConfig`; otherwise they are read here.
"""
import dataclasses
import math
from typing import Dict, Optional, Union

import tensorflow as tf

from official.core import config_definitions as cfg
from cmlm.data_pipelines import tokenization
from cmlm.data_pipelines import unk_rate
from cmlm.data_pipelines import vocabulary
from cmlm.objectives import base as objective_base
from cmlm.training import checkpoints
from cmlm.training import run_config
from cmlm.training import run_dir
from cmlm.training import task as task_lib


@dataclasses.dataclass
class PreparedRun:
  """A run's description, built and checked once (`prepare`), then passed
  down: the locked config, the mode, the objectives the task trains,
  `init_checkpoint`: `task.init_checkpoint` resolved once
  (`run_dir.resolve_init_checkpoint`: its `prefix` is the checkpoint the
  run starts from; what was checked is what is restored), or None (no
  start, or one an earlier stage has yet to write), and `vocab`:
  `task.tokenization.vocab_file` as read once (None without one).

  Examples:
    >>> from cmlm.training import run_config
    >>> prepared = prepare(run_config.build_config("cmlm/tiny"))
    >>> sorted(prepared.objectives), len(prepared.vocab.tokens)
    (['cmlm'], 8520)
  """
  params: cfg.ExperimentConfig
  mode: str
  objectives: Dict[str, objective_base.Objective]
  init_checkpoint: Optional[run_dir.InitCheckpoint] = None
  vocab: Optional[vocabulary.VocabularyFile] = None


def prepare(params: Union[cfg.ExperimentConfig, run_config.BuiltConfig],
            mode: str = "train",
            init_checkpoint_from_earlier_stage: bool = False
            ) -> PreparedRun:
  """Builds the run's objectives once and checks, before anything is
  written, everything the run will read: the model config, each
  objective's weight, config and the data `mode` reads, the vocabulary
  against the embedding table, `task.init_checkpoint`, and (training) the
  tokenization against a sample of the training text. One clear error each.

  `params`: the config, or `run_config.build_config`'s `BuiltConfig`, whose
  vocabulary and resolved `task.init_checkpoint` are taken rather than read
  again (each where the config still names the same file and path).

  `init_checkpoint_from_earlier_stage`: `task.init_checkpoint` is the
  directory an earlier stage of the same schedule will write
  (`training.stages`), so it need not exist yet (it is resolved when that
  stage starts); everything else is checked.

  Examples:
    >>> from cmlm.training import run_config, train
    >>> built = run_config.build_config(
    ...     "cmlm/tiny", params_override="task.tokenization.vocab_file=nope.txt")
    >>> prepare(built)
    Traceback (most recent call last):
    VocabularyError: The vocabulary file 'nope.txt' does not exist.
    >>> prepared = prepare(run_config.build_config("cmlm/tiny"))
    >>> result = train.run(prepared, "runs/tiny")  # trains what was checked
  """
  built = (params if isinstance(params, run_config.BuiltConfig)
           else run_config.BuiltConfig(params))
  params = built.params
  task_config = params.task
  task_config.model.validate()
  if "train" in mode:
    check_trainer(params.trainer, mode)
  vocab = read_vocab(task_config.tokenization, built.vocab)
  objectives = task_lib.build_objectives(task_config, vocab)
  for objective in objectives.values():
    objective.validate(mode)
  init_checkpoint = None
  if task_config.init_checkpoint and not init_checkpoint_from_earlier_stage:
    init_checkpoint = built.init_checkpoint
    if (init_checkpoint is None
        or init_checkpoint.path != task_config.init_checkpoint):
      init_checkpoint = run_dir.resolve_init_checkpoint(
          task_config.init_checkpoint)
    check_checkpoint_vocab(init_checkpoint.checked_prefix(),
                           task_config.tokenization, vocab)
  task_lib.check_vocab_matches_encoder(task_config.tokenization.vocab_file,
                                       task_config.model.encoder.vocab_size,
                                       vocab)
  if "train" in mode:
    check_training_text(task_config, objectives, vocab)
  return PreparedRun(params, mode, objectives, init_checkpoint, vocab)


def read_vocab(tokenization_config: tokenization.TokenizationConfig,
               already_read: Optional[vocabulary.VocabularyFile] = None
               ) -> Optional[vocabulary.VocabularyFile]:
  """The run's vocabulary file, read once for every check and tokenizer of
  the run (`already_read`, when it is that file: as the config builder read
  it); None without one, or when it cannot be read: then the objectives'
  checks read it and say why, in their turn (the errors come in the order
  they always did)."""
  if not tokenization_config.vocab_file:
    return None
  try:
    return vocabulary.read_vocabulary(tokenization_config.vocab_file,
                                      already_read)
  except (vocabulary.VocabularyError, tf.errors.OpError):
    return None


def check_checkpoint_vocab(
    checkpoint_path: str, tokenization_config: tokenization.TokenizationConfig,
    vocab: Optional[vocabulary.VocabularyFile]) -> None:
  """The checkpoint a run starts from has a word embedding row for each
  token of the run's vocabulary; one clear error otherwise (the restore
  would fail only once the run has started)."""
  if vocab is None:
    return
  shape = checkpoints.variable_shape(checkpoint_path,
                                     checkpoints.WORD_EMBEDDINGS)
  if shape is not None and shape[0] != len(vocab.tokens):
    raise ValueError(
        f"task.init_checkpoint={checkpoint_path} has a word embedding table "
        f"of {shape[0]} rows but the vocabulary "
        f"{tokenization_config.vocab_file} has {len(vocab.tokens)} tokens; "
        "train with the vocabulary the checkpoint was trained with.")


def check_trainer(trainer: cfg.TrainerConfig, mode: str = "train") -> None:
  """What orbit's controller would refuse only once params.yaml is written,
  or silently coarsen: the loop length, the checkpoints kept, the summary
  interval and the checkpoint interval. orbit writes both only at the end of a loop of
  `trainer.steps_per_loop` steps, so each interval is a multiple of the loop
  (a checkpoint interval at or past `trainer.train_steps` asks only for the
  last step's checkpoint, which every run writes). `validation_interval`
  is honoured as it is: orbit ends a loop at each validation, and the next
  loops count from there, so in train_and_eval each interval must also
  fall on those loops' ends (`best_checkpoint.check_config` checks the
  validation interval when a scorer keeps the best)."""
  loop = trainer.steps_per_loop
  if loop < 1:
    raise ValueError(f"trainer.steps_per_loop must be 1 or more, got {loop}.")
  if trainer.train_steps < 1:
    raise ValueError(f"trainer.train_steps must be 1 or more, got "
                     f"{trainer.train_steps}.")
  if trainer.max_to_keep is not None and trainer.max_to_keep < 1:
    raise ValueError("trainer.max_to_keep must be 1 or more (or null: keep "
                     f"every checkpoint), got {trainer.max_to_keep}.")
  intervals = {"summary_interval": (trainer.summary_interval, "summaries"),
               "checkpoint_interval": (trainer.checkpoint_interval,
                                       "checkpoints")}
  if trainer.checkpoint_interval >= trainer.train_steps:
    del intervals["checkpoint_interval"]
  fitting_loop = math.gcd(loop, *(value for value, _ in intervals.values()
                                  if value and value > 0))
  for name, (interval, written) in intervals.items():
    if interval and interval % loop:
      raise ValueError(
          f"trainer.{name} ({interval}) must be a multiple of "
          f"trainer.steps_per_loop ({loop}): {written} are written at the "
          f"end of a loop; set trainer.steps_per_loop={fitting_loop}, or "
          f"trainer.{name} to a multiple of {loop}.")
    validation = trainer.validation_interval
    if (interval and "eval" in mode and 0 < validation < trainer.train_steps
        and not _ends_loops(interval, loop, validation, trainer.train_steps)):
      raise ValueError(
          f"trainer.{name} ({interval}) does not fall at the end of a loop: "
          f"loops of trainer.steps_per_loop ({loop}) restart at each "
          f"trainer.validation_interval ({validation}); set "
          f"trainer.validation_interval to a multiple of {loop}.")


def _ends_loops(interval: int, loop: int, validation: int, steps: int
                ) -> bool:
  """Whether every multiple of `interval` below `steps` ends a loop when
  orbit trains `validation` steps at a time in loops of `loop`."""
  period = min(math.lcm(interval, validation), steps)
  return all(step % validation % loop == 0
             for step in range(interval, period + 1, interval))


def check_training_text(
    task_config, objectives,
    vocab: Optional[vocabulary.VocabularyFile] = None) -> None:
  """Tokenizes a sample of each objective's training text with the run's
  tokenization and prints its [UNK] rate; refuses a vocabulary of the wrong
  casing (`data_pipelines.unk_rate.check`). `vocab`: the tokenization's
  vocabulary file, already read."""
  for name, objective in objectives.items():
    data = objective.config.train_data
    sentences = objective.text_sample(data, unk_rate.SAMPLE_SENTENCES)
    source = f"{name}'s training data"
    if getattr(data, "input_path", ""):
      source += f" ({data.input_path})"
    unk_rate.check(task_config.tokenization, sentences, source, vocab=vocab)
