"""A run directory, read back: its config, checkpoints and trained encoder.

`python -m cmlm train` (and `stages`, `import`) leaves in its `--model_dir`
the full experiment config (`params.yaml`, Model Garden's
`train_utils.serialize_config`), checkpoints `ckpt-N` whose items are
named (`training/task.py`): `encoder`, `<objective>_head`,
`<objective>_state`, `model`, `optimizer`, `global_step`, and, for an
import, `import_info.json` (`IMPORT_INFO_FILE`). Every command that reads a
run goes through this module: the config is read as the one
sentence-encoder task's (no guessing from YAML keys) and the encoder (plus,
for `--mlm`, the CMLM head) is restored by item name. Errors say clearly
why a directory or checkpoint cannot be read, before anything is written.
The readers' record of a run, read once with its vocabulary and tokenizer,
is `inference.run_record.RunRecord`.
"""
import copy
import dataclasses
import os
from typing import Optional

import tensorflow as tf

from cmlm.data_pipelines import vocabulary
from cmlm.modeling import model_builder
from cmlm.modeling import pooling_heads
from cmlm.modeling.pooling import POOLING_MODES
from official.core import config_definitions as cfg
from official.modeling.hyperparams import params_dict
from cmlm.training import checkpoint_integrity
from cmlm.training import checkpoints
from cmlm.training import compat
from cmlm.training import config_inputs
from cmlm.training import task as task_lib

PARAMS_FILE = "params.yaml"
# What `python -m cmlm import` records of the model a run was imported from
# (`training.import_run`); `inference.run_record` reads it as the origin.
IMPORT_INFO_FILE = "import_info.json"
ENCODER_INPUTS = ("input_word_ids", "input_mask", "input_type_ids")
# What reading a damaged, truncated or foreign checkpoint raises.
_READ_ERRORS = checkpoint_integrity.READ_ERRORS


def is_run_dir(path: str) -> bool:
  """Whether `path` is a run directory (it holds params.yaml)."""
  return bool(path) and tf.io.gfile.exists(os.path.join(path, PARAMS_FILE))


def check_run_dir(model_dir: str) -> None:
  """One clear error when `model_dir` is not a run directory."""
  if not is_run_dir(model_dir):
    raise FileNotFoundError(
        f"{os.path.join(model_dir, PARAMS_FILE)} does not exist; --model_dir "
        "must be the directory that `python -m cmlm train` wrote (it holds "
        "params.yaml and ckpt-N).")


def load_params(model_dir: str) -> cfg.ExperimentConfig:
  """The experiment config that trained `model_dir` (its params.yaml; an
  older version's keys upgraded, `compat.upgrade_params`)."""
  check_run_dir(model_dir)
  path = os.path.join(model_dir, PARAMS_FILE)
  saved = config_inputs.read_yaml(path, path)
  if not isinstance(saved, dict):
    held = "is empty: it holds no config" if saved is None else (
        f"holds a {type(saved).__name__}, not a config")
    raise ValueError(f"{path} {held} (train writes the run's whole config "
                     "there).")
  try:
    saved = compat.upgrade_params(params_dict.ParamsDict(saved).as_dict())
    params = cfg.ExperimentConfig(task=task_lib.SentenceEncoderTaskConfig())
    params.override(saved, is_strict=True)
    return params
  except (KeyError, ValueError, TypeError, AttributeError) as error:
    raise ValueError(f"{path} is not the config of a sentence-encoder run of "
                     f"this garden: {error}") from None


@dataclasses.dataclass(frozen=True)
class InitCheckpoint:
  """`task.init_checkpoint` resolved once (`resolve_init_checkpoint`): the
  config builder's start-run policy
  (`run_config.adopt_init_checkpoint_encoder`) and the run's checks and
  restore (`prepared_run.prepare`) take this record rather than resolving
  the path again.

  Attributes:
    path: `task.init_checkpoint` as the config gives it.
    prefix: the checkpoint it names (`checkpoints.resolve`: itself, or the
      newest one of a directory that reads); None when there is none.
    run_dir: the run directory that checkpoint belongs to (params.yaml
      beside it: a run or an import of ours); None otherwise.
    params: that run's config (`load_params`); None without a run directory.
    missing: why there is no checkpoint, in one line ("" when there is one);
      raised by `checked_prefix`, when the run is checked.
  """
  path: str
  prefix: Optional[str] = None
  run_dir: Optional[str] = None
  params: Optional[cfg.ExperimentConfig] = None
  missing: str = ""

  def checked_prefix(self) -> str:
    """The checkpoint prefix; FileNotFoundError (one line) without one."""
    if self.missing:
      raise FileNotFoundError(self.missing)
    return self.prefix


def resolve_init_checkpoint(path: str) -> InitCheckpoint:
  """The one resolution of `task.init_checkpoint` per run: the checkpoint
  prefix `path` names, the run directory it lies in and that run's config.

  A path that names no checkpoint is recorded (`InitCheckpoint.missing`)
  and raised when the run is checked (`prepared_run.prepare`), so the
  config can still be built; a damaged checkpoint, or a run directory whose
  params.yaml does not read, is one clear error at once.
  """
  try:
    prefix = checkpoints.resolve(path)
  except FileNotFoundError as error:
    return InitCheckpoint(path, missing=str(error))
  directory = os.path.dirname(prefix)
  if not is_run_dir(directory):
    return InitCheckpoint(path, prefix)
  return InitCheckpoint(path, prefix, directory, load_params(directory))


