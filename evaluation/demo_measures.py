"""What the demo measures: does CMLM teach the encoder anything?

* The conditioning gain (sections 2-3): the held-out MLM loss of s2 given a
  random *other* s1 minus the loss given its own s1, in nats per masked
  token, with a bootstrap 95% interval over held-out pairs. The other s1
  comes from a permutation across the whole held-out set (never the pair's
  own s1, nor an identical text); the same gain is also measured with the
  other s1 drawn from the same source text and from another source. Masks
  are the same in both conditions, so only the sentence vector differs.
* Next-sentence retrieval: the rank of each held-out pair's s2 among all
  held-out s2 by cosine with its s1, read as top-1 and top-10 accuracy, mean
  reciprocal rank (with a paired bootstrap interval of its gain between two
  encoders) and median rank.
* STS-B dev Spearman (table 2's zero-shot STS), through `sts`.

The intervals are `statistics`' paired bootstrap.
"""
import copy
import os
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from cmlm.data_pipelines import cmlm_dataloader
from cmlm.data_pipelines import corpus
from cmlm.evaluation import runner
from cmlm.evaluation import statistics
from cmlm.evaluation import sts
from cmlm.evaluation import sts_readers

# Shipped in data/ (cmlm/data/ when installed), CC BY-SA 4.0: its SOURCE.txt.
STSB_DEV = os.path.join(runner.REPO_ROOT, "data", "sts_b_dev", "sts-dev.csv")
Features = Dict[str, np.ndarray]


def corpus_sources(input_path: str) -> List[str]:
  """The corpus' source texts: each entry of a directory (a file or a folder
  of files), or each comma-separated part of the path spec."""
  if os.path.isdir(input_path):
    return [os.path.join(input_path, name)
            for name in sorted(os.listdir(input_path))
            if name not in corpus.METADATA_FILE_NAMES]
  return [part for part in input_path.split(",") if part.strip()]


def heldout_pairs(data_config, tokenization_config, vocab=None
                  ) -> Tuple[List[Tuple[str, str]], Features, np.ndarray]:
  """Every held-out pair of every source: texts, CMLM features (s1 first,
  never swapped, masks seeded) and each pair's source index. `vocab`: the
  tokenization's vocabulary file, already read (`PreparedRun.vocab`)."""
  texts, batches, sources = [], [], []
  for index, source in enumerate(corpus_sources(data_config.input_path)):
    config = copy.deepcopy(data_config)
    config.input_path, config.swap_order_probability = source, 0.0
    config.is_training, config.drop_remainder = False, False
    config.seed = config.seed if config.seed is not None else 1
    try:
      pairs = cmlm_dataloader.text_pairs(config, tokenization_config,
                                         vocab)[0]
    except corpus.CorpusError:
      continue  # no held-out document with two sentences
    texts.extend(pairs)
    sources.extend([index] * len(pairs))
    batches.extend(cmlm_dataloader.build_cmlm_dataset(
        config, tokenization_config, vocab=vocab).as_numpy_iterator())
  if not texts:
    raise corpus.CorpusError(
        f"{data_config.input_path} holds no held-out pair (no held-out "
        "document of two sentences or more); the demo measures on those.")
  features = {key: np.concatenate([b[key] for b in batches])
              for key in cmlm_dataloader.FEATURE_KEYS}
  return texts, features, np.asarray(sources)


def per_pair_mlm_loss(mlm_logits: Callable[[Dict[str, tf.Tensor]], tf.Tensor],
                      features: Features, batch_size: int = 128
                      ) -> Tuple[np.ndarray, np.ndarray]:
  """Summed masked-token cross entropy and masked-token count per pair."""
  sums, counts = [], []
  for begin in range(0, len(features["masked_lm_ids"]), batch_size):
    batch = {k: tf.constant(v[begin:begin + batch_size])
             for k, v in features.items()}
    logits = tf.cast(mlm_logits(batch), tf.float32)  # [batch, P, vocab]
    weights = batch["masked_lm_weights"]
    entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(
        batch["masked_lm_ids"], logits)
    sums.append(tf.reduce_sum(entropy * weights, axis=1).numpy())
    counts.append(tf.reduce_sum(weights, axis=1).numpy())
  return np.concatenate(sums), np.concatenate(counts)


def other_s1(s1_ids: np.ndarray, sources: np.ndarray, rng: np.random.Generator,
             which: str = "any") -> Optional[np.ndarray]:
  """For each pair, the index of another pair whose s1 it gets instead.

  `which`: "any" (a permutation across the whole set), "same" (from the same
  source) or "other" (from another source). Never the pair itself nor an s1
  identical to its own. None when no such s1 exists for some pair.
  """
  keys = np.array([hash(row.tobytes()) for row in s1_ids])
  n = len(keys)

  def valid(i, j):
    same = sources[i] == sources[j]
    return keys[i] != keys[j] and (which == "any" or
                                   same == (which == "same"))
  order = rng.permutation(n)
  if which == "same":  # a permutation within each source
    order = np.arange(n)
    for source in np.unique(sources):
      members = np.flatnonzero(sources == source)
      order[members] = rng.permutation(members)
  for _ in range(20):  # swap the conflicts away
    bad = [i for i in range(n) if not valid(i, order[i])]
    if not bad:
      return order
    for i in bad:
      k = rng.integers(n)
      if valid(i, order[k]) and valid(k, order[i]):
        order[i], order[k] = order[k], order[i]
  for i in range(n):  # the few left: any valid one
    if not valid(i, order[i]):
      choices = [j for j in range(n) if valid(i, j)]
      if not choices:
        return None
      order[i] = rng.choice(choices)
  return order


