"""The evidence protocol's results as files, and the tables read from them.

Each result of an evidence script is a small JSON file committed beside the
method (`projects/<method>/results/`, `docs/results/` for the core): the
command, the commit, the CPU, the date, the seeds, the arms, every arm's
per-seed value of each measure, and the comparison computed from them
(`comparison`): per arm and measure, the per-seed differences to the
control, their mean, the 95% t-interval over seeds and the verdict it gives
(`evidence_protocol.verdict`, labelled unadjusted), the paired t-test's p
and the Holm-adjusted p and verdict over the arm's measures
(`evidence_protocol.holm_family`), the "run at 5 seeds" flag of any row
under 5 seeds, and beside it, labelled, the example-level paired bootstrap
interval of the run.

The README and doc tables are rendered from these files between marker
comments, so a table and its file cannot drift apart
(`tests/experiments/test_results_tables.py` regenerates them in memory):

    <!-- results:projects/<name>/results/evidence.json -->
    ...the table...
    <!-- /results -->

    <!-- verdicts:docs/results/cmlm_vs_mlm.json projects/... -->
    ...one row per claim...
    <!-- /verdicts -->

    <!-- historical:projects/<name>/results/evidence.json ... -->
    ...one row per historical file...
    <!-- /historical -->

Paths in markers are relative to the repository root. A results file is
either rebuilt from its units (`units`: the folder of its per-example
units) or historical (`"historical": true` and `historical_reason`: a
table whose units were not kept): a historical file holds no comparison,
its table shows each arm's values only, and it may be rendered only in a
section headed "Historical..." whose text names no verdict
(`results_check`).

  python experiments/evidence_tables.py            # rewrite every table
  python experiments/evidence_tables.py --check    # exit 1 if one differs,
      # a unit-backed file differs from its units, or a historical one
      # carries a verdict (`results_check`)
  python experiments/evidence_tables.py --from_units=DIR --out=FILE.json \\
      --control=ARM --arms=ARM,ARM --measures=M,M --seeds=1,2,3 \\
      --command="..." --cpu="..." --date=YYYY-MM-DD [--title=... --claim=...]

`--from_units` reads a `UnitStore` work_dir (`<arm>/seed<S>/result.json`)
or a units folder (`<arm>/seed<S>.json`), each unit `{"measures": {...}}`,
and writes the results file with the full example-level bootstrap
(`evidence_protocol.compare`) and `units`, the folder it was read from;
the commit is the units' (each records the code that ran it), every one
of them listed when they differ (`mixed_commits`).
"""
import argparse
import glob
import json
import math
import os
import re
import sys
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from cmlm.evaluation import statistics  # noqa: E402
from cmlm.experiments import evidence_protocol as protocol  # noqa: E402
from cmlm.experiments import unit_provenance  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The core's pages whose tables are rendered from results files; each
# project's are its README.md, found, not listed (`project_documents`).
CORE_DOCUMENTS = ("docs/cmlm_results.md", "docs/evidence.md")
RESULTS = re.compile(r"(<!-- results:(\S+) -->\n)(.*?)(<!-- /results -->)",
                     re.S)
VERDICTS = re.compile(r"(<!-- verdicts:([^>]+?) -->\n)(.*?)(<!-- /verdicts -->)",
                      re.S)
HISTORICAL = re.compile(
    r"(<!-- historical:([^>]+?) -->\n)(.*?)(<!-- /historical -->)", re.S)


def project_documents(root: str = REPO_ROOT) -> Tuple[str, ...]:
  """Every project's README.md (`projects/<name>/README.md`), where its
  results tables are: a project folder brings its page with it."""
  return tuple(sorted(
      os.path.relpath(path, root).replace(os.sep, "/")
      for path in glob.glob(os.path.join(root, "projects", "*", "README.md"))))


# Every page whose tables are rendered from results files.
DOCUMENTS = CORE_DOCUMENTS + project_documents()


def control_of(result: Mapping) -> str:
  controls = [a["name"] for a in result["arms"] if a.get("control")]
  if len(controls) != 1:
    raise ValueError(f"{result.get('title', 'A results file')} must name "
                     f"exactly one control arm, got {len(controls)}.")
  return controls[0]


