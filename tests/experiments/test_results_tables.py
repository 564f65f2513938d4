"""experiments/evidence_tables.py: every results table in the docs is what its
committed results file gives, each file's comparison is what its per-seed
values give, and a table or a file that drifts apart is caught."""
import json
import os

import pytest

from cmlm.evaluation import statistics
from cmlm.experiments import evidence_protocol as protocol
from cmlm.experiments import evidence_tables
from cmlm.experiments import unit_provenance
from tests import helpers


@pytest.mark.parametrize("document", evidence_tables.DOCUMENTS)
def test_each_table_in_the_docs_is_rendered_from_its_results_files(document):
  with open(os.path.join(helpers.REPO_ROOT, document), encoding="utf-8") as f:
    text = f.read()
  assert "<!-- results:" in text or "<!-- verdicts:" in text
  assert evidence_tables.render_document(
      text, document_dir=os.path.dirname(document)) == text, (
          f"{document} differs from its results files: run python "
          "experiments/evidence_tables.py")


def test_each_results_file_holds_the_comparison_its_per_seed_values_give():
  assert evidence_tables.stale_files() == []
  result = evidence_tables.load("docs/results/cmlm_vs_mlm.json")
  for key in ("command", "commit", "cpu", "date", "seeds", "arms",
              "per_seed", "provenance"):
    assert result[key], key
  row = result["comparison"]["CMLM"]["sts-b"]
  mlm, cmlm = result["per_seed"]["MLM"]["sts-b"], result["per_seed"]["CMLM"][
      "sts-b"]
  by_hand = statistics.t_interval([a - c for a, c in zip(cmlm, mlm)])
  assert row["t_interval"] == pytest.approx(by_hand["interval"])


def _write(root, name, text):
  path = os.path.join(root, name)
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w", encoding="utf-8") as f:
    f.write(text)


def test_a_table_or_a_file_that_drifts_from_the_other_is_caught(tmp_path):
  """A known effect is rendered above, none level with the 3-seed flag; a
  value changed in the file (or a cell in the table) no longer matches."""
  root = str(tmp_path)
  result = evidence_tables.with_comparison({
      "title": "t", "claim": "new beats base", "script": "x.py",
      "arms": [{"name": "base", "control": True}, {"name": "new"}],
      "measures": ["m", "n"], "seeds": [1, 2, 3],
      "per_seed": {"base": {"m": [50.0, 52.0, 48.0], "n": [50.0, 52.0, 48.0]},
                   "new": {"m": [55.0, 57.5, 52.5], "n": [51.0, 51.0, 49.0]}}})
  _write(root, "r.json", json.dumps(result))
  page = ("# Page\n\n<!-- results:r.json -->\n<!-- /results -->\n\n"
          "<!-- verdicts:r.json -->\n<!-- /verdicts -->\n")
  rendered = evidence_tables.render_document(page, root)
  assert evidence_tables.render_document(rendered, root) == rendered
  assert "| new - base | m | +5.00, +5.50, +4.50 | +5.00 |" in rendered
  assert "**above**" in rendered
  assert f"level ({protocol.MORE_SEEDS})" in rendered  # n: +1, -1, +1
  assert "above on m; level (at 3 seeds" in rendered
  result["per_seed"]["new"]["m"][0] = 56.0
  _write(root, "r.json", json.dumps(result))
  assert evidence_tables.render_document(rendered, root) != rendered
  _write(root, "doc.md", rendered)
  assert evidence_tables.stale_files(root, ["doc.md"]) == ["r.json", "r.json"]


def test_a_results_file_is_built_from_units(tmp_path):
  """A UnitStore work_dir and a units folder (<arm>/seed<S>.json) give the
  same per-seed values, the example-level bootstrap beside the t-interval."""
  store = protocol.UnitStore(str(tmp_path / "work"))
  flat = tmp_path / "units"
  for arm, right in (("base", 40), ("new", 70)):
    for seed in (1, 2, 3):
      values = [1.0] * (right + seed) + [0.0] * (100 - right - seed)
      unit = {"measures": {"acc": statistics.mean_sample(values, 100)}}
      store.save(arm, seed, unit)
      (flat / arm).mkdir(parents=True, exist_ok=True)
      (flat / arm / f"seed{seed}.json").write_text(json.dumps(
          store.load(arm, seed)))
  built = [evidence_tables.results_from_units(
      str(directory), ["base", "new"], "base", ["acc"], [1, 2, 3], 200)
           for directory in (tmp_path / "work", flat)]
  assert built[0] == built[1]
  # The commit is the units' (saved here from this checkout), not HEAD's
  # when the file is written.
  assert built[0]["commit"].split("+")[0] == unit_provenance.head_commit()
  assert built[0]["mixed_commits"] is None
  other = dict(store.load("new", 2), commit="0" * 40, code_modified=[])
  (flat / "new" / "seed2.json").write_text(json.dumps(other))
  mixed = evidence_tables.results_from_units(str(flat), ["base", "new"],
                                             "base", ["acc"], [1, 2, 3], 200)
  assert "0" * 40 in mixed["commit"] and len(mixed["commit"]) == 2
  assert mixed["unit_commits"]["0" * 40] == ["new seed 2"]
  assert "2 different states of the code" in mixed["mixed_commits"]
  result = evidence_tables.with_comparison(dict(built[0], title="u"))
  row = result["comparison"]["new"]["acc"]
  assert row["per_seed"] == pytest.approx([30.0, 30.0, 30.0])
  assert row["bootstrap_interval"][0] > 0 and row["verdict"] == "above"
  with pytest.raises(FileNotFoundError, match="No unit of arm 'base', seed 4"):
    evidence_tables.results_from_units(str(flat), ["base", "new"], "base",
                                       ["acc"], [1, 2, 4])
