"""XLCo, cross-lingual contrast with momentum (InfoXLM section 3.3, eq. 4-6).

For a translation pair (x, y) the query is the [CLS] (or mean) state of an
intermediate layer of the shared encoder (`layer`, 1-based: the paper's
"universal layer", 8 of 12 for base) through a linear head (`<name>_head`);
the key is the same from a momentum copy of the encoder and the head. Eq. 6
is scored against the key of the translation and a queue of past keys, in
both directions (x as query with y's key, and y as query with x's key), and
the two losses are averaged.

State (`build_state`, checkpointed as `<name>_state`): the key transformer
and key head (non-trainable, equal to the query side at initialisation and
again after `task.init_checkpoint`, unless that checkpoint holds this state),
the queue `[queue_size, hidden]`, its pointer, how many slots hold keys, and
the number of updates. All are created with `ONLY_FIRST_REPLICA`
aggregation: every replica computes the same values, and the first's is
written to all.

Per step: `call` computes the keys, all-gathers them across replicas (every
replica then holds the global batch's keys) and stashes them; the loss uses
the queue as it was before the step, so the batch's own keys are never among
its negatives; `after_update` (the trainer's finite-update branch, after the
optimizer) does theta_K <- m theta_K + (1-m) theta_Q and writes the stashed
keys into the ring buffer by assigning the whole queue. A skipped
(non-finite) batch runs no hook: the queue and the key side stay as they
were.

Paper vs the reference code (microsoft/unilm infoxlm, `criterions/xlco.py`,
`models/infoxlm.py`), and what we chose:
  * logits: the paper writes exp(q^T k); the code divides by a temperature
    of 0.25. We take the code's `temperature=0.25` (1.0 gives the paper's).
  * momentum: the paper says m = 0.999, the code's default is 0.9999. We take
    the paper's 0.999 as the default (a ~1k-step time constant); the tiny
    experiment uses less (see projects/infoxlm/experiments.py).
  * queue start: the paper pre-fills the queue with encoded examples; the
    code starts it as Gaussian noise and holds the XLCo loss off until
    queue_size keys were enqueued (`is_queue_ready`). `queue_fill="hold_off"`
    (default) is the code's hold-off (the noise is never used: the loss is 0
    until the queue is full); `"partial"` contrasts from the first step
    against the slots filled so far (empty slots leave the softmax), the
    closest to a pre-filled queue without extra passes over the data.
  * directions: the code draws one direction per example (a random swap);
    we score both, as the issue asks.
  * head: the code's projection is a bias-free linear map initialised with
    N(0, 0.02); ours too. Dropout stays on in the key pass, as in the code
    (`key_dropout`).
"""
import dataclasses

import tensorflow as tf
import tf_keras

from cmlm.data_pipelines import bitext
from cmlm.projects.infoxlm import infoxlm_data
from cmlm.data_pipelines import unk_rate
from cmlm.projects.infoxlm import momentum_contrast
from cmlm.modeling.pooling import SentencePooling
from cmlm.modeling.siamese_encoder import deserialize_transformer
from cmlm.modeling.siamese_encoder import serialize_transformer
from cmlm.objectives import base

POOLINGS = ("cls", "mean")
QUEUE_FILLS = ("hold_off", "partial")
INPUT_KEYS = ("input_word_ids", "input_mask", "input_type_ids")


@dataclasses.dataclass
class XlcoObjectiveConfig(base.with_data(infoxlm_data.InfoXlmDataConfig)):
  """XLCo's data and hyperparameters.

  Attributes:
    layer: the encoder layer contrasted, 1-based (0: the last one).
    pooling: "cls" (the paper) or "mean" over that layer's states.
    momentum: m of theta_K <- m theta_K + (1 - m) theta_Q; 0 makes the key
      encoder the query encoder (table 7's "-Momentum").
    queue_size: |N| - 1, the past keys used as negatives (131072 in 4.1).
    temperature: softmax temperature of eq. 6 (the code's 0.25).
    normalize_embeddings: cosine instead of dot-product logits.
    queue_fill: "hold_off" or "partial" (see the module doc).
    key_dropout: run the key encoder with dropout, as the code does.
  """
  type: str = "xlco"
  layer: int = 8
  pooling: str = "cls"
  momentum: float = 0.999
  queue_size: int = 131072
  temperature: float = 0.25
  normalize_embeddings: bool = False
  queue_fill: str = "hold_off"
  key_dropout: bool = True
  initializer_range: float = 0.02


def _replica_synchronised(next_creator, **kwargs):
  """Variables of the key side and queue: never trained; under a
  MirroredStrategy, written in replica context from the first replica."""
  kwargs["trainable"] = False
  kwargs["aggregation"] = tf.VariableAggregation.ONLY_FIRST_REPLICA
  return next_creator(**kwargs)


