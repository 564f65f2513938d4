"""A run directory, read back: its config, tokenizer and trained encoder.

`python -m cmlm train` (and `stages`, `import`) leaves in its `--model_dir`
the full experiment config (`params.yaml`, Model Garden's
`train_utils.serialize_config`) and checkpoints `ckpt-N` whose items are
named (`training/task.py`): `encoder`, `<objective>_head`,
`<objective>_state`, `model`, `optimizer`, `global_step`. Every command that
reads a run — export, eval, pcr, encode, a later stage, the importer's
output — goes through this module: the config is read as the one
sentence-encoder task's (no guessing from YAML keys), the tokenizer is made
from the run's `task.tokenization`, and the encoder (plus, for `--mlm`, the
CMLM head) is restored by item name. Errors say clearly why a directory or
checkpoint cannot be read, before anything is written.
"""
import dataclasses
import functools
import os
from typing import List, Optional, Sequence

import numpy as np
import tensorflow as tf
import yaml

from data_pipelines import tokenization
from modeling import length_chunks
from modeling import model_builder
from modeling.sentence_encoder import SentenceEncoder
from official.core import config_definitions as cfg
from official.modeling import hyperparams
from training import task as task_lib

PARAMS_FILE = "params.yaml"
ENCODER_INPUTS = ("input_word_ids", "input_mask", "input_type_ids")
# What reading a damaged, truncated or foreign checkpoint raises (a truncated
# data file gives IndexError from the reader).
_READ_ERRORS = (tf.errors.OpError, ValueError, AssertionError, IndexError,
                KeyError)


def is_run_dir(path: str) -> bool:
  """Whether `path` is a run directory (it holds params.yaml)."""
  return bool(path) and tf.io.gfile.exists(os.path.join(path, PARAMS_FILE))


def load_params(model_dir: str) -> cfg.ExperimentConfig:
  """The experiment config that trained `model_dir` (its params.yaml)."""
  path = os.path.join(model_dir, PARAMS_FILE)
  if not tf.io.gfile.exists(path):
    raise FileNotFoundError(
        f"{path} does not exist; --model_dir must be the directory that "
        "`python -m cmlm train` wrote (it holds params.yaml and ckpt-N).")
  try:
    params = cfg.ExperimentConfig(task=task_lib.SentenceEncoderTaskConfig())
    return hyperparams.override_params_dict(params, path, is_strict=True)
  except (KeyError, ValueError, TypeError, AttributeError,
          yaml.YAMLError) as error:
    raise ValueError(f"{path} is not the config of a sentence-encoder run of "
                     f"this garden: {error}") from None


def build_tokenizer(params: cfg.ExperimentConfig,
                    seq_length: Optional[int] = None
                    ) -> tokenization.WordPieceTokenizer:
  """The run's tokenizer (`task.tokenization`), as its training data had."""
  return tokenization.build_tokenizer(params.task.tokenization, seq_length)


def find_checkpoint(model_dir: str, checkpoint: Optional[str] = None) -> str:
  """The checkpoint prefix to read: `checkpoint` if given, else the latest."""
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


def cmlm_objective_name(params: cfg.ExperimentConfig) -> Optional[str]:
  """The name of the run's CMLM objective (the one with an MLM head)."""
  for name, objective in params.task.active_objectives().items():
    if objective.type == "cmlm":
      return name
  return None


