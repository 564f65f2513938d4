"""The shared evidence protocol on synthetic arms whose difference is known:
equal-compute accounting, the table and the JSON (its statistics:
tests/evaluation/test_statistics.py)."""
import json

import pytest

from cmlm.experiments import evidence_protocol as protocol
from tests.evaluation.test_statistics import accuracy_arms


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
  control, better = accuracy_arms(shift=0.2, examples=300)
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
  # Above at 3 seeds is not yet a verdict: the one stopping rule is 5 seeds.
  assert "above (unadjusted), above (Holm)" in printed
  assert protocol.MORE_SEEDS in printed
  saved = json.loads((tmp_path / "table.json").read_text())
  assert saved["comparison"] == json.loads(json.dumps(output["comparison"]))
  row = saved["comparison"]["new"]["acc"]
  assert row["vs_control"]["bootstrap_interval"][0] > 0 and row["seeds"] == [1, 2, 3]
  assert row["vs_control"]["t_interval"][0] > 0
  assert protocol.verdict(row) == "above"
  assert row["vs_control"]["verdict"] == "above"
  assert row["vs_control"]["holm_verdict"] == "above"  # a family of one
  assert row["vs_control"]["flag"] == protocol.MORE_SEEDS


def test_a_level_claim_at_3_seeds_is_flagged_to_run_at_5():
  """Per-seed differences +1, -1, +3 (scalars): mean 1, sd 2, the
  t-interval 1 -/+ 4.303 * 2 / sqrt(3) holds 0 -> level, flagged at 3
  seeds; level at 5 seeds too, without the flag."""
  arms = [protocol.Arm("base", None, control=True), protocol.Arm("new", None)]
  differences = [1.0, -1.0, 3.0, 0.5, -0.5]
  results = {"base": {}, "new": {}}
  for seed, d in enumerate(differences, start=1):
    results["base"][seed] = {"m": {"kind": "scalar", "value": 10.0 * seed}}
    results["new"][seed] = {"m": {"kind": "scalar", "value": 10.0 * seed + d}}
  three = {arm: dict(list(r.items())[:3]) for arm, r in results.items()}
  row = protocol.compare(three, arms, ["m"], resamples=100)["new"]["m"]
  low, high = row["vs_control"]["t_interval"]
  half = 4.302653 * 2 / 3 ** 0.5
  assert (low, high) == pytest.approx((1 - half, 1 + half))
  assert row["vs_control"]["verdict"] == "level"
  assert row["vs_control"]["flag"] == protocol.MORE_SEEDS
  table = protocol.format_table({"new": {"m": row}}, arms, ["m"])
  assert "level" in table and protocol.MORE_SEEDS in table
  five = protocol.compare(results, arms, ["m"], resamples=100)["new"]["m"]
  assert five["vs_control"]["verdict"] == "level"
  assert five["vs_control"]["flag"] is None


def _scalar_results(differences_by_measure):
  """base and new over as many seeds as each measure's differences."""
  results = {"base": {}, "new": {}}
  for measure, differences in differences_by_measure.items():
    for seed, d in enumerate(differences, start=1):
      results["base"].setdefault(seed, {})[measure] = {
          "kind": "scalar", "value": 10.0 * seed}
      results["new"].setdefault(seed, {})[measure] = {
          "kind": "scalar", "value": 10.0 * seed + d}
  return results


def test_every_claim_needs_5_seeds_whatever_its_sign():
  """One stopping rule: above and below at 3 seeds are flagged like level;
  at 5 the same signs are verdicts, unflagged."""
  arms = [protocol.Arm("base", None, control=True), protocol.Arm("new", None)]
  for seeds in (3, 4):
    rows = protocol.compare(_scalar_results(
        {"up": [4.0, 5.0, 6.0, 5.0][:seeds],
         "down": [-4.0, -5.0, -6.0, -5.0][:seeds]}), arms, ["up", "down"],
        resamples=100)["new"]
    assert rows["up"]["vs_control"]["verdict"] == "above"
    assert rows["down"]["vs_control"]["verdict"] == "below"
    assert all(r["vs_control"]["flag"] == protocol.MORE_SEEDS
               for r in rows.values())
    assert protocol.needs_more_seeds(rows["up"])
  rows = protocol.compare(_scalar_results(
      {"up": [4.0, 5.0, 6.0, 5.0, 4.5], "down": [-4.0, -5.0, -6.0, -5.0, -4.5]}),
      arms, ["up", "down"], resamples=100)["new"]
  assert rows["up"]["vs_control"]["verdict"] == "above"
  assert rows["down"]["vs_control"]["verdict"] == "below"
  assert all(r["vs_control"]["flag"] is None for r in rows.values())
  table = protocol.format_table({"new": rows}, arms, ["up", "down"])
  assert protocol.MORE_SEEDS not in table
  assert "above (unadjusted), above (Holm)" in table


