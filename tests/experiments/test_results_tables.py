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
  primary = result["measures"][0]  # sick-r train+trial (primary)
  row = result["comparison"]["CMLM"][primary]
  mlm, cmlm = (result["per_seed"]["MLM"][primary],
               result["per_seed"]["CMLM"][primary])
  by_hand = statistics.t_interval([a - c for a, c in zip(cmlm, mlm)])
  assert row["t_interval"] == pytest.approx(by_hand["interval"])


def _write(root, name, text):
  path = os.path.join(root, name)
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w", encoding="utf-8") as f:
    f.write(text)


def test_a_table_or_a_file_that_drifts_from_the_other_is_caught(tmp_path):
  """At 5 seeds a known effect is rendered above and none level, each with
  its unadjusted and Holm-adjusted verdict; at 3 seeds the same effect is
  flagged, not a verdict; a value changed in the file (or a cell in the
  table) no longer matches."""
  root = str(tmp_path)
  result = evidence_tables.with_comparison({
      "title": "t", "claim": "new beats base", "script": "x.py",
      "arms": [{"name": "base", "control": True}, {"name": "new"}],
      "measures": ["m", "n"], "seeds": [1, 2, 3, 4, 5],
      "per_seed": {"base": {"m": [50.0, 52.0, 48.0, 51.0, 49.0],
                            "n": [50.0, 52.0, 48.0, 51.0, 49.0]},
                   "new": {"m": [55.0, 57.5, 52.5, 56.0, 54.5],
                           "n": [51.0, 51.0, 49.0, 50.0, 50.0]}}})
  _write(root, "r.json", json.dumps(result))
  page = ("# Page\n\n<!-- results:r.json -->\n<!-- /results -->\n\n"
          "<!-- verdicts:r.json -->\n<!-- /verdicts -->\n")
  rendered = evidence_tables.render_document(page, root)
  assert evidence_tables.render_document(rendered, root) == rendered
  assert ("| new - base | m | +5.00, +5.50, +4.50, +5.00, +5.50 | +5.10 |"
          in rendered)
  assert "| verdict (unadjusted) | p (Holm) | verdict (Holm) |" in rendered
  # m: above unadjusted and after Holm over {m, n}; n: +1, -1, +1, -1, +1.
  assert "| **above** | <0.001 | **above** |" in rendered
  assert "| level | 0.704 | level |" in rendered  # the largest p: x 1
  assert protocol.MORE_SEEDS not in rendered
  assert ("| verdict, unadjusted (95% t-interval over seeds) | verdict, "
          "Holm-adjusted over the claim's measures |") in rendered
  assert rendered.count("new vs base: above on m; level on n") == 2
  three = evidence_tables.with_comparison(dict(result, seeds=[1, 2, 3],
      per_seed={arm: {m: v[:3] for m, v in values.items()}
                for arm, values in result["per_seed"].items()}))
  _write(root, "r3.json", json.dumps(three))
  rendered3 = evidence_tables.render_document(
      page.replace("r.json", "r3.json"), root)
  assert "**above**" not in rendered3
  assert f"| above ({protocol.MORE_SEEDS}) |" in rendered3
  assert f"above (at 3 seeds: {protocol.MORE_SEEDS}) on m" in rendered3
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


# The other figures (experiments/figures.py) and the plots (experiments/plots.py).
from cmlm.experiments import figures  # noqa: E402
from cmlm.experiments import plots  # noqa: E402

FIGURE_DOCUMENTS = figures.documents()


def test_the_other_figures_have_their_pages():
  for page in ("README.md", "BUILD.md", "docs/benchmarks.md",
               "docs/cmlm_results.md", "docs/preparing_at_scale.md",
               "docs/training.md", "docs/evidence.md"):
    assert page in FIGURE_DOCUMENTS, page


@pytest.mark.parametrize("document", FIGURE_DOCUMENTS)
def test_each_figure_and_plot_in_the_docs_is_rendered_from_its_results_files(
    document):
  with open(os.path.join(helpers.REPO_ROOT, document), encoding="utf-8") as f:
    text = f.read()
  rendered = plots.render_document(figures.render_document(text),
                                   document_dir=os.path.dirname(document))
  assert rendered == text and plots.stale_plots(text) == [], (
      f"{document} differs from its results files: run python "
      "experiments/figures.py")


