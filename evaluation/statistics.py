"""The garden's statistics: the one Spearman, the one bootstrap, intervals.

* Rank and linear correlation x 100 (`spearman_times_100`,
  `pearson_times_100`): STS, the evidence protocol and the encode benchmark.
* The paired bootstrap (`bootstrap_draws`) and its percentile interval
  (`percentile_interval`): the evidence protocol's difference over seeds and
  examples, and the demo's gains over held-out pairs.
* The t-interval over seeds of per-seed differences (`t_interval`): mean
  +- t_{0.975, n-1} sd / sqrt(n), the interval the evidence protocol reads
  its verdicts from (seeds are the unit of replication), and the same
  test's two-sided p-value (`paired_t_p`).
* Holm's step-down adjustment of a family of p-values (`holm`): a claim's
  measures for one arm against its control are one family.
* The evidence protocol's samples (one measure of one arm and seed) and
  their statistic, the sign test across seeds and the paired difference of
  two arms (`paired_difference`). A sample is a dict:
    {"kind": "mean", "values": [...], "scale": s}: per-example values, the
      statistic is their mean times `scale` (accuracy credits, reciprocal
      ranks);
    {"kind": "spearman", "predicted": [...], "gold": [...]}: Spearman x 100
      of per-pair similarities against gold scores (STS);
    {"kind": "scalar", "value": x}: one number (no per-example resampling).
"""
from typing import Callable, Dict, Mapping, Optional, Sequence, Tuple

import numpy as np

RESAMPLES = 2000


def _stats():
  """scipy.stats, imported on first use: every command loads this module
  through the registry (the evaluation tasks), few compute a statistic, and
  scipy.stats alone takes about half a second of each command's start."""
  from scipy import stats  # pylint: disable=g-import-not-at-top
  return stats


def spearman_times_100(predicted: np.ndarray, gold: np.ndarray,
                       ties: str = "average") -> float:
  """Spearman's rho x 100; NaN when either side is constant.

  `ties`: "average" gives tied values their mean rank (scipy's, SentEval's);
  "sort order" ranks by `np.argsort`, which breaks ties in its own order
  (the encode benchmark's figure, kept so that it stays comparable with the
  figures it published).
  """
  if len(gold) < 2 or np.ptp(predicted) == 0 or np.ptp(gold) == 0:
    return float("nan")
  if ties == "average":
    return 100.0 * float(_stats().spearmanr(predicted, gold).statistic)
  if ties == "sort order":
    rank = lambda x: np.argsort(np.argsort(x)).astype(np.float64)
    return 100.0 * float(np.corrcoef(rank(predicted), rank(gold))[0, 1])
  raise ValueError(f"ties must be 'average' or 'sort order', got {ties!r}.")


def pearson_times_100(predicted: np.ndarray, gold: np.ndarray) -> float:
  """Pearson's r x 100; NaN when either side is constant."""
  if len(gold) < 2 or np.ptp(predicted) == 0 or np.ptp(gold) == 0:
    return float("nan")
  return 100.0 * float(_stats().pearsonr(predicted, gold).statistic)


def bootstrap_draws(difference: Callable[[np.ndarray, Optional[np.ndarray]],
                                         float],
                    seeds: int, examples: int, rng: np.random.Generator,
                    resamples: int = RESAMPLES,
                    examples_drawn: str = "counts") -> np.ndarray:
  """[resamples] bootstrap draws of a paired difference.

  Each resample draws `seeds` seeds with replacement (a single seed draws
  nothing) and, when there are `examples`, as many examples with
  replacement; both sides of the difference see the same draws (paired).
  `difference(chosen seeds, drawn examples)` is one resample's figure, the
  examples None without examples, else, by `examples_drawn`:
    "counts": how often each example is drawn [examples], one multinomial
      draw per resample after its seeds (the evidence protocol's);
    "indices": the drawn examples' indices [examples], every resample's
      drawn at once before the first (the demo's).
  The two are the same resampling; each keeps its random stream so that
  the intervals already reported reproduce.
  """
  if examples_drawn not in ("counts", "indices"):
    raise ValueError("examples_drawn must be 'counts' or 'indices', got "
                     f"{examples_drawn!r}.")
  picks = None
  if examples and examples_drawn == "indices":
    picks = rng.integers(0, examples, size=[resamples, examples])
  draws = []
  for b in range(resamples):
    chosen = rng.integers(seeds, size=seeds)
    if not examples:
      drawn = None
    elif picks is not None:
      drawn = picks[b]
    else:
      drawn = rng.multinomial(examples, np.full(examples, 1.0 / examples))
    draws.append(difference(chosen, drawn))
  return np.array(draws)  # the figures' own dtype, float32 included


