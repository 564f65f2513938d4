"""Momentum contrast for XLCo (InfoXLM, Chi et al. 2021, section 3.3, eq. 6).

Plain functions, testable without a model:
  * `infonce_with_queue_loss`: eq. 6, InfoNCE of each query against its
    positive key and a queue of past keys (the set N of eq. 4);
  * `enqueue`: the queue as a FIFO ring buffer, returned as a new tensor so
    that the caller *assigns* the whole queue (never a scatter on a mirrored
    variable);
  * `momentum_update`: theta_K <- m theta_K + (1 - m) theta_Q (MoCo, He et
    al. 2019), used by the XLCo objective's `after_update` hook, over the
    (key, query) pairs of `pair_by_name`: a key variable is matched with
    the query variable of the same name (its path below its layer), never by
    list position, as the query, key and value kernels of a layer share one
    shape and a mis-ordered list would pass a shape check.

Paper vs reference code (microsoft/unilm `infoxlm/.../criterions/xlco.py`):
eq. 5/6 write exp(q^T k); the code divides the unnormalised dot products by a
softmax temperature (`--xlco_softmax_tau` 0.25). We follow the code (the
temperature is a parameter; 1.0 gives the paper's formula) and offer L2
normalisation as an option (off by default, as in both).
"""
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import tensorflow as tf

# Logit given to queue slots not yet filled (`queue_valid`): exp() of it is 0
# in float32, and it stays finite.
_EMPTY_SLOT_LOGIT = -1e9


def infonce_with_queue_loss(queries: tf.Tensor, keys: tf.Tensor,
                            queue: tf.Tensor, temperature: float = 0.25,
                            queue_valid: Optional[tf.Tensor] = None,
                            normalize: bool = False
                            ) -> Tuple[tf.Tensor, tf.Tensor]:
  """Eq. 6: -log exp(q.k+/t) / (exp(q.k+/t) + sum_queue exp(q.k-/t)).

  Args:
    queries: `[batch, dim]` query encodings g_Q(c1) (gradients flow).
    keys: `[batch, dim]` the positive keys g_K(c2), row i for query i; no
      gradient reaches them.
    queue: `[queue_size, dim]` past keys, the negatives (no gradient).
    temperature: the softmax temperature t (the code's 0.25; 1 = the paper).
    queue_valid: optional bool `[queue_size]`; False slots are left out of
      the softmax (a queue still filling up).
    normalize: L2-normalise queries, keys and queue first (cosine logits).

  Returns:
    (per-example losses `[batch]` float32, per-example hits `[batch]`
    float32: 1 where the positive key scores above every negative).
  """
  queries = tf.cast(queries, tf.float32)
  keys = tf.stop_gradient(tf.cast(keys, tf.float32))
  queue = tf.stop_gradient(tf.cast(queue, tf.float32))
  if normalize:
    queries = tf.math.l2_normalize(queries, axis=-1)
    keys = tf.math.l2_normalize(keys, axis=-1)
    queue = tf.math.l2_normalize(queue, axis=-1)
  positive = tf.reduce_sum(queries * keys, axis=-1, keepdims=True)  # [b, 1]
  negative = tf.matmul(queries, queue, transpose_b=True)  # [b, queue_size]
  if queue_valid is not None:
    negative = tf.where(queue_valid[tf.newaxis, :], negative,
                        _EMPTY_SLOT_LOGIT * temperature)
  logits = tf.concat([positive, negative], axis=1) / temperature
  labels = tf.zeros([tf.shape(logits)[0]], tf.int32)  # the positive: column 0
  losses = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
  hits = tf.cast(tf.equal(tf.argmax(logits, axis=1, output_type=tf.int32), 0),
                 tf.float32)
  return losses, hits


def enqueue(queue: tf.Tensor, pointer: tf.Tensor, keys: tf.Tensor
            ) -> Tuple[tf.Tensor, tf.Tensor]:
  """Writes `keys` into the ring buffer `queue` from slot `pointer` on.

  The oldest keys are overwritten first; writing wraps around the end (as
  the reference code's `update_queue`). `keys` must not outnumber the slots.

  Returns:
    (the new queue `[queue_size, dim]`, the new pointer: the next slot).
  """
  size = tf.shape(queue, out_type=tf.int64)[0]
  count = tf.shape(keys, out_type=tf.int64)[0]
  pointer = tf.cast(pointer, tf.int64)
  slots = (pointer + tf.range(count, dtype=tf.int64)) % size  # [count]
  new_queue = tf.tensor_scatter_nd_update(
      queue, slots[:, tf.newaxis], tf.cast(keys, queue.dtype))
  return new_queue, (pointer + count) % size


def named_variables(parts: Mapping[str, object]) -> Dict[str, tf.Variable]:
  """`{"<part>/<path below the layer>": variable}` of layers (or modules)
  `{part: layer}`: `transformer/layer_0/self_attention/query/kernel`. The
  layer's own name is left out, so a copy of a layer under another name
  pairs with it."""
  named = {}
  for part, layer in parts.items():
    prefix = f"{layer.name}/"
    for variable in layer.weights:
      name = variable.name.split(":")[0]
      name = name[len(prefix):] if name.startswith(prefix) else name
      key = f"{part}/{name}"
      if key in named:
        raise ValueError(f"Two variables of {part} are named {name!r}; the "
                         "momentum update pairs variables by name.")
      named[key] = variable
  return named


def pair_by_name(key_variables: Mapping[str, tf.Variable],
                 query_variables: Mapping[str, tf.Variable]
                 ) -> List[Tuple[tf.Variable, tf.Variable]]:
  """(key, query) pairs of the variables of the same name, in name order;
  one clear error when the names or a pair's shapes differ."""
  missing = sorted(set(query_variables) - set(key_variables))
  extra = sorted(set(key_variables) - set(query_variables))
  if missing or extra:
    raise ValueError(
        "The key encoder and the query encoder differ: "
        + "; ".join(part for part in (
            f"no key for {', '.join(missing[:3])}" if missing else "",
            f"no query for {', '.join(extra[:3])}" if extra else "") if part)
        + ".")
  pairs = []
  for name in sorted(key_variables):
    key, query = key_variables[name], query_variables[name]
    if key.shape != query.shape:
      raise ValueError(f"Key variable {name} {key.shape} does not match its "
                       f"query variable {query.shape}.")
    pairs.append((key, query))
  return pairs


def momentum_update(pairs: Sequence[Tuple[tf.Variable, tf.Variable]],
                    momentum) -> None:
  """theta_K <- m theta_K + (1 - m) theta_Q for each (key, query) pair of
  `pair_by_name` (section 3.3).

  m = 0 makes the key encoder the query encoder after every update (the
  "-Momentum" ablation of table 7).
  """
  for key, query in pairs:
    key.assign(momentum * key + (1.0 - momentum) * tf.cast(query, key.dtype))