def test_each_figure_file_carries_its_provenance():
  """command, commit, CPU model, flags, cores, date and load: each present
  (a value not recovered is null, with a note saying why)."""
  paths = set()
  for document in FIGURE_DOCUMENTS:
    with open(os.path.join(helpers.REPO_ROOT, document),
              encoding="utf-8") as f:
      text = f.read()
    for m in figures.BLOCK.finditer(text):
      paths.update(m.group(3).split())
    paths.update(m.group(2) for m in figures.INLINE.finditer(text))
  assert "docs/results/soak_faults.json" in paths
  assert "docs/results/prepare_on_dask.json" in paths
  for path in sorted(paths):
    result = figures.load(path)
    cpu = result["cpu"]
    flags = cpu.get("flags") if isinstance(cpu, dict) else (
        result.get("cpu_flags") or result.get("isa"))  # unit_provenance's
    cores = cpu.get("cores") if isinstance(cpu, dict) else result.get(
        "cores")
    for name, value in (("command", result.get("command")),
                        ("commit", result.get("commit")),
                        ("cpu", cpu), ("cpu flags", flags),
                        ("cores", cores), ("date", result.get("date"))):
      assert value, f"{path} lacks its {name}"
    assert (result.get("load") or "load_before" in result
            or "load_1min" in result), path
    assert "../" not in json.dumps(result) and "/work/" not in json.dumps(
        result), f"{path} names a folder outside the repository"


def test_a_figure_that_drifts_from_its_file_is_caught(tmp_path):
  root = str(tmp_path)
  result = {"command": "python b.py", "commit": "abc", "cpu": "Some CPU",
            "cpu_flags": ["avx2"], "cores": 2, "date": "2026-11-27",
            "load": "0.1 before", "seed": 0,
            "rows": [{"batch_size": b, "path": p, "peer": p == "peer",
                      "sent_per_s": s, "stsb_dev": 80.0, "min_cosine": 1.0,
                      "load_s": None, "peak_rss_mb": None}
                     for b, p, s in ((1, "peer", 10.0), (1, "ours", 20.0),
                                     (32, "peer", 30.0), (32, "ours", 60.4))]}
  _write(root, "r.json", json.dumps(result))
  page = ("# P\n\n<!-- figures:speed r.json -->\n<!-- /figures -->\n\n"
          "It scores <!-- figure:r.json:rows.0.stsb_dev -->?<!-- /figure -->"
          " (<!-- figure:r.json:rows.3.sent_per_s|.0f -->?<!-- /figure -->)."
          "\n\n<!-- plot:speed figures/s.png r.json -->\n<!-- /plot -->\n")
  rendered = plots.render_document(figures.render_document(page, root), root,
                                   write=True)
  assert "| `ours` | 20 | 60 | 80.00 | 1.000 | n/a | n/a |" in rendered
  assert "It scores <!-- figure:r.json:rows.0.stsb_dev -->80.0<!--" in rendered
  assert "sent_per_s|.0f -->60<!-- /figure -->)." in rendered  # 60.4
  assert "commit `abc`; Some CPU (avx2), 2 cores; 2026-11-27" in rendered
  assert plots.stale_plots(rendered, root) == []
  png = os.path.join(root, "figures", "s.png")
  assert plots.png_digest(png) == plots.digest(
      plots.speed_data([result]))
  assert figures.render_document(rendered, root) == rendered
  result["rows"][1]["sent_per_s"] = 25.0
  _write(root, "r.json", json.dumps(result))
  assert figures.render_document(rendered, root) != rendered
  assert plots.render_document(rendered, root) != rendered
  assert plots.stale_plots(rendered, root) == ["figures/s.png"]


def test_the_forest_plot_reads_each_claims_t_interval():
  result = evidence_tables.load("docs/results/cmlm_vs_mlm.json")
  rows = plots.forest_data([result])
  primary = result["measures"][0]
  row = next(r for r in rows if r["label"] == f"CMLM - MLM, {primary}")
  assert row["t_interval"] == pytest.approx(
      result["comparison"]["CMLM"][primary]["t_interval"])
  assert row["seeds"] == len(result["seeds"])


