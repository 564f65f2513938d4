"""A training run's config and checkpoint, read back for export.

`python -m cmlm train` leaves in its `--model_dir` the full experiment config
(`params.yaml`, written by Model Garden's `train_utils.serialize_config`) and
checkpoints `ckpt-N` holding `model=` (the whole `ConditionalMaskedLM`),
`encoder=`, `projection_head=`, `optimizer=` and `global_step=`. This module
turns them back into a CMLM model with the trained weights, or says clearly
why it cannot, before anything is written.

Runs of the multitask task (`model=` is a `CmlmBitextModel` wrapping the CMLM
model as `cmlm`) and of NLI fine-tuning (`model=` is an `NliModel`; only its
`encoder` is a CMLM part) are read too.
"""
import os
from typing import Optional

import tensorflow as tf
import tf_keras
import yaml

from cmlm import cmlm_bitext_task
from cmlm import cmlm_task
from cmlm import nli_task
from modeling import model_builder
from official.core import config_definitions as cfg
from official.modeling import hyperparams

PARAMS_FILE = "params.yaml"
# What reading a damaged, truncated or foreign checkpoint raises (a truncated
# data file gives IndexError from the reader).
_READ_ERRORS = (tf.errors.OpError, ValueError, AssertionError, IndexError,
                KeyError)


def load_params(model_dir: str) -> cfg.ExperimentConfig:
  """The experiment config that trained `model_dir` (its params.yaml)."""
  path = os.path.join(model_dir, PARAMS_FILE)
  if not tf.io.gfile.exists(path):
    raise FileNotFoundError(
        f"{path} does not exist; --model_dir must be the directory that "
        "`python -m cmlm train` wrote (it holds params.yaml and ckpt-N).")
  try:
    with tf.io.gfile.GFile(path) as f:
      task = (yaml.safe_load(f) or {}).get("task") or {}
    params = cfg.ExperimentConfig(task=_task_config_class(task)())
    return hyperparams.override_params_dict(params, path, is_strict=True)
  except (KeyError, ValueError, TypeError, AttributeError,
          yaml.YAMLError) as error:
    raise ValueError(f"{path} is not the config of a CMLM experiment: "
                     f"{error}") from None


def _task_config_class(task: dict):
  """The task config class that wrote a params.yaml's `task` section."""
  if "bitext_data" in task:
    return cmlm_bitext_task.CmlmBitextTaskConfig
  if "num_classes" in task:
    return nli_task.NliTaskConfig
  return cmlm_task.CmlmTaskConfig


def _checkpointed_model(params: cfg.ExperimentConfig, model):
  """What `model=` was in the run's checkpoint, around our CMLM model."""
  if isinstance(params.task, cmlm_bitext_task.CmlmBitextTaskConfig):
    return tf.train.Checkpoint(cmlm=model)
  if is_nli_run(params):
    return tf.train.Checkpoint(encoder=model.encoder)
  return model


def find_checkpoint(model_dir: str, checkpoint: Optional[str] = None) -> str:
  """The checkpoint prefix to export: `checkpoint` if given, else the latest."""
  if checkpoint:
    if tf.io.gfile.isdir(checkpoint):
      found = tf.train.latest_checkpoint(checkpoint)
      if not found:
        raise FileNotFoundError(f"The directory {checkpoint} holds no "
                                "checkpoint; give --checkpoint=DIR/ckpt-N.")
      return found
    if not tf.io.gfile.exists(checkpoint + ".index"):
      raise FileNotFoundError(
          f"The checkpoint {checkpoint} does not exist (no "
          f"{os.path.basename(checkpoint)}.index); give a prefix such as "
          f"{os.path.join(model_dir or 'MODEL_DIR', 'ckpt-1000')}.")
    return checkpoint
  found = tf.train.latest_checkpoint(model_dir)
  if not found:
    raise FileNotFoundError(
        f"No checkpoint in {model_dir}: train first, or name one with "
        "--checkpoint=PATH/ckpt-N.")
  return found


def checkpoint_step(checkpoint_path: str) -> int:
  """The global step stored in a checkpoint (the default export version)."""
  try:
    reader = tf.train.load_checkpoint(checkpoint_path)
    return int(reader.get_tensor("global_step/.ATTRIBUTES/VARIABLE_VALUE"))
  except _READ_ERRORS as error:
    raise ValueError(_unreadable(checkpoint_path, error)) from None


def restore_model(params: cfg.ExperimentConfig,
                  checkpoint_path: str) -> tf_keras.Model:
  """Builds the experiment's CMLM model and restores `checkpoint_path` in it.

  Every variable of the model must be found in the checkpoint with the same
  shape (`assert_existing_objects_matched`); the optimizer slots it also
  holds are not needed. NLI fine-tuning trains the sentence encoder alone,
  so of an NLI run only the encoder is built (no MLM head to export).
  """
  model = model_builder.build_cmlm_model(
      params.task.model, seq_length=params.task.train_data.seq_length)
  features = dummy_features(params)
  if is_nli_run(params):
    model.encoder({key[len("s1_"):]: value for key, value in features.items()
                   if key.startswith("s1_")})
  else:
    model(features)  # creates every variable, MLM head included
  try:
    status = tf.train.Checkpoint(
        model=_checkpointed_model(params, model)).restore(checkpoint_path)
    status.expect_partial().assert_existing_objects_matched()
  except _READ_ERRORS as error:
    raise ValueError(_unreadable(checkpoint_path, error)) from None
  return model


def is_nli_run(params: cfg.ExperimentConfig) -> bool:
  """Whether `params` fine-tuned the encoder on NLI (section 4.3)."""
  return isinstance(params.task, nli_task.NliTaskConfig)


def dummy_features(params: cfg.ExperimentConfig, batch_size: int = 1):
  """A batch of CMLM features of the experiment's shapes, to build a model."""
  data = params.task.train_data
  ids = tf.ones([batch_size, data.seq_length], tf.int32)
  predictions = getattr(data, "max_predictions_per_seq", 1)  # NLI has none
  positions = tf.ones([batch_size, predictions], tf.int32)
  features = {}
  for prefix in ("s1_", "s2_"):
    features.update({f"{prefix}input_word_ids": ids,
                     f"{prefix}input_mask": ids,
                     f"{prefix}input_type_ids": tf.zeros_like(ids)})
  features["masked_lm_positions"] = positions
  return features


def _unreadable(checkpoint_path: str, error: Exception) -> str:
  reason = str(error).strip().splitlines()[0] if str(error).strip() else (
      type(error).__name__)
  return (f"The checkpoint {checkpoint_path} cannot be read as this "
          f"experiment's CMLM model ({reason}); it may be corrupt, "
          "incomplete, or from another config.")
