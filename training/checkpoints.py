"""Reading checkpoints by item name: which checkpoint, which items, which
parts of the encoder.

A checkpoint of a run names its items (`SentenceEncoderModel.checkpoint_items`,
training/task.py): `encoder`, `<objective>_head`, `<objective>_state`, and
Model Garden's `model`, `optimizer`, `global_step`. The encoder item's parts
are the `transformer`, the CMLM `projection_head` and a trained
`pooling_head`, each present only when the run had it. Every reader of a
checkpoint (a run starting from `task.init_checkpoint`, export, eval,
encode, pcr) finds it with `resolve` and reads the encoder through
`encoder_view`, so all of them follow the same rules (and read older runs'
part names, `compat.stored_encoder_part`). When a run saves them:
`save_at_interval_multiples`.
"""
import os
from typing import List, Optional, Sequence, Set, Tuple

import tensorflow as tf
from tensorflow.core.protobuf import trackable_object_graph_pb2

from cmlm.training import checkpoint_integrity
from cmlm.training import compat

ENCODER = "encoder"


def resolve(path: str, what: str = "task.init_checkpoint") -> str:
  """The checkpoint prefix `path` names: itself (`DIR/ckpt-N`), or the
  newest checkpoint of a directory that reads
  (`checkpoint_integrity.newest_readable`: a damaged newer one is named in
  one line and skipped); one clear error when there is none, or when the
  prefix named is damaged (naming the newest one of its directory that
  reads)."""
  if tf.io.gfile.isdir(path):
    found = checkpoint_integrity.newest_readable(path)
    if not found:
      raise FileNotFoundError(f"{what}={path} is a directory without a "
                              "checkpoint; give a run directory or "
                              "DIR/ckpt-N.")
    return found
  if not tf.io.gfile.exists(path + ".index"):
    raise FileNotFoundError(
        f"{what}={path} does not exist (no {os.path.basename(path)}.index); "
        "give a run directory or a prefix such as "
        f"{os.path.join(os.path.dirname(path) or 'MODEL_DIR', 'ckpt-1000')}.")
  try:
    checkpoint_integrity.check(path)
  except checkpoint_integrity.DamagedCheckpoint as damaged:
    raise checkpoint_integrity.DamagedCheckpoint(
        path, damaged.reason + _readable_instead(os.path.dirname(path),
                                                 what)) from None
  return path


def _readable_instead(directory: str, what: str) -> str:
  """"; the newest checkpoint of DIR that reads is ...", or ""."""
  try:
    found = checkpoint_integrity.newest_readable(directory,
                                                 report=lambda line: None)
  except (checkpoint_integrity.NoReadableCheckpoint, tf.errors.OpError):
    found = None
  return f"; the newest one of its directory that reads: {what}={found}" if (
      found) else ""


def item_names(checkpoint_path: str) -> Set[str]:
  """The top-level item names a checkpoint holds (encoder, cmlm_head, ...)."""
  return {key.split("/", 1)[0]
          for key, _ in tf.train.list_variables(checkpoint_path)}


def encoder_part_names(checkpoint_path: str) -> Set[str]:
  """The parts of the `encoder` item a checkpoint holds (transformer, ...)."""
  return {key.split("/")[1]
          for key, _ in tf.train.list_variables(checkpoint_path)
          if key.startswith(ENCODER + "/") and key.count("/") > 1}


# The word embedding table of the encoder item's transformer (Model Garden's
# BertEncoderV2), by object names.
WORD_EMBEDDINGS = (ENCODER, "transformer", "_embedding_layer", "embeddings")


