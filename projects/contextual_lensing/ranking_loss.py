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

Duplicates are no negatives: bitext repeats sentences (Multi30k's 29k pairs
hold about 2k repeated English captions; gettext's en-xx files repeat the
English side across 8 languages), so the same source or target text can sit
twice in a batch. A pair j that repeats row i's source or its target (equal
token ids, `duplicate_pairs`) is a translation of row i too; counting it as
a negative would push a correct match down. Such j are left out of the max
(the Ranker's `mask_duplicates`, default on; VSE++ itself has no such mask).
"""
import tensorflow as tf

from cmlm.modeling import bitext_loss


def duplicate_pairs(source_ids, target_ids, all_source_ids=None,
                    all_target_ids=None):
  """bool `[batch, candidates]`: True where candidate pair j has row i's
  source or row i's target (identical token ids `[*, seq_length]`)."""
  all_source_ids = source_ids if all_source_ids is None else all_source_ids
  all_target_ids = target_ids if all_target_ids is None else all_target_ids
  same = lambda a, b: tf.reduce_all(tf.equal(a[:, tf.newaxis, :],
                                             b[tf.newaxis, :, :]), axis=-1)
  return same(source_ids, all_source_ids) | same(target_ids, all_target_ids)


def max_violation_loss(source, target, margin=0.2, all_sources=None,
                       all_targets=None, first_positive=0, normalizer=None,
                       duplicates=None):
  """VSE++'s max-violation hinge loss, both directions, cosine similarity.

  Args:
    source: `[batch, dim]` vectors of one side (row i pairs `target` row i).
    target: `[batch, dim]` vectors of the other side.
    margin: alpha.
    all_sources, all_targets: the candidates `[global_batch, dim]`; default
      `source` and `target` themselves.
    first_positive: the candidate row of `source[0]`'s pair.
    normalizer: what the summed loss is divided by; default `batch`.
    duplicates: optional bool `[batch, candidates]` (`duplicate_pairs`):
      candidates that repeat row i's pair are no negatives of row i.

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
    excluded = tf.one_hot(positives, tf.shape(candidates)[0]) > 0
    if duplicates is not None:
      excluded |= duplicates
    violations = tf.where(excluded, tf.zeros_like(violations), violations)
    total += tf.reduce_sum(tf.reduce_max(violations, axis=1))
  if normalizer is None:
    normalizer = tf.cast(batch, tf.float32)
  return total / normalizer


def cross_replica_max_violation_loss(source, target, margin=0.2,
                                     source_ids=None, target_ids=None):
  """`max_violation_loss` with negatives from every replica, in Model
  Garden's convention (see `bitext_loss.cross_replica_additive_margin_loss`);
  given both sides' token ids, duplicated pairs anywhere in the global batch
  are no negatives."""
  with_ids = source_ids is not None and target_ids is not None
  gathered = bitext_loss.gather_pairs_across_replicas(source, target)
  if gathered is None:
    duplicates = (duplicate_pairs(source_ids, target_ids) if with_ids
                  else None)
    return max_violation_loss(source, target, margin, duplicates=duplicates)
  all_sources, all_targets, first, normalizer = gathered
  duplicates = None
  if with_ids:
    context = tf.distribute.get_replica_context()
    duplicates = duplicate_pairs(
        source_ids, target_ids, context.all_gather(source_ids, axis=0),
        context.all_gather(target_ids, axis=0))
  return max_violation_loss(source, target, margin, all_sources, all_targets,
                            first_positive=first, normalizer=normalizer,
                            duplicates=duplicates)
