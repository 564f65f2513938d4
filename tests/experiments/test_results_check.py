"""experiments/results_check.py: every results file a page names is rebuilt
from its units or is historical, and a historical table never carries a
verdict; a unit-backed file that drifts from its units is caught."""
import json
import os

import pytest

from cmlm.evaluation import statistics
from cmlm.experiments import evidence_tables
from cmlm.experiments import results_check


def _write(root, name, payload):
  path = os.path.join(root, name)
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w", encoding="utf-8") as f:
    f.write(payload if isinstance(payload, str) else json.dumps(payload))


def test_the_docs_results_files_are_unit_backed_or_historical():
  """Every page's results files: each unit-backed one gives back its seeds,
  per-seed values and commits from its units (the bootstrap rebuild is
  `evidence_tables.py --check`'s, minutes), each historical one is shown
  only under a historical heading with no verdict."""
  assert results_check.problems(bootstrap=False, progress=None) == []


HISTORICAL = {
    "title": "t", "claim": "new against base", "script": "x.py",
    "date": "2026-11-26", "page": "doc.md#historical-an-old-run",
    "arms": [{"name": "base", "control": True}, {"name": "new"}],
    "measures": ["m"], "seeds": [1, 2, 3],
    "per_seed": {"base": {"m": [50.0, 52.0, 48.0]},
                 "new": {"m": [55.0, 57.5, 52.5]}},
    "historical": True,
    "historical_reason": "3 seeds copied from a printed table; no units."}
PAGE = ("# Page\n\n## Historical: an old run\n\nKept for the record.\n\n"
        "<!-- results:r.json -->\n<!-- /results -->\n\n## Next\n\nLater "
        "text may say above or below.\n")


def _problems(root, page, result):
  _write(root, "r.json", result)
  _write(root, "doc.md", evidence_tables.render_document(page, root))
  return results_check.problems(root, ["doc.md"], progress=None)


def test_a_historical_table_shows_values_and_no_verdict(tmp_path):
  root = str(tmp_path)
  assert _problems(root, PAGE, HISTORICAL) == []
  with open(tmp_path / "doc.md", encoding="utf-8") as f:
    rendered = f.read()
  assert "| m | 50.00 ± 2.00 (50.00, 52.00, 48.00) |" in rendered
  assert "Historical: 3 seeds copied from a printed table" in rendered
  for shown in ("verdict", "t-interval", "above", "level"):
    assert shown not in rendered.split("## Next")[0], shown


@pytest.mark.parametrize("page, result, problem", [
    (PAGE.replace("Kept for the record.", "New beats base."), HISTORICAL,
     "names a verdict (beats)"),
    (PAGE.replace("Kept for the record.", "New is level with base."),
     HISTORICAL, "names a verdict (level)"),
    (PAGE.replace("## Historical: an old run", "## Results"), HISTORICAL,
     "outside a section headed \"Historical"),
    (PAGE + "\n<!-- verdicts:r.json -->\n<!-- /verdicts -->\n", HISTORICAL,
     "is in a verdicts marker"),
    (PAGE + "\n<!-- plot:forest f.png r.json -->\n<!-- /plot -->\n",
     HISTORICAL, "is in a forest marker"),
    (PAGE, dict(HISTORICAL, comparison={}), "holds a comparison"),
    (PAGE, dict(HISTORICAL, historical_reason=""), "no historical_reason"),
    (PAGE, {k: v for k, v in HISTORICAL.items() if k != "historical"},
     "neither rebuilt from units"),
])
def test_a_historical_table_with_a_verdict_is_caught(tmp_path, page, result,
                                                     problem):
  root = str(tmp_path)
  if "historical" not in result:
    result = evidence_tables.with_comparison(result)
  found = _problems(root, page, result)
  assert any(problem in p for p in found), found


def _units(tmp_path):
  """A units folder (<arm>/seed<S>.json) of a known effect, each unit
  recording one commit."""
  for arm, right in (("base", 40), ("new", 70)):
    for seed in (1, 2, 3):
      values = [1.0] * (right + seed) + [0.0] * (100 - right - seed)
      _write(str(tmp_path), f"units/{arm}/seed{seed}.json", {
          "arm": arm, "seed": seed, "commit": "a" * 40, "code_modified": [],
          "measures": {"acc": statistics.mean_sample(values, 100)}})


def test_a_unit_backed_file_that_drifts_from_its_units_is_caught(tmp_path):
  root = str(tmp_path)
  _units(tmp_path)
  built = evidence_tables.results_from_units(
      str(tmp_path / "units"), ["base", "new"], "base", ["acc"], [1, 2, 3])
  result = evidence_tables.with_comparison(dict(
      built, title="u", claim="new beats base", script="x.py",
      units="units"))
  page = "# P\n\n<!-- results:r.json -->\n<!-- /results -->\n"
  assert result["commit"] == "a" * 40 and result["mixed_commits"] is None
  assert _problems(root, page, result) == []

  def caught(changed, bootstrap=True):
    _write(root, "r.json", changed)
    return results_check.problems(root, ["doc.md"], bootstrap=bootstrap,
                                  progress=None)
  moved = json.loads(json.dumps(result))
  moved["per_seed"]["new"]["acc"][0] += 1.0
  assert "in per_seed" in caught(moved)[0]
  # Another CPU's rebuild differs in the last bits, not in the value.
  value = result["per_seed"]["new"]["acc"][0]
  for scale, found in ((1 + 4e-16, False), (1 + 1e-6, True)):
    moved["per_seed"]["new"]["acc"][0] = value * scale
    assert bool(caught(moved)) is found, scale
  assert "in commit" in caught(dict(result, commit="b" * 7))[0]
  widened = json.loads(json.dumps(result))
  widened["bootstrap"]["new"]["acc"][0] -= 1.0
  assert "in bootstrap" in caught(widened)[0]
  assert caught(widened, bootstrap=False) == []  # the tests' quick rebuild
  # A unit of another commit: the file must say so (mixed_commits).
  _write(root, "units/new/seed2.json", dict(
      json.load(open(tmp_path / "units/new/seed2.json", encoding="utf-8")),
      commit="c" * 40))
  assert "commit, unit_commits, mixed_commits" in caught(result)[0]
  remixed = evidence_tables.results_from_units(
      str(tmp_path / "units"), ["base", "new"], "base", ["acc"], [1, 2, 3])
  assert "2 different states of the code" in remixed["mixed_commits"]
  assert caught(dict(result, **remixed)) == []