class XlcoState(tf.Module):
  """The momentum key encoder and head, the queue and its counters."""

  def __init__(self, transformer, head, queue_size: int, name: str,
               keys_per_step: int = 0):
    super().__init__(name=name)
    hidden_size = transformer.get_config()["hidden_size"]
    with tf.variable_creator_scope(_replica_synchronised):
      self.key_transformer = deserialize_transformer(
          serialize_transformer(transformer))
      self.key_transformer.trainable = False
      self.key_head = tf_keras.layers.Dense.from_config(head.get_config())
      self.key_head.build([None, hidden_size])
      self.key_head.trainable = False
      self.queue = tf.Variable(tf.zeros([queue_size, hidden_size]),
                               name="queue")
      self.queue_pointer = tf.Variable(0, dtype=tf.int64,
                                       name="queue_pointer")
      self.queue_count = tf.Variable(0, dtype=tf.int64, name="queue_count")
      self.updates = tf.Variable(0, dtype=tf.int64, name="updates")
      # The last training batch's keys, all replicas', waiting for
      # `after_update`: [2 * global batch, hidden]. A static shape (XLA
      # cannot resize a variable); unknown when no batch size is set.
      self.pending_keys = tf.Variable(
          tf.zeros([keys_per_step, hidden_size]),
          shape=tf.TensorShape([keys_per_step or None, hidden_size]),
          name="pending_keys")

  @property
  def key_variables(self):
    return self.key_transformer.weights + self.key_head.weights

  @property
  def named_key_variables(self):
    """`{name: variable}` of the key side (`momentum_contrast.named_variables`)."""
    return momentum_contrast.named_variables(
        {"transformer": self.key_transformer, "head": self.key_head})

  def paired_with(self, named_query_variables):
    """(key, query) variable pairs, matched by name."""
    return momentum_contrast.pair_by_name(self.named_key_variables,
                                          named_query_variables)

  def copy_from(self, named_query_variables) -> None:
    """Makes the key side equal to the query side (cross-replica context)."""
    pairs = self.paired_with(named_query_variables)
    strategy = getattr(self.queue, "distribute_strategy", None)
    if strategy is not None and not tf.distribute.has_strategy():
      with strategy.scope():
        self.copy_from(named_query_variables)
      return
    for key, query in pairs:
      key.assign(query)


def _side(features, side):
  return {key: features[f"{side}_{key}"] for key in INPUT_KEYS}


def _gather_replicas(value):
  """`value` of every replica, concatenated in replica order."""
  context = tf.distribute.get_replica_context()
  if context is None or context.num_replicas_in_sync == 1:
    return value
  return context.all_gather(value, axis=0)


