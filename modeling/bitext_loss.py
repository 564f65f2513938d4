"""Bitext retrieval with additive margin softmax (paper section 4.2).

L_br = L_s + L_t. For source sentence s_i the candidates are all targets t_j
of the batch, and the positive pair's score is lowered by the margin m:

  L_s = -1/B sum_i log  e^{c(phi(s_i,t_i) - m)} /
                        (e^{c(phi(s_i,t_i) - m)} + sum_{j != i} e^{c phi(s_i,t_j)})

L_t normalises over sources instead (the paper's footnote 4). phi is the
inner product of the sentence vectors; by default they are L2-normalised first
(cosine, as in the AMS dual encoder of Yang et al. 2019b that section 4.2
cites), with c the logit scale.

Negatives come from the whole global batch: under a distribution strategy each
replica gathers every replica's embeddings (`ReplicaContext.all_gather`, which
is differentiable), scores its own rows against all of them, and the replicas'
losses add up to the single-device loss on the global batch.
"""
import tensorflow as tf
import tf_keras


def additive_margin_logits(queries, candidates, positives, margin, scale):
  """c * (phi(q_i, k_j) - m [j is q_i's positive]): `[batch, candidates]`."""
  margins = margin * tf.one_hot(positives, tf.shape(candidates)[0])
  return scale * (tf.matmul(queries, candidates, transpose_b=True) - margins)


def additive_margin_loss(source, target, margin=0.3, scale=10.0,
                         normalize=True, all_sources=None, all_targets=None,
                         first_positive=0, normalizer=None):
  """Bidirectional additive-margin softmax loss L_s + L_t.

  Args:
    source: `[batch, dim]` sentence vectors of the source sentences.
    target: `[batch, dim]` those of their translations (row i pairs row i).
    margin: m, subtracted from the positive pair's score phi(s_i, t_i).
    scale: c, the logit scale.
    normalize: L2-normalise the vectors so that phi is the cosine.
    all_sources, all_targets: the candidates, `[global_batch, dim]`; default
      `source` and `target` themselves (one replica).
    first_positive: the candidate row of `source[0]`'s translation (a
      replica's offset in the global batch).
    normalizer: what the summed loss is divided by; default `batch`.

  Returns:
    The scalar loss, float32.
  """
  source = tf.cast(source, tf.float32)
  target = tf.cast(target, tf.float32)
  all_sources = source if all_sources is None else tf.cast(all_sources,
                                                           tf.float32)
  all_targets = target if all_targets is None else tf.cast(all_targets,
                                                           tf.float32)
  if normalize:
    source, target, all_sources, all_targets = (
        tf.math.l2_normalize(x, axis=-1)
        for x in (source, target, all_sources, all_targets))
  batch = tf.shape(source)[0]
  positives = first_positive + tf.range(batch)  # [batch]
  total = 0.0
  # L_s ranks all targets for each source; L_t all sources for each target.
  for queries, candidates in ((source, all_targets), (target, all_sources)):
    # [batch, global_batch]
    logits = additive_margin_logits(queries, candidates, positives, margin,
                                    scale)
    total += tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=positives, logits=logits))
  if normalizer is None:
    normalizer = tf.cast(batch, tf.float32)
  return total / normalizer


def cross_replica_additive_margin_loss(source, target, margin=0.3,
                                       scale=10.0, normalize=True):
  """`additive_margin_loss` with negatives from every replica.

  Returns this replica's share in Model Garden's convention: the replicas'
  values average to the loss on the global batch, and the gradients of
  value / num_replicas add up to its gradient.
  """
  gathered = gather_pairs_across_replicas(source, target)
  if gathered is None:
    return additive_margin_loss(source, target, margin, scale, normalize)
  all_sources, all_targets, first, normalizer = gathered
  return additive_margin_loss(
      source, target, margin, scale, normalize, all_sources, all_targets,
      first_positive=first, normalizer=normalizer)


def gather_pairs_across_replicas(source, target):
  """Every replica's pairs, for losses that rank across the global batch.

  Returns None outside a multi-replica context; else `(all_sources,
  all_targets, first, normalizer)`: the gathered `[global_batch, dim]`
  vectors (`all_gather` is differentiable), the global index of this
  replica's first pair, and the divisor that puts a sum over this replica's
  pairs in Model Garden's convention (global batch / replicas).
  """
  context = tf.distribute.get_replica_context()
  if context is None or context.num_replicas_in_sync == 1:
    return None
  all_sources = context.all_gather(source, axis=0)
  all_targets = context.all_gather(target, axis=0)
  # Replicas hold equal slices (drop_remainder batches), in replica order.
  first = context.replica_id_in_sync_group * tf.shape(source)[0]
  global_batch = tf.cast(tf.shape(all_sources)[0], tf.float32)
  return (all_sources, all_targets, first,
          global_batch / context.num_replicas_in_sync)


@tf_keras.utils.register_keras_serializable(package="cmlm")
class AdditiveMarginBitextLoss(tf_keras.layers.Layer):
  """Keras layer form of the bitext retrieval loss, across replicas.

  `layer(source_vectors, target_vectors)` returns L_br for this replica as in
  `cross_replica_additive_margin_loss`.
  """

  def __init__(self, margin=0.3, scale=10.0, normalize=True, **kwargs):
    super().__init__(**kwargs)
    self.margin, self.scale, self.normalize = margin, scale, normalize

  def call(self, source, target):
    return cross_replica_additive_margin_loss(
        source, target, self.margin, self.scale, self.normalize)

  def get_config(self):
    return dict(super().get_config(), margin=self.margin, scale=self.scale,
                normalize=self.normalize)
