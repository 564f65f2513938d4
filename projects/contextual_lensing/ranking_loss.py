"""VSE++'s max-violation hinge loss: the Ranker of contextual lensing.

Kiros et al. 2020 (section 3.1) train translation lenses with "the
margin-based loss of VSE++ (Faghri et al., 2017) which takes a max over
contrastive examples ... taken from the same minibatch". With s(a, b) the
cosine of L2-normalised vectors and margin alpha, for each positive pair
(a_i, b_i) of the batch:

  l_i = max_{j != i} [alpha - s(a_i, b_i) + s(a_i, b_j)]_+
      + max_{j != i} [alpha - s(a_i, b_i) + s(a_j, b_i)]_+

(both directions: the hardest wrong target for each source, the hardest
wrong source for each target). VSE++ sums l_i over the batch; this returns
their mean, so the learning rate does not depend on the batch size.

Negatives come from the whole global batch, as in `bitext_loss`: each
replica gathers every replica's vectors (`ReplicaContext.all_gather`).
"""
import tensorflow as tf

from cmlm.modeling import bitext_loss


def max_violation_loss(source, target, margin=0.2, all_sources=None,
                       all_targets=None, first_positive=0, normalizer=None):
  """VSE++'s max-violation hinge loss, both directions, cosine similarity.

  Args:
    source: `[batch, dim]` vectors of one side (row i pairs `target` row i).
    target: `[batch, dim]` vectors of the other side.
    margin: alpha.
    all_sources, all_targets: the candidates `[global_batch, dim]`; default
      `source` and `target` themselves.
    first_positive: the candidate row of `source[0]`'s pair.
    normalizer: what the summed loss is divided by; default `batch`.

  Returns:
    The scalar loss, float32.
  """
  source = tf.math.l2_normalize(tf.cast(source, tf.float32), axis=-1)
  target = tf.math.l2_normalize(tf.cast(target, tf.float32), axis=-1)
  all_sources = source if all_sources is None else tf.math.l2_normalize(
      tf.cast(all_sources, tf.float32), axis=-1)
  all_targets = target if all_targets is None else tf.math.l2_normalize(
      tf.cast(all_targets, tf.float32), axis=-1)
  batch = tf.shape(source)[0]
  positives = first_positive + tf.range(batch)  # [batch]
  positive_scores = tf.reduce_sum(source * target, axis=-1)  # s(a_i, b_i)
  total = 0.0
  for queries, candidates in ((source, all_targets), (target, all_sources)):
    scores = tf.matmul(queries, candidates, transpose_b=True)  # [batch, global]
    violations = tf.nn.relu(margin - positive_scores[:, tf.newaxis] + scores)
    is_positive = tf.one_hot(positives, tf.shape(candidates)[0]) > 0
    violations = tf.where(is_positive, tf.zeros_like(violations), violations)
    total += tf.reduce_sum(tf.reduce_max(violations, axis=1))
  if normalizer is None:
    normalizer = tf.cast(batch, tf.float32)
  return total / normalizer


def cross_replica_max_violation_loss(source, target, margin=0.2):
  """`max_violation_loss` with negatives from every replica, in Model
  Garden's convention (see `bitext_loss.cross_replica_additive_margin_loss`)."""
  gathered = bitext_loss.gather_pairs_across_replicas(source, target)
  if gathered is None:
    return max_violation_loss(source, target, margin)
  all_sources, all_targets, first, normalizer = gathered
  return max_violation_loss(source, target, margin, all_sources, all_targets,
                            first_positive=first, normalizer=normalizer)