def restore_encoder(params: cfg.ExperimentConfig, checkpoint_path: str,
                    with_mlm_head: bool = False):
  """Builds the run's encoder and restores its `encoder` checkpoint item.

  With `with_mlm_head`, also the CMLM objective's head (`<name>_head`).
  Every variable built must be found in the checkpoint with the same shape
  (`assert_existing_objects_matched`); heads of other objectives, optimizer
  slots and objective state are not read.

  Returns:
    The `SentenceEncoder`, or (encoder, `ConditionalMlmHead`) with
    `with_mlm_head`.
  """
  task_config = params.task
  encoder = model_builder.build_sentence_encoder(
      task_config.model, seq_length=task_config.tokenization.seq_length)
  dummy = dummy_encoder_inputs(task_config.tokenization.seq_length)
  encoder(dummy)
  items = dict(encoder=encoder)
  head = None
  if with_mlm_head:
    name = cmlm_objective_name(params)
    if name is None:
      raise ValueError("This run has no CMLM objective, so no trained MLM "
                       "head to export; drop --mlm.")
    objective = task_lib.build_objectives(task_config)[name]
    head = objective.build_head(encoder)
    objective.call(encoder, head, None, objective.dummy_features())
    items[f"{name}_head"] = head
  try:
    status = tf.train.Checkpoint(**items).read(checkpoint_path)
    status.expect_partial().assert_existing_objects_matched()
  except _READ_ERRORS as error:
    raise ValueError(_unreadable(checkpoint_path, error)) from None
  return (encoder, head) if with_mlm_head else encoder


def dummy_encoder_inputs(seq_length: int, batch_size: int = 1):
  """Encoder inputs of ones, to build an encoder's variables."""
  ids = tf.ones([batch_size, seq_length], tf.int32)
  return dict(input_word_ids=ids, input_mask=ids,
              input_type_ids=tf.zeros_like(ids))


@dataclasses.dataclass
class Run:
  """A run directory read back: config, checkpoint, tokenizer, encoder."""
  model_dir: str
  params: cfg.ExperimentConfig
  checkpoint_path: str
  tokenizer: tokenization.WordPieceTokenizer
  encoder: SentenceEncoder

  def embed(self, sentences: Sequence[str], batch_size: int = 256,
            normalize: bool = True) -> np.ndarray:
    return embed_sentences(self.encoder, self.tokenizer, sentences,
                           batch_size, normalize)


def load_run(model_dir: str, checkpoint: Optional[str] = None) -> Run:
  """Reads `model_dir` (latest checkpoint, or `checkpoint`) for encoding."""
  params = load_params(model_dir)
  checkpoint_path = find_checkpoint(model_dir, checkpoint)
  task_lib.check_vocab_matches_encoder(
      params.task.tokenization.vocab_file,
      params.task.model.encoder.vocab_size)
  encoder = restore_encoder(params, checkpoint_path)
  return Run(model_dir, params, checkpoint_path, build_tokenizer(params),
             encoder)


def embed_sentences(encoder: SentenceEncoder,
                    tokenizer: tokenization.WordPieceTokenizer,
                    sentences: Sequence[str], batch_size: int = 256,
                    normalize: bool = True) -> np.ndarray:
  """Sentence embeddings `[len(sentences), hidden]`, L2-normalised or not.

  Computed as the serving model computes them: each batch's rows ordered by
  length and read in chunks cut to their longest (`length_chunks`).
  """
  embed_batch = embedding_function(encoder, tokenizer)
  vectors: List[np.ndarray] = []
  for start in range(0, len(sentences), batch_size):
    batch = tf.constant(list(sentences[start:start + batch_size]), tf.string)
    vectors.append(embed_batch(batch).numpy())
  if not vectors:
    return np.zeros([0, encoder.hidden_size], np.float32)
  vectors = np.concatenate(vectors)
  if not normalize:
    return vectors
  # (A ReLU lens can give an all-zero row: it stays zero, not NaN.)
  return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True),
                              1e-12)


@functools.lru_cache(maxsize=8)
def embedding_function(encoder: SentenceEncoder,
                       tokenizer: tokenization.WordPieceTokenizer):
  """One traced function per encoder and tokenizer: strings `[batch]` ->
  embeddings `[batch, hidden]`, not normalised."""
  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
  def embed_batch(sentences):
    return length_chunks.encode_by_length(  # [batch, hidden]
        lambda inputs: encoder(inputs, training=False)["default"],
        tokenizer.tokenize_and_pack(sentences))
  return embed_batch


def _unreadable(checkpoint_path: str, error: Exception) -> str:
  reason = str(error).strip().splitlines()[0] if str(error).strip() else (
      type(error).__name__)
  return (f"The checkpoint {checkpoint_path} cannot be read as this run's "
          f"encoder ({reason}); it may be corrupt, incomplete, or from "
          "another config.")
