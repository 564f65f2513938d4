"""Model selection during training: score every N steps, keep the best.

SimCSE's model selection, which CMLM-CSE follows (cmlm_cse_2023.txt,
section 4.1: "we evaluate the model every 125 training steps on the
development set of STS-B and keep the best checkpoint"), for any run and any
score: every `trainer.validation_interval` steps (and at the last step) a
scorer reads the encoder's sentence embeddings and returns one number;
Model Garden's `train_utils.BestCheckpointExporter` keeps the checkpoint
with the best one in `<model_dir>/<trainer.best_checkpoint_export_subdir>`
(`best_ckpt-<step>`, one kept) and records the score and its step in
`info.json` there (`{"<metric>": score, "best_ckpt_global_step": step}`).
`trainer.best_checkpoint_eval_metric` names the score and
`trainer.best_checkpoint_metric_comp` (`higher`, `lower`) which is better:
Model Garden's own fields, read as Model Garden reads them.

The kept checkpoint holds the model's named items (`encoder`, every
`<name>_head` and `<name>_state`) and `global_step`, not the optimizer or
the input position: export, eval and encode read it as any checkpoint of the
run (`--checkpoint=<model_dir>/best`). A resumed run reads `info.json` and
keeps comparing against the best so far.

The scorer is injected (training/ imports nothing of evaluation/): the
command layer builds it from an evaluation task (`python -m cmlm train`,
`trainer.best_checkpoint_eval_metric=sts-b`).
"""
import os
from typing import Callable, List, Optional

import numpy as np
import tensorflow as tf

from official.core import train_utils
from cmlm.data_pipelines import tokenization
from cmlm.modeling import embedder
from cmlm.modeling.vectors import l2_normalize

# sentences -> [len(sentences), hidden] embeddings, L2-normalised.
Embed = Callable[[List[str]], np.ndarray]
Scorer = Callable[[Embed], float]


class _StepNumberedManager(tf.train.CheckpointManager):
  """Saves `<name>-<global step>` (not the checkpoint's save counter)."""

  def __init__(self, checkpoint, global_step, **kwargs):
    super().__init__(checkpoint, **kwargs)
    self._global_step = global_step

  def save(self, checkpoint_number=None, check_interval=True, options=None):
    if checkpoint_number is None:
      checkpoint_number = self._global_step
    return super().save(checkpoint_number, check_interval, options)


class StepNamedExporter(train_utils.BestCheckpointExporter):
  """Model Garden's exporter, naming the kept checkpoint by its step."""

  def __init__(self, export_dir, metric_name, metric_comp, global_step):
    super().__init__(export_dir, metric_name, metric_comp)
    self._global_step = global_step

  def _get_checkpoint_manager(self, checkpoint):
    if self._checkpoint_manager is None:
      self._checkpoint_manager = _StepNumberedManager(
          checkpoint, directory=self._export_dir, max_to_keep=1,
          checkpoint_name=train_utils.BEST_CHECKPOINT_NAME,
          global_step=self._global_step)
    return self._checkpoint_manager


def check_config(trainer_config) -> None:
  """One ValueError for a best-checkpoint setting that cannot work."""
  if not trainer_config.best_checkpoint_export_subdir:
    raise ValueError(
        f"trainer.best_checkpoint_eval_metric="
        f"{trainer_config.best_checkpoint_eval_metric} needs "
        "trainer.best_checkpoint_export_subdir, the folder of the run that "
        "keeps the best checkpoint (e.g. best).")
  subdir = trainer_config.best_checkpoint_export_subdir
  if os.path.isabs(subdir) or ".." in subdir.split("/"):
    raise ValueError("trainer.best_checkpoint_export_subdir must be a folder "
                     f"inside the model_dir, got {subdir!r}.")
  if trainer_config.best_checkpoint_metric_comp not in ("higher", "lower"):
    raise ValueError("trainer.best_checkpoint_metric_comp must be higher or "
                     "lower, got "
                     f"{trainer_config.best_checkpoint_metric_comp!r}.")
  interval, loop = (trainer_config.validation_interval,
                    trainer_config.steps_per_loop)
  if interval < 1 or interval % loop:
    raise ValueError(
        f"trainer.validation_interval ({interval}), how often the best "
        "checkpoint's score is computed, must be a positive multiple of "
        f"trainer.steps_per_loop ({loop}).")


class BestCheckpointSelector:
  """An orbit train action: every `interval` steps, score and maybe keep.

  Attributes:
    exporter: the `BestCheckpointExporter` (`best_ckpt_logs`, `best_ckpt_path`).
    best_step: the step of the kept checkpoint (None before the first).
    history: `(step, score)` of every scoring by this process.
  """

  def __init__(self, model, params, model_dir: str, scorer: Scorer,
               global_step: tf.Variable, stream=None, vocab=None):
    """`vocab`: the run's vocabulary file, already read
    (`data_pipelines.vocabulary.VocabularyFile`)."""
    trainer = params.trainer
    check_config(trainer)
    self.metric = trainer.best_checkpoint_eval_metric
    self._interval = trainer.validation_interval
    self._total = trainer.train_steps
    self._scorer = scorer
    self._global_step = global_step
    self._embedder = embedder.encoder_embedder(
        model.encoder, tokenization.build_wordpiece_tokenizer(
            params.task.tokenization, vocab=vocab))
    self._checkpoint = tf.train.Checkpoint(global_step=global_step,
                                           **model.checkpoint_items)
    self.exporter = StepNamedExporter(
        os.path.join(model_dir, trainer.best_checkpoint_export_subdir),
        self.metric, trainer.best_checkpoint_metric_comp, global_step)
    self._last_scored = None
    self._stream = stream
    self.history = []
    previous = self.exporter.best_ckpt_logs or {}  # a resumed run's info.json
    self.best_step = (int(previous["best_ckpt_global_step"])
                      if "best_ckpt_global_step" in previous else None)

  def embed(self, sentences: List[str]) -> np.ndarray:
    """The encoder's embeddings now (inference mode: no dropout)."""
    return l2_normalize(self._embedder.embed(sentences, batch_size=256))

  def __call__(self, output=None) -> Optional[float]:
    """Scores at each multiple of the interval and at the last step."""
    step = int(self._global_step.numpy())
    due = step % self._interval == 0 or step >= self._total
    if not due or step == self._last_scored:
      return None
    self._last_scored = step
    score = float(self._scorer(self.embed))
    kept = self.exporter.maybe_export_checkpoint(
        self._checkpoint, {self.metric: score}, step)
    if kept:
      self.best_step = step
    self.history.append((step, score))
    best = float(self.exporter.best_ckpt_logs[self.metric])
    print(f"step {step}: {self.metric} {score:.4g}"
          + (" (new best, kept)" if kept else
             f" (best {best:.4g} at step {self.best_step})"),
          file=self._stream, flush=True)
    return score