def test_the_concurrent_table_shows_each_backend_and_caller_count(tmp_path):
  """Its rows in the file's order; a check run shows every equality figure
  and no speed."""
  root = str(tmp_path)
  result = {"command": "python benchmarks/concurrent_encode.py",
            "commit": "abc", "cpu": "Some CPU", "cpu_flags": ["avx2"],
            "cores": 2, "date": "2026-11-27", "load": "0.1 before",
            "check_run": False, "model": "cmlm/tiny, 2 steps",
            "batch_size": 1, "seconds": 20.0, "requests_per_caller": None,
            "equal_cosine": 0.9999,
            "rows": [{"backend": b, "callers": c, "requests": 10 * c,
                      "sent_per_s": 100.0 * c, "p50_ms": 2.0 * c,
                      "p99_ms": 3.5 * c, "min_cosine": 0.99999,
                      "differing": 0}
                     for b in ("saved_model", "onnx_int8") for c in (1, 8)]}
  _write(root, "c.json", json.dumps(result))
  page = "# P\n\n<!-- figures:concurrent c.json -->\n<!-- /figures -->\n"
  rendered = figures.render_document(page, root)
  rows = [line for line in rendered.splitlines() if line.startswith("| ")]
  assert rows[1:] == [
      "| saved_model | 1 | 100 | 2.0 | 3.5 | 10 | 0.999990 | 0 |",
      "| saved_model | 8 | 800 | 16.0 | 28.0 | 80 | 0.999990 | 0 |",
      "| onnx_int8 | 1 | 100 | 2.0 | 3.5 | 10 | 0.999990 | 0 |",
      "| onnx_int8 | 8 | 800 | 16.0 | 28.0 | 80 | 0.999990 | 0 |"]
  assert "commit `abc`; Some CPU (avx2), 2 cores; 2026-11-27" in rendered
  assert figures.render_document(rendered, root) == rendered
  result["check_run"] = True
  _write(root, "c.json", json.dumps(result))
  checked = figures.render_document(rendered, root)
  assert "A check run" in checked
  assert "| onnx_int8 | 8 | - | - | - | - | 0.999990 | 0 |" in checked


def test_a_recipe_cost_is_a_speed_figure_only_from_a_quiet_machine():
  """benchmarks/recipe_cost.py's file renders steps/s and hours only when it
  says the machine was quiet (and so do the words a page quotes, each
  recipe's `full_run`); en_base's figures say they are extrapolated."""
  import importlib.util  # pylint: disable=g-import-not-at-top
  spec = importlib.util.spec_from_file_location("recipe_cost", os.path.join(
      helpers.REPO_ROOT, "benchmarks", "recipe_cost.py"))
  recipe_cost = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(recipe_cost)
  recipes = {
      "cmlm/en_workstation": dict(batch=32, measured_batch=32, steps=4000,
                                  step_s=1.5),
      "cmlm/en_base": dict(batch=2048, measured_batch=16, steps=1_000_000,
                           step_s=2.0)}
  rows = {}
  for name, r in recipes.items():
    step_s = r["step_s"] * r["batch"] / r["measured_batch"]
    rows[name] = {"encoder": "2 x 16, 8 tokens", "batch": r["batch"],
                  "train_steps": r["steps"], "measured_batch":
                  r["measured_batch"], "examples": r["batch"] * r["steps"],
                  "extrapolated": r["batch"] != r["measured_batch"],
                  "steps_per_s": 1 / step_s,
                  "projected_hours": round(step_s * r["steps"] / 3600, 1)}
  for quiet in (False, True):
    result = {"command": "python benchmarks/recipe_cost.py", "commit": "abc",
              "cpu": "Some CPU", "cpu_flags": ["avx2"], "cores": 8,
              "date": "2026-11-27", "load": "1-minute load 0.2 before",
              "quiet": quiet, "quiet_rule": "below 1.0",
              "recipes": json.loads(json.dumps(rows))}
    for row in result["recipes"].values():
      row["full_run"] = recipe_cost.full_run(row, quiet, 8)
    table = figures.render_recipe_cost([result])
    workstation, base = (result["recipes"][name]["full_run"]
                         for name in recipes)
    if quiet:
      assert "~1.7 h" in table and workstation == "~1.7 h on 8 CPU cores"
      assert "16, extrapolated linearly to 2,048" in table
      assert base.endswith("extrapolated from batch 16")
      assert base.startswith("~71,111 h")
    else:
      assert " h " not in table and "~" not in table
      assert "not measured quietly" in table and "not quiet" in table
      assert workstation == base == "not yet measured on a quiet machine"