def comparison(per_seed: Mapping[str, Mapping[str, Sequence[float]]],
               control: str, bootstrap: Optional[Mapping] = None
               ) -> Dict[str, Dict[str, dict]]:
  """{arm: {measure: row}} for every arm but the control: the per-seed
  differences (arm - control, seed by seed), their mean, the 95% t-interval
  over seeds, its verdict (unadjusted) and flag, the paired t-test's p and
  its Holm-adjusted p and verdict over the arm's measures (one family), the
  sign test's count, and `bootstrap[arm][measure]` (the run's example-level
  paired bootstrap interval) beside it."""
  out = {}
  for arm, measures in per_seed.items():
    if arm == control:
      continue
    out[arm] = {}
    for measure, values in measures.items():
      base = per_seed[control][measure]
      if len(base) != len(values):
        raise ValueError(f"{arm} and {control} have {len(values)} and "
                         f"{len(base)} seeds of {measure}: pair them.")
      differences = [a - c for a, c in zip(values, base)]
      over_seeds = statistics.t_interval(differences)
      row = {"vs_control": {
          "per_seed": differences, "difference": over_seeds["mean"],
          "t_interval": over_seeds["interval"], "t": over_seeds["t"],
          "sd": over_seeds["sd"], "p": statistics.paired_t_p(differences),
          "bootstrap_interval": (bootstrap or {}).get(arm, {}).get(measure),
          "seeds_up": sum(d > 0 for d in differences)}}
      row["vs_control"]["verdict"] = protocol.verdict(row)
      row["vs_control"]["flag"] = (protocol.MORE_SEEDS if
                                   protocol.needs_more_seeds(row) else None)
      out[arm][measure] = row["vs_control"]
    protocol.holm_family(list(out[arm].values()))
  return out


def with_comparison(result: Mapping) -> dict:
  """`result` with its `comparison` computed from its per-seed values."""
  result = dict(result)
  result["comparison"] = comparison(result["per_seed"], control_of(result),
                                    result.get("bootstrap"))
  return result


def _f(x: Optional[float], digits: int) -> str:
  return "-" if x is None or math.isnan(x) else f"{x:.{digits}f}"


def _interval(interval, digits: int) -> str:
  if interval is None:
    return "-"
  return f"[{interval[0]:+.{digits}f}, {interval[1]:+.{digits}f}]"


def _arm_header(arm: Mapping, control: str) -> str:
  """The arm's name; "(control)", and the pooling it is read with when one
  was chosen for it (`read_pooling`)."""
  notes = (["control"] if arm["name"] == control else []) + (
      [f"{arm['read_pooling']} pooling"] if arm.get("read_pooling") else [])
  return arm["name"] + (f" ({'; '.join(notes)})" if notes else "")


def _values_table(result: Mapping) -> List[str]:
  """Each arm's mean ± sample std over seeds per measure, each seed in
  brackets."""
  control = control_of(result)
  digits = result.get("digits", {})
  arms = [a["name"] for a in result["arms"]]
  lines = ["| measure | " + " | ".join(
      _arm_header(a, control) for a in result["arms"]) + " |",
           "|---|" + "---|" * len(arms)]
  for measure in result["measures"]:
    d = digits.get(measure, 2)
    cells = []
    for arm in arms:
      values = result["per_seed"][arm][measure]
      s = statistics.summarize(values)
      cells.append(f"{_f(s['mean'], d)} ± {_f(s['std'], d)} ("
                   + ", ".join(_f(v, d) for v in values) + ")")
    lines.append(f"| {measure} | " + " | ".join(cells) + " |")
  return lines