def variable_shape(checkpoint_path: str, names: Sequence[str]
                   ) -> Optional[List[int]]:
  """The shape of the variable the checkpoint's object graph reaches by
  `names` from its root (a variable shared by several objects is stored
  once, under one of its paths: the graph finds it by any); None when the
  path is not there (another encoder class, an older run's names)."""
  reader = tf.train.load_checkpoint(checkpoint_path)
  graph = trackable_object_graph_pb2.TrackableObjectGraph()
  graph.ParseFromString(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
  node = graph.nodes[0]
  for name in names:
    children = {child.local_name: child.node_id for child in node.children}
    if name not in children:
      return None
    node = graph.nodes[children[name]]
  for attribute in node.attributes:
    if attribute.name == "VARIABLE_VALUE":
      return reader.get_variable_to_shape_map()[attribute.checkpoint_key]
  return None


def encoder_view(encoder, checkpoint_path: str, allow_fresh: bool = False
                 ) -> Tuple[tf.train.Checkpoint, List[str]]:
  """The `encoder` item of `checkpoint_path` mapped onto `encoder`'s parts.

  The transformer must be there. A part with weights that the checkpoint
  lacks (a pooling head over an imported core, a projection head for a CMLM
  stage after a run that trained none) starts from its initialisation when
  `allow_fresh` (a run starting from `task.init_checkpoint`) and is an
  error otherwise (export, eval: they must read what was trained).

  Returns:
    (the checkpoint object to read the `encoder` item with, the names of
    the parts left fresh).
  """
  stored = encoder_part_names(checkpoint_path)
  if "transformer" not in stored:
    raise ValueError(f"The checkpoint {checkpoint_path} has no encoder "
                     "transformer (it is not a sentence-encoder run's).")
  parts = {"transformer": encoder.transformer}
  fresh = []
  for name in ("projection_head", "pooling_head"):
    part = getattr(encoder, name)
    if part is None or not part.weights:
      continue
    stored_as = compat.stored_encoder_part(name, stored)
    if stored_as:
      parts[stored_as] = part
    elif allow_fresh:
      fresh.append(name)
    else:
      raise ValueError(f"The checkpoint {checkpoint_path} has no encoder "
                       f"{name}, which this run's config builds; it is from "
                       "another config.")
  return tf.train.Checkpoint(**parts), fresh


def read_partial(checkpoint: tf.train.Checkpoint, checkpoint_path: str):
  """`checkpoint.read(checkpoint_path).expect_partial()`: the items of
  `checkpoint` are restored, the rest of the checkpoint (optimizer, heads
  of other objectives) is left unread without a warning.

  A read that fails part-way (a variable of another shape: a checkpoint of
  another config) is marked partial too before its error goes up: otherwise
  TensorFlow logs every value it left unread, a hundred lines, when the
  restore is deleted (at exit, after the command's one error line).
  """
  try:
    return checkpoint.read(checkpoint_path).expect_partial()
  except Exception as error:
    _expect_partial_restores(error)
    raise


# TensorFlow's record of one restore in progress (what a load status wraps),
# by its class name: TensorFlow does not export it. Under another name, a
# failed restore's warnings are left as they are.
_RESTORE_COORDINATOR = "_CheckpointRestoreCoordinator"


def _expect_partial_restores(error: BaseException) -> None:
  """Marks each restore that `error` interrupted (held by the frames of its
  traceback) as expected to be partial, which silences its warnings."""
  traceback = error.__traceback__
  while traceback is not None:
    for value in traceback.tb_frame.f_locals.values():
      if type(value).__name__ == _RESTORE_COORDINATOR:
        value.expect_partial = True
    traceback = traceback.tb_next


def save_at_interval_multiples(manager: tf.train.CheckpointManager
                               ) -> tf.train.CheckpointManager:
  """Makes `manager` save at the end of the loop that reaches each multiple
  of its `checkpoint_interval` (and, as orbit does, at the last step).

  orbit saves at the end of a loop once `checkpoint_interval` steps have
  passed since the previous save, and the first save of a fresh run at the
  end of its first loop: with `steps_per_loop=10` and
  `checkpoint_interval=20`, at 10, 30, 50, ... Counting from the multiple
  below each save instead gives 20, 40, 60, ... (with 25: 30, 50, 80, 100),
  on a fresh and on a resumed run alike.
  """
  interval = manager._checkpoint_interval  # pylint: disable=protected-access
  if not interval:
    return manager
  save, restore_or_initialize = manager.save, manager.restore_or_initialize

  def count_from_the_multiple_below():
    last = manager._last_checkpoint_step  # pylint: disable=protected-access
    manager._last_checkpoint_step = (last or 0) // interval * interval  # pylint: disable=protected-access

  def aligned_save(*args, **kwargs):
    path = save(*args, **kwargs)
    if path is not None:
      count_from_the_multiple_below()
    return path

  def aligned_restore_or_initialize():
    result = restore_or_initialize()
    if manager._step_counter is not None:  # pylint: disable=protected-access
      manager._last_checkpoint_step = int(manager._step_counter.numpy())  # pylint: disable=protected-access
    count_from_the_multiple_below()
    return result

  manager.save = aligned_save
  manager.restore_or_initialize = aligned_restore_or_initialize
  return manager