def percentile_interval(draws: np.ndarray,
                        tails: Tuple[float, float] = (0.025, 0.975),
                        omit_nan: bool = False) -> Tuple[float, float]:
  """The `tails` quantiles of bootstrap draws (default: the 95% interval).
  `omit_nan` leaves NaN draws out (a resample's Spearman with a constant
  side); otherwise one NaN draw makes the interval NaN."""
  quantile = np.nanquantile if omit_nan else np.quantile
  low, high = quantile(draws, list(tails))
  return float(low), float(high)


def t_interval(differences: Sequence[float], confidence: float = 0.95
               ) -> Dict[str, object]:
  """The Student t confidence interval of the mean of per-seed differences.

  mean +- t_{(1+confidence)/2, n-1} * sd / sqrt(n), sd the sample standard
  deviation (ddof 1): each seed is one independent replication of the whole
  run, so this is the interval of the difference a new seed would average
  to. With 3 seeds t_{0.975, 2} = 4.303, so the interval is wide: that is
  what 3 seeds can tell. Fewer than 2 seeds: no interval (None).
  """
  values = np.asarray([float(d) for d in differences], np.float64)
  n = len(values)
  if n < 2:
    return {"mean": float(values.mean()) if n else float("nan"),
            "interval": None, "confidence": confidence, "seeds": n,
            "sd": None, "t": None}
  mean, sd = float(values.mean()), float(values.std(ddof=1))
  t = float(_stats().t.ppf((1 + confidence) / 2, n - 1))
  half = float(t * sd / np.sqrt(n))
  return {"mean": mean, "interval": [mean - half, mean + half],
          "confidence": confidence, "seeds": n, "sd": sd, "t": t}


def paired_t_p(differences: Sequence[float]) -> Optional[float]:
  """The two-sided p-value of the paired t-test over seeds: t = mean /
  (sd / sqrt(n)) of the per-seed differences, n - 1 degrees of freedom (the
  test whose 95% interval is `t_interval`: p < 0.05 exactly when that
  interval excludes 0). Fewer than 2 seeds: None. Every difference the same:
  0 when that value is not 0, else 1."""
  values = np.asarray([float(d) for d in differences], np.float64)
  n = len(values)
  if n < 2:
    return None
  mean, sd = float(values.mean()), float(values.std(ddof=1))
  if sd == 0:
    return 1.0 if mean == 0 else 0.0
  t = mean / (sd / np.sqrt(n))
  return float(2 * _stats().t.sf(abs(t), n - 1))


def holm(p_values: Sequence[Optional[float]]) -> list:
  """Holm-Bonferroni adjusted p-values of one family, in the given order.

  Sorted ascending, the i-th smallest of m (i from 0) is multiplied by
  m - i, each adjusted value is the running maximum of those products
  (step-down: a value is never below a smaller p's) and capped at 1. A
  hypothesis is rejected at level alpha when its adjusted p < alpha; this
  holds the chance of any false rejection in the family at alpha. A None
  (no test: one seed) is counted in the family as p = 1 and stays None.
  """
  filled = [1.0 if p is None else float(p) for p in p_values]
  m = len(filled)
  adjusted = [0.0] * m
  running = 0.0
  for rank, index in enumerate(sorted(range(m), key=lambda i: filled[i])):
    running = max(running, min(1.0, (m - rank) * filled[index]))
    adjusted[index] = running
  return [None if p is None else a for p, a in zip(p_values, adjusted)]


def sign_test(differences: Sequence[float]) -> Tuple[int, int, float]:
  """(seeds with a positive difference, seeds with a non-zero one, exact
  two-sided sign-test p)."""
  nonzero = [d for d in differences if d != 0]
  positive = sum(d > 0 for d in nonzero)
  if not nonzero:
    return 0, 0, 1.0
  p = _stats().binomtest(positive, len(nonzero), 0.5).pvalue
  return positive, len(nonzero), float(p)