@base.register_objective("xlco")
class XlcoObjective(base.Objective):
  """Cross-lingual contrast with a momentum encoder and a queue."""
  config_cls = XlcoObjectiveConfig

  def __init__(self, *args, **kwargs):
    super().__init__(*args, **kwargs)
    self._pooling = SentencePooling(
        "mean" if self.config.pooling == "mean" else "cls",
        name=f"{self.name}_pooling")

  # Data.
  def check_data(self, data_config):
    owner = f"task.objectives.{self.name}"
    config = self.config
    layers = self.model_config.encoder.num_layers
    if not 0 <= config.layer <= layers:
      raise ValueError(f"{owner}.layer must name one of the encoder's "
                       f"{layers} layers (1..{layers}, or 0 for the last), "
                       f"got {config.layer}.")
    if config.pooling not in POOLINGS:
      raise ValueError(f"{owner}.pooling must be one of "
                       f"{', '.join(POOLINGS)}, got {config.pooling!r}.")
    if config.queue_fill not in QUEUE_FILLS:
      raise ValueError(f"{owner}.queue_fill must be one of "
                       f"{', '.join(QUEUE_FILLS)}, got {config.queue_fill!r}.")
    if not 0 <= config.momentum < 1:
      raise ValueError(f"{owner}.momentum must be in [0, 1), got "
                       f"{config.momentum}.")
    if config.temperature <= 0:
      raise ValueError(f"{owner}.temperature must be > 0, got "
                       f"{config.temperature}.")
    keys_per_step = 2 * data_config.global_batch_size
    if config.queue_size < keys_per_step:
      raise ValueError(f"{owner}.queue_size ({config.queue_size}) must hold "
                       f"at least one step's keys, 2 x global_batch_size = "
                       f"{keys_per_step}.")
    infoxlm_data.validate_config(data_config, self.tokenization,
                                 f"{owner}.train_data", vocab=self.vocab)

  def build_inputs(self, data_config, input_context=None):
    return infoxlm_data.build_xlco_dataset(data_config, self.tokenization,
                                           input_context, self.vocab)

  def text_sample(self, data_config, max_sentences):
    return unk_rate.sides(bitext.iter_bitext(
        data_config.input_path, data_config.source_column,
        data_config.target_column, data_config.header), max_sentences)

  # Model.
  def build_head(self, encoder):
    head = tf_keras.layers.Dense(
        encoder.hidden_size, use_bias=False,
        kernel_initializer=tf_keras.initializers.RandomNormal(
            stddev=self.config.initializer_range),
        name=f"{self.name}_projection")
    head.build([None, encoder.hidden_size])
    return head

  def build_state(self, encoder, head):
    state = XlcoState(
        encoder.transformer, head, self.config.queue_size,
        name=f"{self.name}_state",
        keys_per_step=2 * self.config.train_data.global_batch_size)
    state.copy_from(self.query_variables(encoder, head))
    return state

  @staticmethod
  def query_variables(encoder, head):
    """`{name: variable}` of the query side, named as the key side's."""
    return momentum_contrast.named_variables(
        {"transformer": encoder.transformer, "head": head})

  def after_initialize(self, encoder, head, state):
    """A run's start (after `task.init_checkpoint`): the key side becomes
    the starting encoder, unless the checkpoint held this state."""
    if int(state.updates.numpy()) == 0:
      state.copy_from(self.query_variables(encoder, head))

  def _layer_index(self) -> int:
    return (self.config.layer or self.model_config.encoder.num_layers) - 1

  def _encode(self, transformer_outputs, inputs):
    """[batch, hidden]: the pooled state of the contrasted layer."""
    states = transformer_outputs["encoder_outputs"][self._layer_index()]
    return self._pooling(states, inputs["input_mask"])

  def call(self, encoder, head, state, features, training=None):
    source, target = _side(features, "source"), _side(features, "target")
    batch_size = tf.shape(features["source_input_word_ids"])[0]
    # One pass for both sides: [2 * batch, seq_length].
    both = {key: tf.concat([source[key], target[key]], 0)
            for key in INPUT_KEYS}
    _, query_outputs = encoder.sentence_vector(both, training=training)
    layer_state = self._encode(query_outputs, both)
    queries = head(layer_state)
    key_outputs = state.key_transformer(
        both, training=bool(training) and self.config.key_dropout)
    keys = tf.stop_gradient(state.key_head(self._encode(key_outputs, both)))
    if training:
      # Every replica's keys, sources then targets, for the queue.
      gathered = tf.concat([_gather_replicas(keys[:batch_size]),
                            _gather_replicas(keys[batch_size:])], 0)
      state.pending_keys.assign(tf.cast(gathered, state.pending_keys.dtype))
    queue_size = self.config.queue_size
    count = tf.identity(state.queue_count)
    if self.config.queue_fill == "hold_off":
      ready = tf.cast(count >= queue_size, tf.float32)
      valid = None
    else:
      ready = tf.constant(1.0)
      valid = tf.range(queue_size, dtype=tf.int64) < count
    return dict(source_query=queries[:batch_size],
                target_query=queries[batch_size:],
                source_key=keys[:batch_size], target_key=keys[batch_size:],
                queue=tf.identity(state.queue), queue_valid=valid,
                ready=ready, layer_state=layer_state)

  def _directions(self, outputs):
    """Eq. 6 both ways: (losses [2 * batch], hits [2 * batch])."""
    scores = [momentum_contrast.infonce_with_queue_loss(
        outputs[f"{a}_query"], outputs[f"{b}_key"], outputs["queue"],
        self.config.temperature, outputs["queue_valid"],
        self.config.normalize_embeddings)
              for a, b in (("source", "target"), ("target", "source"))]
    return (tf.concat([s[0] for s in scores], 0),
            tf.concat([s[1] for s in scores], 0))

  def compute_loss(self, features, outputs):
    del features
    losses, _ = self._directions(outputs)
    return outputs["ready"] * tf.reduce_mean(losses)

  def build_metrics(self):
    return [tf_keras.metrics.Mean(name="xlco_accuracy")]

  def update_metrics(self, metrics, features, outputs):
    _, hits = self._directions(outputs)
    metrics["xlco_accuracy"].update_state(hits)

  def dummy_features(self, batch_size: int = 1):
    ids = tf.ones([batch_size, self.tokenization.seq_length], tf.int32)
    return {f"{side}_{key}": (tf.zeros_like(ids) if key == "input_type_ids"
                              else ids)
            for side in ("source", "target") for key in INPUT_KEYS}

  # After each finite optimizer update.
  def after_update(self, encoder, head, state):
    momentum_contrast.momentum_update(
        state.paired_with(self.query_variables(encoder, head)),
        self.config.momentum)
    keys = tf.identity(state.pending_keys)
    queue, pointer = momentum_contrast.enqueue(state.queue,
                                               state.queue_pointer, keys)
    state.queue.assign(queue)
    state.queue_pointer.assign(pointer)
    state.queue_count.assign(tf.minimum(
        state.queue_count + tf.shape(keys, out_type=tf.int64)[0],
        self.config.queue_size))
    state.updates.assign_add(1)
