"""What `evidence_tables.py --check` verifies beyond the rendering.

A table rendered from its results file (`evidence_tables`) is only as good
as the file. Each results file a page names is one of two kinds:

- **unit-backed** (`units`: the folder of its per-example units, one per
  arm and seed): the check reads the units again (`READINGS`: by the
  script's plan where a file tabulates other names than its units', as
  CMLM vs MLM's arms read at a pooling chosen from the units) and fails on
  any difference (beyond the last bits of a float, `same`) in the seeds, the per-seed values, the example-level
  bootstrap intervals or the commits (`commit`, `unit_commits`,
  `mixed_commits`: the code that ran, every commit said when the units
  ran at more than one);
- **historical** (`"historical": true` and `historical_reason`: a table
  whose units were not kept, its values copied from what a run printed):
  it holds no comparison, no page shows it in a verdict table or the
  forest plot, and each marker that shows it sits in a section whose
  heading starts with "Historical" and whose text names no verdict
  (`VERDICT_WORDS`).

A file that is neither is a problem too. `problems(bootstrap=False)`
skips the bootstrap rebuild (seconds, not minutes: the tests' way).
"""
import json
import math
import os
import re
import sys
from typing import Iterator, List, Mapping, Optional, Sequence, Tuple

from cmlm.evaluation import statistics
from cmlm.experiments import evidence_tables
from cmlm.experiments import unit_provenance

# Words that state or imply a verdict: a historical section names none.
VERDICT_WORDS = re.compile(
    r"\b(supported|unsupported|beats?|beaten|above|below|level|leads?|"
    r"trails?|outperforms?|significant(?:ly)?|better|worse|wins?)\b", re.I)
HEADING = re.compile(r"^(#+)\s+(.*)$", re.M)
FOREST = re.compile(r"<!-- plot:forest \S+\.png ([^>]+?) -->")
# The fields a rebuild from units must reproduce; `bootstrap` only in full.
REBUILT = ("seeds", "per_seed", "commit", "unit_commits",
           "mixed_commits")
# A value rebuilt on another CPU may differ in its last bits (NumPy's and
# BLAS's sums take other vector paths with AVX-512 than with AVX2 alone): a
# float rebuilt agrees with the file's within this relative tolerance.
REL_TOL = 1e-9


def same(rebuilt, recorded) -> bool:
  """`rebuilt` and `recorded` hold the same keys, items and strings, and
  floats equal within `REL_TOL`."""
  if isinstance(rebuilt, float) and isinstance(recorded, (int, float)):
    return math.isclose(rebuilt, recorded, rel_tol=REL_TOL, abs_tol=1e-12)
  if isinstance(rebuilt, dict) and isinstance(recorded, dict):
    return rebuilt.keys() == recorded.keys() and all(
        same(value, recorded[key]) for key, value in rebuilt.items())
  if isinstance(rebuilt, list) and isinstance(recorded, list):
    return len(rebuilt) == len(recorded) and all(
        same(a, b) for a, b in zip(rebuilt, recorded))
  return rebuilt == recorded


def markers(text: str) -> Iterator[Tuple[str, str, int]]:
  """(kind, results file, offset) of every marker naming a file: kind
  "results", "verdicts", "historical" or "forest"."""
  for kind, pattern, group in (
      ("results", evidence_tables.RESULTS, 2),
      ("verdicts", evidence_tables.VERDICTS, 2),
      ("historical", evidence_tables.HISTORICAL, 2), ("forest", FOREST, 1)):
    for m in pattern.finditer(text):
      for path in m.group(group).split():
        yield kind, path, m.start()


def historical_section(text: str, offset: int) -> Optional[Tuple[str, str]]:
  """(heading, section text) of the innermost enclosing section of
  `offset` whose heading starts with "Historical", to the next heading of
  its level or above; None when no enclosing section is historical."""
  enclosing = []  # [(level, heading, start)], outermost first
  for m in HEADING.finditer(text, 0, offset):
    level = len(m.group(1))
    enclosing = [h for h in enclosing if h[0] < level] + [
        (level, m.group(2), m.start())]
  for level, heading, start in reversed(enclosing):
    if heading.lower().startswith("historical"):
      end = next((m.start() for m in HEADING.finditer(text, offset)
                  if len(m.group(1)) <= level), len(text))
      return heading, text[start:end]
  return None