def summarize(values: Sequence[float]) -> Dict[str, object]:
  """Mean and sample standard deviation over seeds."""
  values = [float(v) for v in values]
  std = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
  return {"mean": float(np.mean(values)), "std": std, "per_seed": values}


# The evidence protocol's samples and their statistic.

def mean_sample(values, scale: float = 1.0) -> dict:
  return {"kind": "mean", "values": [float(v) for v in values],
          "scale": scale}


def spearman_sample(predicted, gold) -> dict:
  return {"kind": "spearman", "predicted": [float(v) for v in predicted],
          "gold": [float(v) for v in gold]}


def scalar_sample(value: float) -> dict:
  return {"kind": "scalar", "value": float(value)}


def sample_size(sample: Mapping) -> int:
  """Examples in a sample (0 for a scalar)."""
  if sample["kind"] == "mean":
    return len(sample["values"])
  if sample["kind"] == "spearman":
    return len(sample["gold"])
  return 0


def statistic(sample: Mapping, counts: Optional[np.ndarray] = None) -> float:
  """The sample's figure; `counts` [examples] resamples it (bootstrap)."""
  kind = sample["kind"]
  if kind == "scalar":
    return float(sample["value"])
  if kind == "mean":
    values = np.asarray(sample["values"], np.float64)
    weights = np.ones_like(values) if counts is None else counts
    return sample.get("scale", 1.0) * float(values @ weights / weights.sum())
  if kind == "spearman":
    predicted = np.asarray(sample["predicted"], np.float64)
    gold = np.asarray(sample["gold"], np.float64)
    if counts is not None:
      index = np.repeat(np.arange(len(gold)), counts.astype(np.int64))
      predicted, gold = predicted[index], gold[index]
    return spearman_times_100(predicted, gold)
  raise ValueError(f"Unknown sample kind {kind!r}.")


def paired_difference(control: Sequence[Mapping], arm: Sequence[Mapping],
                      resamples: int = RESAMPLES, confidence: float = 0.95,
                      rng_seed: int = 0) -> Dict[str, object]:
  """The arm's difference to the control over paired seeds.

  `control[i]` and `arm[i]` are the same seed's samples of one measure, on
  the same evaluation examples. The bootstrap resamples seeds and, when the
  samples hold per-example values, examples (`bootstrap_draws`). Returns the
  per-seed differences, their mean, their t-interval over seeds
  (`t_interval`, what a verdict reads), the example-level paired bootstrap
  percentile interval beside it (`bootstrap_interval`) and the sign test.
  """
  if len(control) != len(arm) or not control:
    raise ValueError("paired_difference needs the same seeds, at least one, "
                     f"for both arms (got {len(control)} and {len(arm)}).")
  sizes = {sample_size(s) for s in list(control) + list(arm)}
  if len(sizes) != 1:
    raise ValueError("The arms' samples are not over the same evaluation "
                     f"examples (sizes {sorted(sizes)}).")
  examples = sizes.pop()
  per_seed = [statistic(a) - statistic(c) for c, a in zip(control, arm)]

  def difference(chosen, counts):
    return np.mean([statistic(arm[i], counts) - statistic(control[i], counts)
                    for i in chosen])
  draws = bootstrap_draws(difference, len(control), examples,
                          np.random.default_rng(rng_seed), resamples)
  alpha = (1 - confidence) / 2
  low, high = percentile_interval(draws, (alpha, 1 - alpha), omit_nan=True)
  positive, nonzero, p = sign_test(per_seed)
  over_seeds = t_interval(per_seed, confidence)
  return {"difference": float(np.mean(per_seed)),
          "t_interval": over_seeds["interval"], "t": over_seeds["t"],
          "sd": over_seeds["sd"], "p": paired_t_p(per_seed),
          "bootstrap_interval": [low, high], "confidence": confidence,
          "per_seed": [float(d) for d in per_seed],
          "resampled": "seeds and examples" if examples else "seeds only",
          "sign_test": {"positive": positive, "nonzero": nonzero, "p": p}}