def test_holm_over_a_claims_measures_can_turn_an_unadjusted_verdict_level():
  """Three measures of one arm at 5 seeds, each p by the paired t-test;
  Holm multiplies the smallest by 3, the next by 2: a measure above
  unadjusted (p = 0.031) is level once adjusted (0.063), the strong one
  stays."""
  from cmlm.evaluation import statistics
  arms = [protocol.Arm("base", None, control=True), protocol.Arm("new", None)]
  differences = {"strong": [5.0, 5.5, 4.5, 5.2, 4.8],
                 "weak": [1.0, 0.2, 1.4, 0.3, 1.5],
                 "none": [1.0, -1.0, 0.5, -0.5, 0.2]}
  rows = protocol.compare(_scalar_results(differences), arms,
                          list(differences), resamples=100)["new"]
  p = {m: statistics.paired_t_p(d) for m, d in differences.items()}
  assert p["strong"] < p["weak"] < 0.05 < 2 * p["weak"]
  adjusted = statistics.holm([p[m] for m in differences])
  for (measure, row), holm_p in zip(rows.items(), adjusted):
    assert row["vs_control"]["p"] == pytest.approx(p[measure])
    assert row["vs_control"]["holm_p"] == pytest.approx(holm_p)
  assert rows["strong"]["vs_control"]["holm_verdict"] == "above"
  assert rows["weak"]["vs_control"]["verdict"] == "above"
  assert rows["weak"]["vs_control"]["holm_verdict"] == "level"
  assert rows["none"]["vs_control"]["holm_verdict"] == "level"
  table = protocol.format_table({"new": rows}, arms, list(differences))
  assert "above (unadjusted), level (Holm)" in table


def _git_checkout(root):
  """A git checkout with one tracked code file and one tracked doc."""
  import subprocess
  run = lambda *args: subprocess.run(["git", *args], cwd=root, check=True,
                                     capture_output=True)
  (root / "modeling").mkdir()
  (root / "modeling" / "layer.py").write_text("x = 1\n")
  (root / "docs").mkdir()
  (root / "docs" / "page.md").write_text("text\n")
  run("init", "-q")
  run("add", ".")
  run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
  return run


def test_a_unit_records_the_code_that_ran_and_refuses_modified_code(
    tmp_path, monkeypatch):
  """store.run stamps every provenance field; it starts no unit while
  tracked code differs from the commit, or after HEAD moved under a
  running process; a doc or an untracked file does not count."""
  from cmlm.experiments import unit_provenance
  root = tmp_path / "checkout"
  root.mkdir()
  git = _git_checkout(root)
  monkeypatch.setattr(unit_provenance, "REPO_ROOT", str(root))
  monkeypatch.setattr(unit_provenance, "_first_commit", {})
  head = unit_provenance.head_commit(str(root))
  store = protocol.UnitStore(str(tmp_path / "runs"),
                             units_dir=str(tmp_path / "units"))
  (root / "docs" / "page.md").write_text("edited\n")
  (root / "modeling" / "new.py").write_text("untracked\n")
  unit = store.run("CMLM", 3, lambda: {"measures": {}})
  assert set(unit_provenance.FIELDS) <= set(unit)
  assert (unit["arm"], unit["seed"], unit["commit"]) == ("CMLM", 3, head)
  assert unit["code_modified"] == [] and unit["cores"] >= 1
  assert set(unit["isa"]) == set(unit_provenance.ISA_FLAGS)
  assert unit["date"].endswith("+00:00") and unit["cpu"]
  assert unit["command"] and isinstance(unit["load_1min"], float)
  assert json.loads((tmp_path / "units" / "CMLM" / "seed3.json").read_text()
                    ) == unit
  assert store.run("CMLM", 3, lambda: 1 / 0) == unit  # finished: reused
  ran = []
  (root / "modeling" / "layer.py").write_text("x = 2\n")
  with pytest.raises(ValueError, match=r"differs from its commit \(modeling/"
                     r"layer.py\)"):
    store.run("MLM", 3, lambda: ran.append(1) or {"measures": {}})
  assert not ran and store.load("MLM", 3) is None
  # save (scripts that do not go through run) records the modification.
  store.save("MLM", 4, {"measures": {}})
  assert store.load("MLM", 4)["code_modified"] == ["modeling/layer.py"]
  git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "two")
  with pytest.raises(ValueError, match="HEAD moved"):
    store.run("MLM", 3, lambda: {"measures": {}})


def test_untrained_arms_run_first_then_seed_by_seed_and_commits_are_told():
  from cmlm.experiments import unit_provenance
  compute = protocol.Compute(10, (protocol.Work("s", 4, 8, 1),))
  arms = [protocol.Arm("start", None), protocol.Arm("MLM", compute, True),
          protocol.Arm("CMLM", compute)]
  assert protocol.unit_order(arms, ["CMLM", "start", "MLM"], [1, 2]) == [
      ("start", 1), ("start", 2), ("MLM", 1), ("CMLM", 1), ("MLM", 2),
      ("CMLM", 2)]
  assert protocol.unit_order(arms, ["CMLM"], [5]) == [("CMLM", 5)]
  one = unit_provenance.code_commits({"a": {"commit": "c1"},
                                      "b": {"commit": "c1"}})
  assert one == {"commit": "c1", "unit_commits": {"c1": ["a", "b"]},
                 "mixed_commits": None}
  mixed = unit_provenance.code_commits({
      "a": {"commit": "c1"}, "b": {"commit": "c2"},
      "c": {"commit": "c1", "code_modified": ["x.py"]}, "d": {}})
  assert mixed["commit"] == ["c1", "c1+modified", "c2", "unrecorded"]
  assert "4 different states" in mixed["mixed_commits"]
