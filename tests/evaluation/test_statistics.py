"""The garden's statistics: the t-interval over seeds against a hand
computation, the paired bootstrap of the evidence protocol on synthetic arms
whose difference is known (pairing, the interval, the sign test), the one
Spearman and the bootstrap's two ways of drawing examples."""
import numpy as np
import pytest

from cmlm.evaluation import statistics


def accuracy_arms(shift, seeds=3, examples=600, rng_seed=0):
  """Per-example 0/1 credits on the same examples: the control right on
  the easiest half, the arm on the easiest 0.5 + shift (per seed, the
  examples' difficulty drawn afresh)."""
  rng = np.random.default_rng(rng_seed)
  control, arm = [], []
  for _ in range(seeds):
    difficulty = rng.uniform(size=examples)  # shared by both arms
    control.append(statistics.mean_sample(difficulty < 0.5, scale=100))
    arm.append(statistics.mean_sample(difficulty < 0.5 + shift, scale=100))
  return control, arm


def test_a_known_difference_is_found_and_none_is_not():
  control, better = accuracy_arms(shift=0.1)
  found = statistics.paired_difference(control, better, resamples=1000)
  low, high = found["bootstrap_interval"]
  assert 0 < low <= found["difference"] <= high
  assert low < 10 < high  # the true difference, 10 points
  assert found["sign_test"]["positive"] == 3
  assert found["resampled"] == "seeds and examples"
  rng = np.random.default_rng(1)
  same = [statistics.mean_sample(rng.uniform(size=600) < 0.5, scale=100)
          for _ in range(3)]
  none = statistics.paired_difference(control, same, resamples=1000)
  assert none["bootstrap_interval"][0] < 0 < none["bootstrap_interval"][1]


def test_the_t_interval_is_mean_plus_minus_t_sd_over_root_n():
  # Per-seed differences 1, 2, 6: mean 3, sd sqrt(7); the t distribution's
  # 0.975 quantiles with 2 and 4 degrees of freedom are 4.303 and 2.776.
  found = statistics.t_interval([1.0, 2.0, 6.0])
  assert found["t"] == pytest.approx(4.303, abs=1e-3)
  assert found["mean"] == 3.0 and found["sd"] == pytest.approx(7 ** 0.5)
  half = 4.302653 * 7 ** 0.5 / 3 ** 0.5
  assert found["interval"] == pytest.approx([3 - half, 3 + half], abs=1e-5)
  five = statistics.t_interval([1.0, 2.0, 3.0, 4.0, 5.0])
  assert five["t"] == pytest.approx(2.776, abs=1e-3)
  half = 2.776445 * 2.5 ** 0.5 / 5 ** 0.5
  assert five["interval"] == pytest.approx([3 - half, 3 + half], abs=1e-5)
  assert statistics.t_interval([2.0])["interval"] is None


def test_the_paired_t_p_is_below_005_exactly_when_the_interval_excludes_0():
  # Per-seed differences 1, 2, 6: t = 3 / (sqrt(7) / sqrt(3)) = 1.964 with 2
  # degrees of freedom, two-sided p = 0.1884 (the interval holds 0).
  assert statistics.paired_t_p([1.0, 2.0, 6.0]) == pytest.approx(0.1884,
                                                                 abs=1e-4)
  for differences in ([1.0, 2.0, 6.0], [4.0, 5.0, 6.0], [1.0, -1.0, 3.0],
                      [1.0, 2.0, 3.0, 4.0, 5.0], [-2.0, -1.5, -2.5]):
    low, high = statistics.t_interval(differences)["interval"]
    assert (statistics.paired_t_p(differences) < 0.05) == (low > 0 or high < 0)
  assert statistics.paired_t_p([2.0]) is None
  assert statistics.paired_t_p([2.0, 2.0, 2.0]) == 0.0
  assert statistics.paired_t_p([0.0, 0.0, 0.0]) == 1.0


def test_holm_adjusts_a_family_step_down_in_its_own_order():
  # Sorted 0.01, 0.03, 0.04 times 3, 2, 1: 0.03, 0.06, 0.04 -> the running
  # maximum keeps 0.04 at 0.06; given back in the family's order.
  assert statistics.holm([0.01, 0.04, 0.03]) == pytest.approx(
      [0.03, 0.06, 0.06])
  assert statistics.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])  # capped
  assert statistics.holm([0.02]) == [0.02]  # a family of one: unadjusted
  # A measure with no test (one seed) counts in the family as p = 1.
  assert statistics.holm([0.01, None, 0.03]) == pytest.approx(
      [0.03, None, 0.06])


def test_paired_difference_gives_the_t_interval_of_its_per_seed_differences():
  control, better = accuracy_arms(shift=0.1)
  found = statistics.paired_difference(control, better, resamples=200)
  by_hand = statistics.t_interval(found["per_seed"])
  assert found["t_interval"] == pytest.approx(by_hand["interval"])
  assert found["p"] == pytest.approx(statistics.paired_t_p(found["per_seed"]))
  low, high = found["t_interval"]
  assert 0 < low < 10 < high  # the true difference, 10 points, found
  rng = np.random.default_rng(1)
  same = [statistics.mean_sample(rng.uniform(size=600) < 0.5, scale=100)
          for _ in range(3)]
  low, high = statistics.paired_difference(control, same, 200)["t_interval"]
  assert low < 0 < high  # no difference: none found