def with_s1_of(features: Features, order: np.ndarray) -> Features:
  """The features with pair i's s1 replaced by pair order[i]'s."""
  return {k: (v[order] if k.startswith("s1_") else v)
          for k, v in features.items()}


def paired_gain(own: np.ndarray, other: np.ndarray, counts: np.ndarray,
                rng: np.random.Generator,
                resamples: int = statistics.RESAMPLES
                ) -> Tuple[float, Tuple[float, float]]:
  """Mean gain per masked token (other - own), and its paired bootstrap 95%
  interval over pairs (pairs resampled with replacement)."""
  difference = other - own
  gain = float(difference.sum() / counts.sum())

  def resampled_gain(_, pairs):
    return difference[pairs].sum() / np.maximum(counts[pairs].sum(), 1)
  draws = statistics.bootstrap_draws(resampled_gain, 1, len(counts), rng,
                                     resamples, examples_drawn="indices")
  return gain, statistics.percentile_interval(draws)


def conditioning_gain(mlm_logits, features: Features, sources: np.ndarray,
                      seed: int = 0) -> Dict[str, object]:
  """The held-out loss with its own s1 and the gain over other s1 (random,
  same source, other source), each with a bootstrap 95% interval."""
  rng = np.random.default_rng(seed)
  own, counts = per_pair_mlm_loss(mlm_logits, features)
  result = {"heldout_mlm_loss": float(own.sum() / counts.sum()),
            "heldout_pairs": int(len(counts))}
  for which, key in (("any", "conditioning_gain"),
                     ("same", "conditioning_gain_same_source"),
                     ("other", "conditioning_gain_other_source")):
    order = other_s1(features["s1_input_word_ids"], sources, rng, which)
    if order is None:
      result[key], result[key + "_ci95"] = None, None
      continue
    other, _ = per_pair_mlm_loss(mlm_logits, with_s1_of(features, order))
    result[key], result[key + "_ci95"] = paired_gain(own, other, counts, rng)
  return result


def retrieval_ranks(embed: Callable[[Sequence[str]], np.ndarray],
                    pairs: Sequence[Tuple[str, str]]) -> np.ndarray:
  """The rank (1 = first) of each pair's s2 among all held-out s2 texts,
  ordered by cosine with its s1 (`embed` gives L2-normalised vectors).

  Candidates scored equal to the true s2 share their places (the mean rank
  under a random order among them), so an encoder that gives every text the
  same vector ranks at chance, not first.
  """
  candidates = sorted({s2 for _, s2 in pairs})
  index = {text: i for i, text in enumerate(candidates)}
  similarity = embed([s1 for s1, _ in pairs]) @ embed(candidates).T
  targets = np.array([index[s2] for _, s2 in pairs])
  own = similarity[np.arange(len(targets)), targets][:, None]
  above = np.sum(similarity > own, axis=1)
  level = np.sum(similarity == own, axis=1) - 1  # the true s2 itself left out
  return 1 + above + level / 2


def retrieval_measures(ranks: np.ndarray) -> Dict[str, float]:
  """Top-1 and top-10 accuracy, mean reciprocal rank and median rank.

  Top-1 among a few hundred candidate sequences is near its floor for a
  small model (one pair is 0.4 points of 273, and TF-IDF finds 4.8% on the
  embedded corpus, docs/cmlm_results.md); the reciprocal rank and the median rank see
  every pair move, not only those that reach the top.
  """
  return {"retrieval_top1": float(np.mean(ranks == 1)),
          "retrieval_top10": float(np.mean(ranks <= 10)),
          "retrieval_mrr": float(np.mean(1.0 / ranks)),
          "retrieval_median_rank": float(np.median(ranks))}


def retrieval_gain(ranks_before: np.ndarray, ranks_after: np.ndarray,
                   seed: int = 0) -> Tuple[float, Tuple[float, float]]:
  """The mean reciprocal rank after minus before, with a paired bootstrap
  95% interval over pairs (the same pairs, ranked by two encoders)."""
  return paired_gain(1.0 / ranks_before, 1.0 / ranks_after,
                     np.ones(len(ranks_before)), np.random.default_rng(seed))


def stsb_dev_spearman(embed: Callable[[Sequence[str]], np.ndarray],
                      path: str = STSB_DEV) -> Optional[float]:
  """STS-B dev Spearman x 100 (zero-shot cosine), or None without the file
  (`path`: STS-B's tab-separated layout; default the copy in data/)."""
  if not os.path.exists(path):
    return None
  pairs = sts_readers.read_sts_benchmark(path)
  encoder = lambda sentences, batch_size=256: embed(sentences)
  return sts.evaluate_pairs(encoder, pairs)["spearman"]
