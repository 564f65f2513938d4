"""What judges the CMLM vs MLM claim and what selects, named before any run
(`experiments/cmlm_vs_mlm.py`), and its results file read from the units.

  * primary measures (`PRIMARY`), never used to choose anything: SICK-R on
    SICK train + trial and STS-B train (held apart from STS-B dev);
  * the selection set (`SELECTION`): STS-B dev, on which cmlm/demo's recipe
    (max pooling, 2,000 steps) was chosen and on which each arm's read
    pooling is chosen here (`chosen_poolings`: of `READ_POOLINGS`, the one
    with the higher mean over the arm's seeds, the same rule for every arm);
    reported as a secondary measure, labelled as such (`LABELS`, which
    labels the primary measures too);
  * every other measure is secondary.

A unit records every measure at each read pooling (`reading`); the results
file (`results_file`, `experiments/evidence_tables.py`'s shape) gives each
arm at its chosen pooling under `measures`, and every reading under
`measures_by_pooling`, with the commit(s) of the code that ran the units.
"""
import os
from typing import Dict, List, Mapping, Sequence

import numpy as np

from cmlm.evaluation import statistics
from cmlm.experiments import evidence_measures
from cmlm.experiments import evidence_tables
from cmlm.experiments import unit_provenance

# Never used to choose a recipe or a pooling: the claim is judged on these.
PRIMARY = ("sick-r train+trial", "sts-b train")
# STS-B dev: cmlm/demo's recipe and each arm's read pooling are chosen on it.
SELECTION = "sts-b"
TRANSFER = evidence_measures.TRANSFER_MEASURES
RETRIEVAL = "next-seq MRR"
READ_POOLINGS = ("mean", "max")
LABELS = dict({SELECTION: "sts-b dev (selection set)"},
              **{m: f"{m} (primary)" for m in PRIMARY})
RECIPE = "cmlm/demo's recipe (max pooling, 2,000 steps)"
CLAIM = "CMLM beats MLM at equal compute (section 3.2)"
PAGE = "docs/cmlm_results.md#cmlm-vs-mlm-section-32s-claim-at-small-scale"


def reading(measure: str, pooling: str) -> str:
  """A unit's name of `measure` read with `pooling`."""
  return f"{measure} [{pooling}]"


def label(measure: str) -> str:
  return LABELS.get(measure, measure)


def check_units(units: Mapping[str, Mapping], setup: Mapping,
                units_dir: str) -> None:
  """Every unit ran with `setup` (steps, tasks, ...): one clear error."""
  differing = [name for name, unit in units.items()
               if unit.get("setup") != dict(setup)]
  if differing:
    raise ValueError(
        f"The units {', '.join(differing)} under {units_dir} were run with "
        f"another setup than {dict(setup)}; give another --units_dir and "
        "--work_dir, or the flags they ran with.")


def chosen_poolings(results: Mapping[str, Mapping[int, Mapping]],
                    arms: Sequence[str]) -> Dict[str, dict]:
  """Each arm's read pooling: of `READ_POOLINGS`, the one with the higher
  `SELECTION` mean over the arm's seeds (ties: the first)."""
  chosen = {}
  for arm in arms:
    units = results.get(arm, {})
    if not units:
      continue
    means = {p: float(np.mean([statistics.statistic(u[reading(SELECTION, p)])
                               for u in units.values()]))
             for p in READ_POOLINGS}
    chosen[arm] = {"pooling": max(means, key=means.get),
                   "selection_means": means, "seeds": sorted(units)}
  return chosen


def own_readings(results, chosen, names: Sequence[str]) -> dict:
  """`results` with each arm's measures `names` at its chosen pooling,
  labelled (`label`)."""
  return {arm: {seed: {label(m): measured[reading(m, chosen[arm]["pooling"])]
                       for m in names}
                for seed, measured in by_seed.items()}
          for arm, by_seed in results.items()}


def tabulated_readings(results, chosen, names: Sequence[str],
                       seeds: Sequence[int]) -> dict:
  """Each arm's unit values under every name its results file tabulates:
  the measures at the arm's chosen pooling (labelled) and every reading."""
  own = own_readings(results, chosen, names)
  return {arm: {s: dict(results[arm][s], **own[arm][s]) for s in seeds}
          for arm in results}


