"""The shared evidence protocol on synthetic arms whose difference is known:
pairing, equal-compute accounting, the interval, the table and the JSON."""
import json

import numpy as np
import pytest

from cmlm.experiments import evidence_protocol as protocol


def _accuracy_arms(shift, seeds=3, examples=600, rng_seed=0):
  """Per-example 0/1 credits on the same examples: the control right on
  the easiest half, the arm on the easiest 0.5 + shift (per seed, the
  examples' difficulty drawn afresh)."""
  rng = np.random.default_rng(rng_seed)
  control, arm = [], []
  for _ in range(seeds):
    difficulty = rng.uniform(size=examples)  # shared by both arms
    control.append(protocol.mean_sample(difficulty < 0.5, scale=100))
    arm.append(protocol.mean_sample(difficulty < 0.5 + shift, scale=100))
  return control, arm


def test_a_known_difference_is_found_and_none_is_not():
  control, better = _accuracy_arms(shift=0.1)
  found = protocol.paired_difference(control, better, resamples=1000)
  low, high = found["interval"]
  assert 0 < low <= found["difference"] <= high
  assert low < 10 < high  # the true difference, 10 points
  assert found["sign_test"]["positive"] == 3
  assert found["resampled"] == "seeds and examples"
  rng = np.random.default_rng(1)
  same = [protocol.mean_sample(rng.uniform(size=600) < 0.5, scale=100)
          for _ in range(3)]
  none = protocol.paired_difference(control, same, resamples=1000)
  assert none["interval"][0] < 0 < none["interval"][1]


def test_spearman_samples_resample_pairs_together():
  rng = np.random.default_rng(0)
  gold = rng.uniform(0, 5, size=400)
  noisy = lambda scale: protocol.spearman_sample(
      gold + rng.normal(scale=scale, size=400), gold)
  control = [noisy(2.0) for _ in range(3)]
  better = [noisy(0.5) for _ in range(3)]
  level = [noisy(2.0) for _ in range(3)]
  assert protocol.paired_difference(control, better, 500)["interval"][0] > 0
  interval = protocol.paired_difference(control, level, 500)["interval"]
  assert interval[0] < 0 < interval[1]


def test_pairing_removes_the_seed_to_seed_spread():
  # Seeds differ by 40 points, the arm is 1 point above the control on each.
  control = [protocol.scalar_sample(v) for v in (10.0, 50.0, 90.0)]
  arm = [protocol.scalar_sample(v + 1) for v in (10.0, 50.0, 90.0)]
  paired = protocol.paired_difference(control, arm, resamples=300)
  assert paired["interval"] == pytest.approx([1.0, 1.0])
  assert paired["resampled"] == "seeds only"
  # The same values unpaired (seed order shuffled) cannot tell.
  shuffled = protocol.paired_difference(control, arm[::-1], resamples=300)
  assert shuffled["interval"][0] < 0 < shuffled["interval"][1]


def test_samples_over_other_examples_are_refused():
  with pytest.raises(ValueError, match="same evaluation examples"):
    protocol.paired_difference([protocol.mean_sample([1, 0, 1])],
                               [protocol.mean_sample([1, 0])])


def test_sign_test_counts_seeds_and_gives_the_exact_p():
  assert protocol.sign_test([1.0, 2.0, 3.0]) == (3, 3, pytest.approx(0.25))
  assert protocol.sign_test([1.0, -2.0, 0.0])[:2] == (1, 2)
  assert protocol.sign_test([0.0, 0.0]) == (0, 0, 1.0)


def test_compute_is_examples_times_length_times_passes_and_must_match():
  cmlm = protocol.Compute(2000, (protocol.Work("s1+s2", 32, 64, 2),))
  mlm = protocol.Compute(2000, (protocol.Work("s2", 64, 64, 1),))
  assert cmlm.token_passes == mlm.token_passes == 2000 * 64 * 64
  assert "2000 steps x (s1+s2 32 x 64 x 2 passes)" in cmlm.describe()
  more = protocol.Compute(2000, (protocol.Work("s2", 64, 64, 1),
                                 protocol.Work("extra", 16, 64, 1, 0)))
  arms = [protocol.Arm("MLM", mlm, control=True), protocol.Arm("CMLM", cmlm),
          protocol.Arm("start", None)]
  protocol.check_equal_compute(arms)  # untrained arms are not counted
  with pytest.raises(ValueError, match="not at equal compute"):
    protocol.check_equal_compute(arms + [protocol.Arm("more", more)])
  with pytest.raises(ValueError, match="Exactly one arm must be the control"):
    protocol.check_arms([protocol.Arm("a", mlm), protocol.Arm("b", cmlm)])
  with pytest.raises(ValueError, match="at least 3 seeds"):
    protocol.check_seeds([1, 2])


def test_report_prints_one_table_and_writes_it_as_json(tmp_path, capsys):
  control, better = _accuracy_arms(shift=0.2, examples=300)
  compute = protocol.Compute(10, (protocol.Work("s", 4, 8, 1),))
  arms = [protocol.Arm("base", compute, control=True),
          protocol.Arm("new", compute)]
  store = protocol.UnitStore(str(tmp_path / "units"))
  for seed, (c, a) in enumerate(zip(control, better), start=1):
    store.save("base", seed, {"measures": {"acc": c}})
    store.save("new", seed, {"measures": {"acc": a}})
  results = store.results(arms, [1, 2, 3, 4])
  assert sorted(results["new"]) == [1, 2, 3]
  output = protocol.report("Synthetic", arms, ["acc"], results,
                           str(tmp_path / "table.json"), {"steps": 10},
                           resamples=200)
  printed = capsys.readouterr().out
  assert "| new | 0.0M tok (1.00x) |" in printed and "3/3 seeds up" in printed
  saved = json.loads((tmp_path / "table.json").read_text())
  assert saved["comparison"] == json.loads(json.dumps(output["comparison"]))
  row = saved["comparison"]["new"]["acc"]
  assert row["vs_control"]["interval"][0] > 0 and row["seeds"] == [1, 2, 3]
  assert protocol.verdict(row) == "above"