def historical_problems(document: str, text: str, kind: str, path: str,
                        offset: int, result: Mapping) -> List[str]:
  """Where a historical file is shown with, or as, a verdict."""
  where = f"{document}: the historical {path}"
  found = []
  if not result.get("historical_reason"):
    found.append(f"{path} is historical but gives no historical_reason.")
  if "comparison" in result:
    found.append(f"{path} is historical but holds a comparison (verdicts).")
  if kind in ("verdicts", "forest"):
    found.append(f"{where} is in a {kind} marker; a historical table "
                 "carries no verdict.")
    return found
  section = historical_section(text, offset)
  if section is None:
    found.append(f"{where} is shown outside a section headed "
                 "\"Historical...\".")
    return found
  words = sorted({w.lower() for w in VERDICT_WORDS.findall(section[1])})
  if words:
    found.append(f"{where} is shown in \"{section[0]}\", whose text names a "
                 f"verdict ({', '.join(words)}).")
  return found


def plain_readings(result: Mapping, units_dir: str):
  """(values, units, names): each unit's measures under the names
  `result["measures"]` tabulates (a file whose names are the units')."""
  arms = [a["name"] for a in result["arms"]]
  results, units = evidence_tables.load_units(units_dir, arms,
                                              result["seeds"])
  return results, units, list(result["measures"])


def _plan_readings(result: Mapping, units_dir: str):
  from cmlm.experiments import cmlm_vs_mlm_plan  # pylint: disable=g-import-not-at-top
  return cmlm_vs_mlm_plan.readings_from_units(result, units_dir)


# A results file whose tabulated names are not its units' (each arm read at
# a pooling chosen from the units) is read back by its script's plan.
READINGS = {"experiments/cmlm_vs_mlm.py": _plan_readings}


def unit_differences(path: str, result: Mapping, root: str,
                     bootstrap: bool = True) -> List[str]:
  """The fields of `result` that its units (`result["units"]`) do not
  give; with `bootstrap`, the example-level intervals too."""
  arms = [a["name"] for a in result["arms"]]
  control = evidence_tables.control_of(result)
  units_dir = os.path.join(root, result["units"])
  readings = READINGS.get(result.get("script"), plain_readings)
  results, units, names = readings(result, units_dir)
  seeds = list(result["seeds"])
  if bootstrap:
    rebuilt = evidence_tables.tabulated(results, arms, control, names, seeds)
  else:
    rebuilt = {"seeds": seeds, "per_seed": {
        arm: {m: [statistics.statistic(results[arm][s][m]) for s in seeds]
              for m in names} for arm in arms}}
  rebuilt.update(unit_provenance.code_commits(units))
  rebuilt = json.loads(json.dumps(rebuilt))
  keys = REBUILT + (("bootstrap",) if bootstrap else ())
  return [key for key in keys if not same(rebuilt.get(key), result.get(key))]


def problems(root: str = evidence_tables.REPO_ROOT,
             documents: Sequence[str] = evidence_tables.DOCUMENTS,
             bootstrap: bool = True, progress=sys.stderr) -> List[str]:
  """One sentence per problem found in `documents`' results files."""
  found, unit_backed = [], {}
  for document in documents:
    with open(os.path.join(root, document), encoding="utf-8") as f:
      text = f.read()
    for kind, path, offset in markers(text):
      result = evidence_tables.load(path, root)
      if result.get("historical"):
        found += historical_problems(document, text, kind, path, offset,
                                     result)
      elif result.get("units"):
        unit_backed[path] = result
      else:
        found.append(f"{path} (named in {document}) is neither rebuilt from "
                     "units (no `units` folder) nor marked historical.")
  for path, result in unit_backed.items():
    if progress:
      print(f"rebuilding {path} from {result['units']}"
            + (" (bootstrap included)" if bootstrap else ""), file=progress)
    differing = unit_differences(path, result, root, bootstrap)
    if differing:
      found.append(f"{path} differs from its units ({result['units']}) in "
                   f"{', '.join(differing)}.")
  return sorted(set(found), key=found.index)