def readings_from_units(result: Mapping, units_dir: str):
  """(values, units, names) of the results file `result` read again from
  its units: the read poolings chosen again on the selection set, the
  values under every name `result["per_seed"]` holds. How
  `evidence_tables.py --check` rebuilds this file."""
  arms = [a["name"] for a in result["arms"]]
  seeds = result["seeds"]
  results, units = evidence_tables.load_units(units_dir, arms, seeds)
  chosen = chosen_poolings(results, arms)
  names = list(dict.fromkeys(m.rsplit(" [", 1)[0]
                             for m in result["measures_by_pooling"]))
  tabulated_names = [label(m) for m in names] + [
      reading(m, p) for m in names for p in READ_POOLINGS]
  return (tabulated_readings(results, chosen, names, seeds), units,
          tabulated_names)


def _machines(units: Mapping[str, Mapping]) -> str:
  return " ; ".join(sorted({
      f"{u['cpu']} ({u['cores']} cores; "
      + ", ".join(f for f, present in u["isa"].items() if present) + ")"
      for u in units.values()}))


def results_file(arms, results, chosen, units: Mapping[str, Mapping],
                 names: Sequence[str], seeds: Sequence[int], setup: Mapping,
                 title: str, units_dir: str, resamples: int) -> dict:
  """The results file of the finished units: `measures` each arm at its
  chosen pooling (primary first), `measures_by_pooling` every reading,
  `commit` the units' (`unit_provenance.code_commits`)."""
  labels = [label(m) for m in names]
  by_pooling = [reading(m, p) for m in names for p in READ_POOLINGS]
  both = tabulated_readings(results, chosen, names, seeds)
  control = next(a.name for a in arms if a.control)
  dates = sorted(u["date"][:10] for u in units.values())
  result = {
      "title": title, "claim": CLAIM, "claim_arms": ["CMLM"],
      "script": "experiments/cmlm_vs_mlm.py", "units": units_dir,
      "command": " ; ".join(sorted({u["command"] for u in units.values()})),
      "cpu": _machines(units),
      "date": dates[0] if dates[0] == dates[-1] else
              f"{dates[0]} to {dates[-1]}",
      "provenance": "computed by experiments/cmlm_vs_mlm.py from its units ("
                    f"{units_dir}/<arm>/seed<S>.json: per-example values, "
                    "each with the commit, CPU, date and command it ran with)",
      "plan": {"primary_measures": [label(m) for m in PRIMARY],
               "secondary_measures": [label(m) for m in names
                                      if m not in PRIMARY],
               "selection_set": f"{label(SELECTION)}: chose {RECIPE} and "
                                "each arm's read pooling",
               "read_pooling_rule": f"per arm, of {', '.join(READ_POOLINGS)}"
                                    f" the one with the higher "
                                    f"{label(SELECTION)} mean over its seeds"},
      "read_pooling": chosen, "setup": dict(setup),
      "measure_data": {label(m): evidence_measures.MEASURE_DATA[
          m.replace("+PCR", "")] + (", +PCR" if m.endswith("+PCR") else "")
                       for m in names if m != RETRIEVAL},
      "measures_by_pooling": by_pooling, "page": PAGE,
      "note": "Each arm is read with its pooling chosen on STS-B dev ("
              + ", ".join(f"{a}: {c['pooling']}" for a, c in chosen.items())
              + "); the primary measures ("
              + ", ".join(label(m) for m in PRIMARY) + ") chose "
              "nothing. Every measure at each read pooling is in per_seed "
              "(measures_by_pooling)."}
  result.update(evidence_tables.tabulated(
      both, [a.name for a in arms], control, labels + by_pooling, seeds,
      resamples))
  result["measures"] = labels
  result["arms"] = [{"name": a.name, "control": a.control,
                     "description": a.description,
                     "compute": (a.compute.describe() if a.compute else
                                 "not trained"),
                     "read_pooling": chosen[a.name]["pooling"]} for a in arms]
  result["digits"] = {m: 3 for m in [RETRIEVAL] + [
      reading(RETRIEVAL, p) for p in READ_POOLINGS]}
  result.update(unit_provenance.code_commits(units))
  return evidence_tables.with_comparison(result)


def missing_units(results, arms: Sequence[str], seeds: Sequence[int]
                  ) -> List[str]:
  return [f"{a} seed {s}" for a in arms for s in seeds
          if s not in results.get(a, {})]


def relative(path: str, root: str) -> str:
  """`path` relative to `root` when inside it (how a results file names it)."""
  path = os.path.abspath(path)
  inside = os.path.commonpath([path, os.path.abspath(root)]) == \
      os.path.abspath(root)
  return os.path.relpath(path, root) if inside else path