def render_results(result: Mapping) -> str:
  """Two Markdown tables: each arm's mean ± sample std over seeds (each
  seed in brackets); each arm minus the control per measure, with the
  per-seed differences, the 95% t-interval over seeds and its verdict
  (unadjusted), the Holm-adjusted p and verdict over the arm's measures,
  and the example-level paired bootstrap interval beside them. A
  historical file gets the first table only, and its reason."""
  lines = _values_table(result)
  if result.get("historical"):
    return "\n".join(lines + ["", f"Historical: {result['historical_reason']}"
                              ]) + "\n"
  control = control_of(result)
  digits = result.get("digits", {})
  arms = [a["name"] for a in result["arms"]]
  measures = result["measures"]
  lines += ["", "| arm - control | measure | per-seed differences | mean | "
            "95% t-interval over seeds | verdict (unadjusted) | p (Holm) | "
            "verdict (Holm) | example-level paired bootstrap 95% | seeds up |",
            "|---|---|---|---|---|---|---|---|---|---|"]
  computed = comparison(result["per_seed"], control, result.get("bootstrap"))
  for arm in arms:
    if arm == control:
      continue
    for measure in measures:
      d = digits.get(measure, 2)
      row = computed[arm][measure]
      holm_p = "-" if row["holm_p"] is None else _p(row["holm_p"])
      lines.append(
          f"| {arm} - {control} | {measure} | "
          + ", ".join(f"{v:+.{d}f}" for v in row["per_seed"])
          + f" | {row['difference']:+.{d}f} | "
          f"{_interval(row['t_interval'], d)} | "
          f"{protocol.shown_verdict(row['verdict'], row['flag'])} | "
          f"{holm_p} | "
          f"{protocol.shown_verdict(row['holm_verdict'], row['flag'])} | "
          f"{_interval(row['bootstrap_interval'], d)} | "
          f"{row['seeds_up']}/{len(row['per_seed'])} |")
  if result.get("mixed_commits"):
    lines += ["", result["mixed_commits"]]
  return "\n".join(lines) + "\n"


def _p(p: float) -> str:
  return "<0.001" if p < 0.001 else f"{p:.3f}"


def verdict_cell(result: Mapping, key: str = "verdict") -> str:
  """The claim's arms' verdicts over the measures: `key` "verdict", by the
  t-interval (unadjusted); "holm_verdict", Holm-adjusted over each arm's
  measures."""
  control = control_of(result)
  computed = comparison(result["per_seed"], control, result.get("bootstrap"))
  parts = []
  for arm in result.get("claim_arms") or [a for a in computed]:
    by_verdict = {}
    for measure in result["measures"]:
      row = computed[arm][measure]
      name = row[key] + (
          f" (at {len(row['per_seed'])} seeds: {row['flag']})"
          if row["flag"] else "")
      by_verdict.setdefault(name, []).append(measure)
    parts.append(f"{arm} vs {control}: " + "; ".join(
        f"{verdict} on {', '.join(measures)}"
        for verdict, measures in by_verdict.items()))
  return (f"{result.get('setting', '')}: " if result.get("setting")
          else "") + " — ".join(parts)


def render_verdicts(results: Sequence[Mapping], document_dir: str = "") -> str:
  """One row per claim (files sharing a `claim`), its verdict per file, and
  a link to each file's page (`page`) relative to `document_dir`."""
  lines = ["| claim | script | arms (control first) | results | verdict, "
           "unadjusted (95% t-interval over seeds) | verdict, Holm-adjusted "
           "over the claim's measures | note |",
           "|---|---|---|---|---|---|---|"]
  claims = {}
  for result in results:
    claims.setdefault(result["claim"], []).append(result)
  for claim, group in claims.items():
    first = group[0]
    control = control_of(first)
    arms = [control] + [a["name"] for a in first["arms"]
                        if a["name"] != control]
    note = " ".join(r.get("note", "") for r in group if r.get("note"))
    pages = sorted({r["page"] for r in group if r.get("page")})
    links = ", ".join(
        f"[{_page_name(p)}]"
        f"({os.path.relpath(p.split('#')[0], document_dir)}"
        + (f"#{p.split('#')[1]})" if "#" in p else ")") for p in pages)
    lines.append(f"| {claim} | `{first['script']}` | {', '.join(arms)} | "
                 f"{links} | " + "<br>".join(verdict_cell(r) for r in group)
                 + " | " + "<br>".join(verdict_cell(r, "holm_verdict")
                                       for r in group) + f" | {note} |")
  return "\n".join(lines) + "\n"