def find_checkpoint(model_dir: str, checkpoint: Optional[str] = None,
                    checkpoint_name: str = "--checkpoint") -> str:
  """The checkpoint prefix to read: `checkpoint` if given, else the newest
  that reads (a damaged newer one is named in one line and skipped,
  `checkpoint_integrity.newest_readable`; errors name it
  `checkpoint_name`)."""
  if checkpoint:
    return checkpoints.resolve(checkpoint, checkpoint_name)
  found = checkpoint_integrity.newest_readable(model_dir)
  if not found:
    raise FileNotFoundError(
        f"No checkpoint in {model_dir}: train first, or name one with "
        f"{checkpoint_name}=PATH/ckpt-N.")
  return found


_GLOBAL_STEP = "global_step/.ATTRIBUTES/VARIABLE_VALUE"


def checkpoint_step(checkpoint_path: str) -> Optional[int]:
  """The global step stored in a checkpoint (the default export version);
  None for a checkpoint that stores none (an untrained start written with
  its `encoder` item alone)."""
  try:
    reader = tf.train.load_checkpoint(checkpoint_path)
    if not reader.has_tensor(_GLOBAL_STEP):
      return None
    return int(reader.get_tensor(_GLOBAL_STEP))
  except _READ_ERRORS as error:
    raise ValueError(_unreadable(checkpoint_path, error)) from None


def cmlm_objective_name(params: cfg.ExperimentConfig) -> Optional[str]:
  """The name of the run's CMLM objective (the one with an MLM head)."""
  for name, objective in params.task.active_objectives().items():
    if objective.type == "cmlm":
      return name
  return None


def restore_encoder(params: cfg.ExperimentConfig, checkpoint_path: str,
                    with_mlm_head: bool = False,
                    vocab: Optional[vocabulary.VocabularyFile] = None):
  """Builds the run's encoder and restores its `encoder` checkpoint item.

  With `with_mlm_head`, also the CMLM objective's head (`<name>_head`).
  Every variable built must be found in the checkpoint with the same shape
  (`assert_existing_objects_matched`); heads of other objectives, optimizer
  slots and objective state are not read.

  The run's vocabulary is checked against its embedding table first (the
  reading edge's one check; training checks at its own,
  `prepared_run.prepare`); `vocab` is that file already read.

  Returns:
    The `SiameseEncoder`, or (encoder, `ConditionalMlmHead`) with
    `with_mlm_head`.
  """
  task_config = params.task
  task_lib.check_vocab_matches_encoder(task_config.tokenization.vocab_file,
                                       task_config.model.encoder.vocab_size,
                                       vocab)
  encoder = model_builder.build_siamese_encoder(
      task_config.model, seq_length=task_config.tokenization.seq_length)
  dummy = dummy_encoder_inputs(task_config.tokenization.seq_length)
  encoder(dummy)
  head = None
  if with_mlm_head:
    name = cmlm_objective_name(params)
    if name is None:
      raise ValueError("This run has no CMLM objective, so no trained MLM "
                       "head to export; drop --mlm.")
    objective = task_lib.build_objectives(task_config)[name]
    head = objective.build_head(encoder)
    objective.call(encoder, head, None, objective.dummy_features())
  try:
    items = dict(encoder=checkpoints.encoder_view(encoder, checkpoint_path)[0])
    if head is not None:
      items[f"{name}_head"] = head
    checkpoints.read_partial(tf.train.Checkpoint(**items), checkpoint_path
                             ).assert_existing_objects_matched()
  except _READ_ERRORS as error:
    raise ValueError(_unreadable(checkpoint_path, error)) from None
  return (encoder, head) if with_mlm_head else encoder


def dummy_encoder_inputs(seq_length: int, batch_size: int = 1):
  """Encoder inputs of ones, to build an encoder's variables."""
  ids = tf.ones([batch_size, seq_length], tf.int32)
  return dict(input_word_ids=ids, input_mask=ids,
              input_type_ids=tf.zeros_like(ids))


def with_pooling(params: cfg.ExperimentConfig, pooling: Optional[str]
                 ) -> cfg.ExperimentConfig:
  """`params` with the encoder read through `pooling` ("mean", "max",
  "cls") instead of its own; None: unchanged. Pooling has no weights, so
  the checkpoint reads the same; a trained pooling head is refused."""
  if pooling is None:
    return params
  if pooling not in POOLING_MODES:
    raise ValueError(f"pooling must be one of {', '.join(POOLING_MODES)}, "
                     f"got {pooling!r}.")
  if params.task.model.pooling_head.type != pooling_heads.NONE:
    raise ValueError(f"pooling={pooling} cannot replace this run's trained "
                     f"pooling head ({params.task.model.pooling_head.type}).")
  params = copy.deepcopy(params)
  params.task.model.pooling = pooling
  return params


def _unreadable(checkpoint_path: str, error: Exception) -> str:
  reason = str(error).strip().splitlines()[0] if str(error).strip() else (
      type(error).__name__)
  return (f"The checkpoint {checkpoint_path} cannot be read as this run's "
          f"encoder ({reason}); it may be corrupt, incomplete, or from "
          "another config.")