def test_spearman_samples_resample_pairs_together():
  rng = np.random.default_rng(0)
  gold = rng.uniform(0, 5, size=400)
  noisy = lambda scale: statistics.spearman_sample(
      gold + rng.normal(scale=scale, size=400), gold)
  control = [noisy(2.0) for _ in range(3)]
  better = [noisy(0.5) for _ in range(3)]
  level = [noisy(2.0) for _ in range(3)]
  assert statistics.paired_difference(control, better, 500)["bootstrap_interval"][0] > 0
  interval = statistics.paired_difference(control, level, 500)["bootstrap_interval"]
  assert interval[0] < 0 < interval[1]


def test_pairing_removes_the_seed_to_seed_spread():
  # Seeds differ by 40 points, the arm is 1 point above the control on each.
  control = [statistics.scalar_sample(v) for v in (10.0, 50.0, 90.0)]
  arm = [statistics.scalar_sample(v + 1) for v in (10.0, 50.0, 90.0)]
  paired = statistics.paired_difference(control, arm, resamples=300)
  assert paired["bootstrap_interval"] == pytest.approx([1.0, 1.0])
  assert paired["resampled"] == "seeds only"
  # The same values unpaired (seed order shuffled) cannot tell.
  shuffled = statistics.paired_difference(control, arm[::-1], resamples=300)
  assert shuffled["bootstrap_interval"][0] < 0 < shuffled["bootstrap_interval"][1]


def test_samples_over_other_examples_are_refused():
  with pytest.raises(ValueError, match="same evaluation examples"):
    statistics.paired_difference([statistics.mean_sample([1, 0, 1])],
                                 [statistics.mean_sample([1, 0])])


def test_sign_test_counts_seeds_and_gives_the_exact_p():
  assert statistics.sign_test([1.0, 2.0, 3.0]) == (3, 3, pytest.approx(0.25))
  assert statistics.sign_test([1.0, -2.0, 0.0])[:2] == (1, 2)
  assert statistics.sign_test([0.0, 0.0]) == (0, 0, 1.0)




def test_spearman_gives_ties_their_mean_rank_or_ranks_them_in_sort_order():
  predicted = np.array([0.0, 1.0, 2.0, 3.0])
  assert statistics.spearman_times_100(predicted, predicted ** 3) == (
      pytest.approx(100.0))
  assert statistics.spearman_times_100(predicted, predicted ** 3,
                                       ties="sort order") == pytest.approx(100)
  gold = np.array([0.0, 0.0, 1.0, 1.0])  # ranks 0.5, 0.5, 2.5, 2.5
  assert statistics.spearman_times_100(predicted, gold) == pytest.approx(
      100 * 2 / np.sqrt(5))
  # Each tie broken one way or the other: ranks 0 1 2 3, 1 0 2 3, ...
  in_order = statistics.spearman_times_100(predicted, gold, ties="sort order")
  assert min(abs(in_order - r) for r in (100, 80, 60)) < 1e-9
  assert np.isnan(statistics.spearman_times_100(predicted, np.ones(4)))
  with pytest.raises(ValueError, match="ties must be"):
    statistics.spearman_times_100(predicted, gold, ties="dense")


def test_both_ways_of_drawing_examples_resample_the_mean_alike():
  values = np.random.default_rng(0).normal(size=400)
  spreads = {}
  for how, figure in (("counts", lambda _, c: values @ c / c.sum()),
                      ("indices", lambda _, i: values[i].mean())):
    draws = statistics.bootstrap_draws(figure, 1, 400,
                                       np.random.default_rng(1), 1000, how)
    low, high = statistics.percentile_interval(draws)
    assert low < values.mean() < high
    spreads[how] = np.std(draws)
  standard_error = np.std(values) / np.sqrt(400)
  for spread in spreads.values():
    assert spread == pytest.approx(standard_error, rel=0.1)


def test_drawn_indices_are_the_demos_resamples_drawn_at_once():
  """"indices" keeps the demo's random stream: every resample's pairs drawn
  in one call, before the first, so its reported intervals reproduce."""
  difference = np.random.default_rng(0).normal(size=50)
  draws = statistics.bootstrap_draws(
      lambda _, pairs: difference[pairs].sum(), 1, 50,
      np.random.default_rng(3), 200, examples_drawn="indices")
  picks = np.random.default_rng(3).integers(0, 50, size=[200, 50])
  assert (draws == difference[picks].sum(1)).all()


def test_the_interval_leaves_nan_draws_out_only_when_asked():
  draws = np.append(np.arange(100.0), np.nan)
  assert statistics.percentile_interval(draws, (0.0, 1.0),
                                        omit_nan=True) == (0.0, 99.0)
  assert all(np.isnan(statistics.percentile_interval(draws)))