def render_historical(results: Sequence[Mapping],
                      document_dir: str = "") -> str:
  """One row per historical file: its script, arms, seeds, date, page
  and why it is historical; no claim, no difference, no verdict."""
  lines = ["| script | arms (control first) | seeds | date | table | "
           "historical because |", "|---|---|---|---|---|---|"]
  for result in results:
    control = control_of(result)
    arms = [control] + [a["name"] for a in result["arms"]
                        if a["name"] != control]
    page = result.get("page", "")
    link = (f"[{_page_name(page)}]"
            f"({os.path.relpath(page.split('#')[0], document_dir)}"
            + (f"#{page.split('#')[1]})" if "#" in page else ")")
            if page else "-")
    lines.append(f"| `{result['script']}` ({result.get('setting', '')}) | "
                 f"{', '.join(arms)} | {len(result['seeds'])} | "
                 f"{result['date']} | {link} | "
                 f"{result['historical_reason']} |")
  return "\n".join(lines) + "\n"


def _page_name(page: str) -> str:
  """projects/<name>/README.md -> <name>; docs/x.md -> x."""
  folder, name = os.path.split(page.split("#")[0])
  return (os.path.basename(folder) if name == "README.md"
          else os.path.splitext(name)[0])


def load(path: str, root: str = REPO_ROOT) -> dict:
  full = os.path.join(root, path)
  if not os.path.exists(full):
    raise FileNotFoundError(f"The results file {path} named in a marker does "
                            "not exist.")
  with open(full, encoding="utf-8") as f:
    return json.load(f)


def render_document(text: str, root: str = REPO_ROOT,
                    document_dir: str = "") -> str:
  """`text` with every marked table rendered from its files; `document_dir`
  is the page's folder (relative to the root), for the links."""
  # Blank lines around each table: a Markdown table ends at a blank line.
  text = RESULTS.sub(lambda m: m.group(1) + "\n" + render_results(
      load(m.group(2), root)) + "\n" + m.group(4), text)
  text = HISTORICAL.sub(lambda m: m.group(1) + "\n" + render_historical(
      [load(p, root) for p in m.group(2).split()], document_dir)
                        + "\n" + m.group(4), text)
  return VERDICTS.sub(lambda m: m.group(1) + "\n" + render_verdicts(
      [load(p, root) for p in m.group(2).split()], document_dir)
                      + "\n" + m.group(4), text)


def stale_files(root: str = REPO_ROOT, documents=DOCUMENTS) -> List[str]:
  """Results files whose stored comparison is not what their per-seed
  values give (a historical file holds none: `results_check`)."""
  stale = []
  for document in documents:
    with open(os.path.join(root, document), encoding="utf-8") as f:
      text = f.read()
    paths = [m.group(2) for m in RESULTS.finditer(text)]
    for m in VERDICTS.finditer(text):
      paths += m.group(2).split()
    for path in paths:
      result = load(path, root)
      if result.get("historical"):
        continue
      if json.loads(json.dumps(with_comparison(result)["comparison"])) != \
          result.get("comparison"):
        stale.append(path)
  return stale


def results_from_units(units_dir: str, arms: Sequence[str], control: str,
                       measures: Sequence[str], seeds: Sequence[int],
                       resamples: int = statistics.RESAMPLES) -> dict:
  """Per-seed values and bootstrap intervals of finished units, read from a
  `UnitStore` work_dir (`<arm>/seed<S>/result.json`) or a units folder
  (`<arm>/seed<S>.json`), and the commit(s) the units ran at
  (`unit_provenance.code_commits`)."""
  results, units = load_units(units_dir, arms, seeds)
  return dict(tabulated(results, arms, control, measures, seeds, resamples),
              **unit_provenance.code_commits(units))