def test_the_large_file_table_shows_speed_only_from_a_quiet_machine(tmp_path):
  """benchmarks/encode_large_file.py's file: the streaming ratio and each
  size's peak memory; its ISA mapping read as flags; no speed when the
  machine was loaded (the memory still shown)."""
  root = str(tmp_path)
  result = {"command": "python benchmarks/encode_large_file.py",
            "commit": "abc", "cpu": "Some CPU",
            "isa": {"avx2": True, "avx512f": False}, "cores": 2,
            "date": "2026-11-28", "load_before": 0.2, "quiet": True,
            "model": "tiny", "backend": "onnx float32", "batch_size": 256,
            "lines": 200000, "in_memory_sent_per_s": 1000.0,
            "streaming_sent_per_s": 950.0, "streaming_vs_in_memory": 0.95,
            "whole_run_sent_per_s": 900.0, "streaming_wall_s": 222.2,
            "streaming_start_s": 5.0,
            "peak_rss_mb": {"20000": 700.0, "200000": 702.0}}
  _write(root, "l.json", json.dumps(result))
  page = "# P\n\n<!-- figures:large_file l.json -->\n<!-- /figures -->\n"
  rendered = figures.render_document(page, root)
  assert "Some CPU (avx2), 2 cores" in rendered
  assert "| `encode` streaming, its start taken off | 950 (0.95x in memory) |" in rendered
  assert "| 200,000 | 702 MB |" in rendered
  result["quiet"] = False
  _write(root, "l.json", json.dumps(result))
  loaded = figures.render_document(rendered, root)
  assert "950" not in loaded and "| 20,000 | 700 MB |" in loaded


def test_the_mine_scaling_table_lists_run_skipped_and_unfinished_cells(
    tmp_path):
  root = str(tmp_path)
  stages = {n: {"seconds": 1.25, "peak_rss_mb": 300.0}
            for n in ("index", "search", "margin")}
  result = {"command": "python benchmarks/mine_scaling.py", "commit": "abc",
            "cpu": "Some CPU", "cpu_flags": ["avx2"], "cores": 2,
            "date": "2026-11-28", "load": "0.1", "dim": 8, "clusters": 10,
            "k": 4, "nprobe": 16, "complete": False,
            "cells": ["10/flat", "10/ivf", "100/ivf", "100/flat"],
            "results": {"10/flat": {"stages": stages, "pairs": 9},
                        "10/ivf": {"stages": stages, "pairs": 8, "recall": {
                            "recall_at_k": 0.95, "top1_agreement": 0.9}}},
            "skipped": {"100/flat": {"dot_products_both_ways": 20000}}}
  _write(root, "m.json", json.dumps(result))
  page = "# P\n\n<!-- figures:mine_scaling m.json -->\n<!-- /figures -->\n"
  rows = [line for line in figures.render_document(page, root).splitlines()
          if line.startswith("| ")]
  assert rows[1:] == [
      "| 10 | flat | 1.2 | 1.2 | 1.2 | 300 | 9 | n/a | n/a |",
      "| 10 | ivf | 1.2 | 1.2 | 1.2 | 300 | 8 | 0.9500 | 0.9000 |",
      "| 100 | flat | not run: exact search is 2.0e+04 dot products | | | | "
      "| | |",
      "| 100 | ivf | stopped before it ended | | | | | | |"]


def test_the_mine_scaling_tables_project_a_sampled_exact_search(tmp_path):
  """A skipped flat cell whose exact search was sampled reads in hours at
  the measured rate; each results file of the block gets its table."""
  root = str(tmp_path)
  base = {"command": "python benchmarks/mine_scaling.py", "commit": "abc",
          "cpu": "Some CPU", "cpu_flags": ["avx2"], "cores": 2,
          "date": "2026-11-28", "load": "0.1", "dim": 8, "clusters": 10,
          "k": 4, "nprobe": 16, "complete": True, "results": {}}
  _write(root, "a.json", json.dumps(dict(
      base, cells=["1000000/flat"], skipped={"1000000/flat": {
          "dot_products_both_ways": 2 * 10 ** 12, "sampled_exact": {
              "queries": 10000, "index_seconds": 3.0,
              "search_seconds": 200.0, "dot_products_per_second": 5 * 10 ** 7,
              "projected_search_seconds_both_ways": 40000}}})))
  stages = {n: {"seconds": 2.0, "peak_rss_mb": 10.0}
            for n in ("index", "search", "margin")}
  _write(root, "b.json", json.dumps(dict(
      base, commit="def", cells=["1000000/hnsw"], results={
          "1000000/hnsw": {"stages": stages, "pairs": 7}})))
  page = ("# P\n\n<!-- figures:mine_scaling a.json b.json -->\n"
          "<!-- /figures -->\n")
  rendered = figures.render_document(page, root)
  rows = [line for line in rendered.splitlines() if line.startswith("| 1")]
  assert rows == [
      "| 1,000,000 | flat | not run: exact search is 2.0e+12 dot products, "
      "about 11.1 hours at the 5.00e+07 a second measured on 10,000 queries "
      "| | | | | | |",
      "| 1,000,000 | hnsw | 2.0 | 2.0 | 2.0 | 10 | 7 | n/a | n/a |"]
  assert "commit `abc`" in rendered and "commit `def`" in rendered


