"""Unsupervised SimCSE's contrastive loss (CMLM-CSE paper eq. 1 and 4).

Each sentence x_i of a batch is encoded twice with independent dropout masks,
giving h_i and h_i^+. With sim the cosine and tau the temperature,

  l_i = -log  e^{sim(h_i, h_i^+)/tau} / sum_j e^{sim(h_i, h_j^+)/tau}

(eq. 4; eq. 1 for any positive pair), averaged over the batch as in
princeton-nlp/SimCSE's `cl_forward` (cross-entropy over the N x N cosine
matrix, the diagonal as labels). The candidates h_j^+ come from the whole
global batch: under a distribution strategy each replica gathers every
replica's second views (`ReplicaContext.all_gather`, differentiable) and its
labels are offset by its position in the global batch, so the replicas'
losses add up to the single-device loss (and gradient) on the global batch.

Two rows that hold the same sentence must not be each other's negative (their
views are positives in all but name): such candidates are masked out of the
softmax (`same_sentence`). All of it runs in float32.
"""
import tensorflow as tf

NEGATIVE_INFINITY_LOGIT = -1e9  # exp() of it is 0 in float32


def cosine_logits(queries, candidates, temperature):
  """sim(q_i, k_j) / tau, `[queries, candidates]`, float32."""
  queries = tf.math.l2_normalize(tf.cast(queries, tf.float32), axis=-1)
  candidates = tf.math.l2_normalize(tf.cast(candidates, tf.float32), axis=-1)
  return tf.matmul(queries, candidates, transpose_b=True) / temperature


def same_sentence_mask(sentence_ids, all_sentence_ids):
  """True where row i and candidate j hold identical token ids.

  Args:
    sentence_ids: `[batch, seq_length]` token ids of this batch's sentences.
    all_sentence_ids: `[candidates, seq_length]` those of the candidates.
  Returns:
    bool `[batch, candidates]`.
  """
  equal = tf.equal(sentence_ids[:, tf.newaxis, :],
                   all_sentence_ids[tf.newaxis, :, :])
  return tf.reduce_all(equal, axis=-1)


def simcse_loss(view_a, view_b, temperature=0.05, all_view_b=None,
                first_positive=0, same_sentence=None, normalizer=None):
  """The SimCSE loss (eq. 4) of the rows of `view_a` against `all_view_b`.

  Args:
    view_a: `[batch, dim]` h_i, the first dropout view of each sentence.
    view_b: `[batch, dim]` h_i^+, the second view (row i pairs row i).
    temperature: tau (SimCSE and CMLM-CSE: 0.05).
    all_view_b: `[global_batch, dim]` the candidates h_j^+; default `view_b`.
    first_positive: the candidate row of `view_a[0]`'s positive (a replica's
      offset in the global batch: replica id x per-replica batch).
    same_sentence: optional bool `[batch, candidates]`, True where candidate
      j holds the same sentence as row i; those candidates other than the
      positive are left out of the softmax (duplicates are no negatives).
    normalizer: what the summed loss is divided by; default `batch`.

  Returns:
    The scalar float32 loss.
  """
  all_view_b = view_b if all_view_b is None else all_view_b
  logits = cosine_logits(view_a, all_view_b, temperature)  # [batch, global]
  batch = tf.shape(logits)[0]
  positives = first_positive + tf.range(batch)  # [batch]
  if same_sentence is not None:
    is_positive = tf.cast(tf.one_hot(positives, tf.shape(logits)[1]),
                          tf.bool)
    duplicate = tf.logical_and(same_sentence, tf.logical_not(is_positive))
    logits = tf.where(duplicate, NEGATIVE_INFINITY_LOGIT, logits)
  total = tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=positives, logits=logits))
  if normalizer is None:
    normalizer = tf.cast(batch, tf.float32)
  return total / normalizer


def cross_replica_simcse_loss(view_a, view_b, temperature=0.05,
                              sentence_ids=None):
  """`simcse_loss` with the second views of every replica as candidates.

  Args:
    view_a, view_b: this replica's `[batch, dim]` views.
    temperature: tau.
    sentence_ids: optional `[batch, seq_length]` token ids; rows with equal
      ids anywhere in the global batch are not each other's negatives.

  Returns:
    This replica's share in Model Garden's convention: the replicas' values
    average to the loss on the global batch, and the gradients of
    value / num_replicas add up to its gradient.
  """
  context = tf.distribute.get_replica_context()
  if context is None or context.num_replicas_in_sync == 1:
    same = (None if sentence_ids is None else
            same_sentence_mask(sentence_ids, sentence_ids))
    return simcse_loss(view_a, view_b, temperature, same_sentence=same)
  replicas = context.num_replicas_in_sync
  all_view_b = context.all_gather(tf.cast(view_b, tf.float32), axis=0)
  same = None
  if sentence_ids is not None:
    all_ids = context.all_gather(sentence_ids, axis=0)
    same = same_sentence_mask(sentence_ids, all_ids)
  local_batch = tf.shape(view_a)[0]
  # Replicas hold equal slices (drop_remainder batches), in replica order.
  first = context.replica_id_in_sync_group * local_batch
  global_batch = tf.cast(tf.shape(all_view_b)[0], tf.float32)
  return simcse_loss(view_a, view_b, temperature, all_view_b,
                     first_positive=first, same_sentence=same,
                     normalizer=global_batch / replicas)


def retrieval_hits(view_a, view_b):
  """Whether each h_i's nearest second view (cosine) is its own: `[batch]`."""
  logits = cosine_logits(view_a, view_b, 1.0)
  return tf.equal(tf.argmax(logits, axis=1, output_type=tf.int32),
                  tf.range(tf.shape(logits)[0]))
