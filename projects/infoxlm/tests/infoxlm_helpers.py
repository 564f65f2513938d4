"""Tiny real runs of the InfoXLM objectives: a tiny vocabulary, translation
pairs and monolingual lines written to a test's tmp_path."""
import dataclasses

import numpy as np
import tensorflow as tf

from cmlm.objectives import base
from cmlm.projects.infoxlm import xlco_objective as xlco
from tests import helpers
from tests.data_pipelines import data_helpers

WORDS = data_helpers.WORDS[4:]  # the, a, cat, dog, ...


def write_bitext(directory, num_pairs=64, seed=0, name="pairs.tsv",
                 first_number=0):
  """`num_pairs` distinct "translation" rows `source<TAB>target`, numbered
  from `first_number` (both sides hold the pair's digits)."""
  rng = np.random.default_rng(seed)
  rows = []
  for index in range(first_number, first_number + num_pairs):
    words = list(rng.choice(WORDS, size=rng.integers(2, 6)))
    number = " ".join(str(index))
    rows.append(f"{' '.join(words)} {number}\t{number} "
                f"{' '.join(reversed(words))}\n")
  path = directory / name
  path.write_text("".join(rows), encoding="utf-8")
  return str(path)


def write_monolingual(directory, languages=("en", "de"), sizes=(30, 10)):
  """'lang=file,...' of numbered lines, `sizes` lines per language."""
  parts = []
  for language, size in zip(languages, sizes):
    path = directory / f"{language}.txt"
    path.write_text("".join(f"the {language} cat {' '.join(str(i))} sat\n"
                            for i in range(size)), encoding="utf-8")
    parts.append(f"{language}={path}")
  return ",".join(parts)


@dataclasses.dataclass
class PoisonedXlcoConfig(xlco.XlcoObjectiveConfig):
  type: str = "test_poisoned_xlco"
  poisoned_steps: str = ""  # comma-separated 1-based training calls


@base.register_objective("test_poisoned_xlco")
class PoisonedXlco(xlco.XlcoObjective):
  """XLCo whose loss is NaN at the listed training steps."""
  config_cls = PoisonedXlcoConfig

  def build_state(self, encoder, head):
    state = super().build_state(encoder, head)
    with tf.variable_creator_scope(xlco._replica_synchronised):  # pylint: disable=protected-access
      state.calls = tf.Variable(0, dtype=tf.int64, name="calls")
    return state

  def call(self, encoder, head, state, features, training=None):
    outputs = super().call(encoder, head, state, features, training)
    if training:
      state.calls.assign_add(1)
    outputs["call"] = tf.identity(state.calls)
    return outputs

  def compute_loss(self, features, outputs):
    loss = super().compute_loss(features, outputs)
    steps = [int(s) for s in self.config.poisoned_steps.split(",") if s]
    poisoned = tf.reduce_any(tf.equal(outputs["call"], steps or [-1]))
    return tf.cond(poisoned, lambda: loss * float("nan"), lambda: loss)


def xlco_run_params(tmp_path, train_steps, queue_size=64, poisoned_steps=(),
                    batch_size=4, momentum=0.9):
  """A real XLCo-only run: 1-layer 16-wide encoder, no dropout, seeded data,
  a checkpoint every 2 steps."""
  vocab = data_helpers.write_tiny_vocab(tmp_path)
  pairs = write_bitext(tmp_path)
  params = helpers.tiny_run_params(train_steps)
  params.task.objectives = base.ObjectivesConfig({"xlco": {
      "type": "test_poisoned_xlco" if poisoned_steps else "xlco",
      "layer": 1, "momentum": momentum, "queue_size": queue_size,
      "queue_fill": "partial",
      "train_data": {"input_path": pairs, "global_batch_size": batch_size,
                     "seed": 3, "is_training": True},
      **({"poisoned_steps": ",".join(map(str, poisoned_steps))}
         if poisoned_steps else {})}})
  params.override({"task": {
      "tokenization": {"vocab_file": vocab},
      "skip_non_finite_batches": bool(poisoned_steps),
      "model": {"encoder": {"vocab_size": len(data_helpers.TINY_VOCAB),
                            "dropout_rate": 0.0,
                            "attention_dropout_rate": 0.0}}}})
  return params