def test_the_input_release_table_shows_each_arm_s_waits_and_speeds(tmp_path):
  """benchmarks/input_release.py's file: per arm and wait, the median and
  largest release over the trials, then each arm's pipeline speeds."""
  root = str(tmp_path)
  releases = [{"arm": arm, "wait_s": wait, "trial": t,
               "release_wall_s": wall + t, "release_cpu_s": 0.25}
              for arm, wall in (("autotuning model", 4.0),
                                ("no autotuning model", 0.3))
              for wait in (5.0, 20.0) for t in range(3)]  # (the file's order)
  result = {"command": "python benchmarks/input_release.py", "commit": "abc",
            "cpu": "Some CPU", "cpu_flags": ["avx2"], "cores": 2,
            "date": "2026-11-28", "load": "0.2 before", "steps": 4, "busy": 2,
            "experiment": "cmlm/demo", "pipeline_batches": 200,
            "releases": releases,
            "pipeline_examples_per_s": {"autotuning model": [1000.0, 1100.4],
                                        "no autotuning model": [1200.0,
                                                                1300.0]}}
  _write(root, "r.json", json.dumps(result))
  page = "# P\n\n<!-- figures:input_release r.json -->\n<!-- /figures -->\n"
  rendered = figures.render_document(page, root)
  rows = [line for line in rendered.splitlines() if line.startswith("| ")]
  assert rows[1:5] == [
      "| autotuning model | 5 | 3 | 5.00 | 6.00 | 0.25 |",
      "| autotuning model | 20 | 3 | 5.00 | 6.00 | 0.25 |",
      "| no autotuning model | 5 | 3 | 1.30 | 2.30 | 0.25 |",
      "| no autotuning model | 20 | 3 | 1.30 | 2.30 | 0.25 |"]
  assert rows[-2:] == ["| autotuning model | 1,000, 1,100 |",
                       "| no autotuning model | 1,200, 1,300 |"]
  assert "commit `abc`; Some CPU (avx2), 2 cores; 2026-11-28" in rendered
  assert figures.render_document(rendered, root) == rendered


def test_the_demo_s_rows_against_the_mean_pool_give_a_verdict_at_5_seeds():
  """The demo's table reads trained minus the untrained weights mean-pooled
  by the evidence protocol: under 5 seeds every row says it is no verdict;
  at 5, each row's t-interval and its paired t-test's p adjusted by Holm
  over the table's two rows (step-down: beside a clear row a p under 0.05
  stands; two p's between 0.025 and 0.05 are both level once adjusted)."""
  def demo_run(seed, mrr_gap, sts_gap):
    figures_ = {key: 0.5 for _, *keys, _, _ in figures.DEMO_ROWS
                for key in keys if key}
    figures_.update(conditioning_gain_ci95=[0.1, 0.2],
                    retrieval_mrr_gain_ci95=[0.0, 0.1],
                    retrieval_mrr_trained=0.5 + mrr_gap,
                    stsb_dev_trained=0.5 + sts_gap)
    return {"seed": seed, "figures": figures_}

  def rows_against_mean_pool(mrr, sts):
    runs = [demo_run(seed, m, s) for seed, (m, s) in enumerate(zip(mrr, sts))]
    return [line for line in figures.render_demo_figures(runs).splitlines()
            if "trained minus untrained mean pool" in line]
  clear = [0.030, 0.031, 0.029, 0.032, 0.030]
  borderline = [2.0, -0.1, 1.5, 0.9, 2.4]
  assert 0.025 < statistics.paired_t_p(borderline) < 0.05
  assert statistics.paired_t_p(clear) < 0.001
  for mrr, sts, verdict in ((clear, borderline, "**above**"),
                            ([d / 100 for d in borderline], borderline,
                             "level")):
    rows = rows_against_mean_pool(mrr, sts)
    assert len(rows) == 2
    for row in rows:
      assert "above over 5 seeds; Holm over the 2 rows: p " in row, row
      assert row.endswith(f", {verdict} | - |"), row
      assert protocol.MORE_SEEDS not in row
  three = rows_against_mean_pool(clear[:3], borderline[:3])
  assert len(three) == 2
  for row in three:
    assert row.endswith(f"over 3 seeds ({protocol.MORE_SEEDS}) | - |"), row
    assert "Holm" not in row