def load_units(units_dir: str, arms: Sequence[str], seeds: Sequence[int]
               ) -> Tuple[Dict[str, Dict[int, Mapping]], Dict[str, Mapping]]:
  """`results[arm][seed]` (the unit's measures) and `{"<arm> seed <S>":
  unit}` of every (arm, seed), from a `UnitStore` work_dir or a units
  folder; FileNotFoundError naming the first one missing."""
  store = protocol.UnitStore(units_dir)
  flat = protocol.UnitStore(units_dir, units_dir=units_dir)
  results, units = {}, {}
  for arm in arms:
    for seed in seeds:
      unit = store.load(arm, seed) or flat.load(arm, seed)
      if unit is None:
        raise FileNotFoundError(f"No unit of arm {arm!r}, seed {seed} under "
                                f"{units_dir}.")
      results.setdefault(arm, {})[seed] = unit["measures"]
      units[f"{arm} seed {seed}"] = unit
  return results, units


def tabulated(results: Mapping[str, Mapping[int, Mapping]],
              arms: Sequence[str], control: str, measures: Sequence[str],
              seeds: Sequence[int], resamples: int = statistics.RESAMPLES
              ) -> dict:
  """A results file's per-seed values and example-level bootstrap
  intervals from `results[arm][seed][measure]` (samples)."""
  protocol_arms = [protocol.Arm(a, None, control=a == control) for a in arms]
  compared = protocol.compare(results, protocol_arms, measures, resamples)
  per_seed = {arm: {m: [statistics.statistic(results[arm][s][m])
                        for s in seeds] for m in measures} for arm in arms}
  bootstrap = {arm: {m: compared[arm][m]["vs_control"]["bootstrap_interval"]
                     for m in measures} for arm in arms if arm != control}
  return {"seeds": list(seeds), "arms": [{"name": a, "control": a == control}
                                         for a in arms],
          "measures": list(measures), "per_seed": per_seed,
          "bootstrap": bootstrap,
          "bootstrap_note": "example-level paired bootstrap 95% interval "
                            f"({resamples} resamples over seeds and "
                            "examples), computed from the units"}


def write_json(result: Mapping, path: str) -> None:
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  with open(path, "w", encoding="utf-8") as f:
    json.dump(result, f, indent=1, ensure_ascii=False)
    f.write("\n")


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--check", action="store_true",
                      help="Change nothing; exit 1 when a table or a stored "
                      "comparison differs from its files, a unit-backed file "
                      "from its units (rebuilt in full, bootstrap included: "
                      "minutes), or a historical file is shown with a "
                      "verdict.")
  parser.add_argument("--from_units", help="A UnitStore work_dir or units "
                      "folder to build a results file from (with --out).")
  for name in ("out", "control", "arms", "measures", "command", "cpu", "date",
               "title", "claim", "script"):
    parser.add_argument(f"--{name}", default="")
  parser.add_argument("--seeds", default="1,2,3")
  args = parser.parse_args(argv)
  if args.from_units:
    if not (args.out and args.control and args.arms and args.measures):
      parser.error("--from_units needs --out, --control, --arms and "
                   "--measures.")
    result = {"title": args.title, "claim": args.claim, "script": args.script,
              "command": args.command, "cpu": args.cpu, "date": args.date,
              "units": os.path.relpath(os.path.abspath(args.from_units),
                                       REPO_ROOT).replace(os.sep, "/")}
    result.update(results_from_units(
        args.from_units, args.arms.split(","), args.control,
        args.measures.split(","), [int(s) for s in args.seeds.split(",")]))
    write_json(with_comparison(result), args.out)
    print(f"(written to {args.out})")
    return 0
  differing = []
  for document in DOCUMENTS:
    path = os.path.join(REPO_ROOT, document)
    with open(path, encoding="utf-8") as f:
      text = f.read()
    rendered = render_document(text, document_dir=os.path.dirname(document))
    if rendered != text:
      differing.append(document)
      if not args.check:
        with open(path, "w", encoding="utf-8") as f:
          f.write(rendered)
  stale = stale_files()
  if args.check:
    from cmlm.experiments import results_check  # pylint: disable=g-import-not-at-top
    for name in differing + stale:
      print(f"{name} differs from its results files.")
    problems = results_check.problems()
    for problem in problems:
      print(problem)
    return 1 if differing or stale or problems else 0
  for path in stale:
    write_json(with_comparison(load(path)), os.path.join(REPO_ROOT, path))
  for name in differing + stale:
    print(f"rewrote {name}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
