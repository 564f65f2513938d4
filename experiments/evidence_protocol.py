"""One evidence protocol for every method's claim (issue 23).

An evidence script compares *arms* (ways to train the same encoder) over
*paired seeds*, against one *control* arm:

  * paired seeds: seed s gives every arm the same start, data order, masks,
    dropout stream and head initialisation (`task.seed`,
    `training.train.seed_run`); each arm runs every seed (3 or more);
  * equal compute: each trained arm states its encoder work as examples x
    sequence length x forward passes per step, times the steps (`Compute`);
    `check_equal_compute` refuses trained arms that differ by more than 2%;
  * evaluation on dev data no arm trained on (the script names it in each
    `Sample`'s measure; test sets stay untouched);
  * for each measure and arm, the per-seed differences to the control,
    their mean and its 95% t-interval over seeds (mean +- t_{0.975,n-1}
    sd / sqrt(n)); beside it, labelled as such, the paired bootstrap 95%
    interval over seeds *and* evaluation examples (both arms resampled with
    the same seeds and examples; over seeds only for a measure with no
    per-example values), and a sign test across seeds (`compare`);
  * one stopping rule: a verdict needs 5 paired seeds; at fewer, every row
    (above, below or level) is flagged "run at 5 seeds before a verdict"
    (`needs_more_seeds`), so no sign stops a claim early;
  * the unadjusted verdict is read from the t-interval (`verdict`): it
    excludes 0, the arm is above or below the control; it holds 0, level.
    The example-level bootstrap leaves out the seed-to-seed spread a new
    run would see, so it is not the verdict;
  * beside it, the Holm-adjusted verdict (`holm_family`): an arm's
    measures against the control are one family; each measure's two-sided
    paired t-test p over seeds is adjusted by Holm's step-down
    (`statistics.holm`), and the arm is above or below on a measure when
    its adjusted p < 0.05, else level;
  * one printed table (mean +- sample std over seeds, the difference to the
    control with both intervals) and a JSON file (`report`).

Per-(arm, seed) results are cached as JSON (`UnitStore`), so a script
resumes, and runs arm x seed units in short jobs (`--arms`, `--seeds`);
each unit records the commit of the code that ran it, the CPU, the date
and the command (`unit_provenance`), and a results file takes its
`commit` from its units, listing every commit when they differ
(`unit_provenance.code_commits`, `report`'s `units`).

A result of one measure for one (arm, seed) is a sample of
`evaluation/statistics.py` (`mean_sample`, `spearman_sample`,
`scalar_sample`), which also computes the statistics: each sample's figure,
the paired bootstrap interval and the sign test (`paired_difference`).
"""
import argparse
import dataclasses
import json
import math
import os
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from cmlm.data_pipelines.atomic_file import atomic_file
from cmlm.evaluation import statistics
from cmlm.experiments import unit_provenance

# The fewest seeds a table is computed at (intervals need them)...
MIN_SEEDS = 3
# ...and the seeds every verdict needs, whatever its sign: one stopping rule.
VERDICT_SEEDS = 5
# The family-wise level of the Holm-adjusted verdict.
ALPHA = 0.05
MORE_SEEDS = f"run at {VERDICT_SEEDS} seeds before a verdict"
COMPUTE_TOLERANCE = 0.02


@dataclasses.dataclass(frozen=True)
class Work:
  """One kind of sequence an arm's training step reads through the encoder.

  `forward_passes` counts full-encoder passes per example (a pass through
  the lower K of L layers is K/L); `gradient_passes` how many of them carry
  a gradient (default all).
  """
  what: str
  examples_per_step: int
  seq_length: int
  forward_passes: float
  gradient_passes: Optional[float] = None

  @property
  def tokens_per_step(self) -> float:
    return self.examples_per_step * self.seq_length * self.forward_passes


@dataclasses.dataclass(frozen=True)
class Compute:
  """An arm's training compute: `steps` steps of `work`."""
  steps: int
  work: Tuple[Work, ...]

  @property
  def token_passes(self) -> float:
    """Examples x sequence length x forward passes, summed over the run."""
    return self.steps * sum(w.tokens_per_step for w in self.work)

  def describe(self) -> str:
    parts = []
    for w in self.work:
      grad = ("" if w.gradient_passes is None else
              f", {w.gradient_passes:g} with gradient")
      parts.append(f"{w.what} {w.examples_per_step} x {w.seq_length} x "
                   f"{w.forward_passes:g} pass{'es' if w.forward_passes != 1 else ''}{grad}")
    return (f"{self.steps} steps x ({' + '.join(parts)}) = "
            f"{self.token_passes / 1e6:.2f}M token passes")


@dataclasses.dataclass(frozen=True)
class Arm:
  """One way to train; `compute` None: not trained (a start, a baseline)."""
  name: str
  compute: Optional[Compute]
  control: bool = False
  description: str = ""


def check_arms(arms: Sequence[Arm]) -> Arm:
  """The control arm; one clear error unless there is exactly one and the
  names are distinct."""
  names = [arm.name for arm in arms]
  if len(set(names)) != len(names):
    raise ValueError(f"Arm names must be distinct, got {', '.join(names)}.")
  controls = [arm for arm in arms if arm.control]
  if len(controls) != 1:
    raise ValueError(f"Exactly one arm must be the control, got "
                     f"{len(controls)} ({', '.join(a.name for a in controls) or 'none'}).")
  return controls[0]


def check_equal_compute(arms: Sequence[Arm],
                        tolerance: float = COMPUTE_TOLERANCE) -> None:
  """Every trained arm does the same token passes, within `tolerance`."""
  trained = [arm for arm in arms if arm.compute is not None]
  if len(trained) < 2:
    return
  reference = trained[0].compute.token_passes
  for arm in trained[1:]:
    ratio = arm.compute.token_passes / reference
    if abs(ratio - 1) > tolerance:
      raise ValueError(
          f"Arms {trained[0].name!r} and {arm.name!r} are not at equal "
          f"compute: {trained[0].compute.describe()} vs "
          f"{arm.compute.describe()} (ratio {ratio:.3f}).")


def check_seeds(seeds: Sequence[int], minimum: int = MIN_SEEDS) -> None:
  if len(set(seeds)) != len(seeds):
    raise ValueError(f"--seeds must be distinct, got {list(seeds)}.")
  if len(seeds) < minimum:
    raise ValueError(f"The protocol pairs at least {minimum} seeds; got "
                     f"{len(seeds)} ({', '.join(map(str, seeds))}).")


def compare(results: Mapping[str, Mapping[int, Mapping[str, Mapping]]],
            arms: Sequence[Arm], measures: Sequence[str],
            resamples: int = statistics.RESAMPLES, rng_seed: int = 0
            ) -> Dict[str, object]:
  """Every arm's figures and its difference to the control, per measure.

  `results[arm][seed][measure]` is a sample. Differences use the seeds both
  the arm and the control have.
  """
  control = check_arms(arms).name
  table = {}
  for arm in arms:
    table[arm.name] = {}
    for measure in measures:
      seeds = sorted(s for s, r in results.get(arm.name, {}).items()
                     if measure in r)
      if not seeds:
        continue
      row = statistics.summarize([
          statistics.statistic(results[arm.name][s][measure])
          for s in seeds])
      row["seeds"] = seeds
      if arm.name != control:
        paired = [s for s in seeds if measure in
                  results.get(control, {}).get(s, {})]
        if paired:
          row["vs_control"] = statistics.paired_difference(
              [results[control][s][measure] for s in paired],
              [results[arm.name][s][measure] for s in paired],
              resamples, rng_seed=rng_seed)
          row["vs_control"]["seeds"] = paired
          row["vs_control"]["verdict"] = verdict(row)
          row["vs_control"]["flag"] = (MORE_SEEDS if needs_more_seeds(row)
                                       else None)
      table[arm.name][measure] = row
    holm_family([row["vs_control"] for row in table[arm.name].values()
                 if "vs_control" in row])
  return table


def holm_family(family: Sequence[dict], alpha: float = ALPHA) -> None:
  """Sets each row's Holm-adjusted p (`holm_p`) and verdict
  (`holm_verdict`) over the family: one arm's `vs_control` rows of every
  measure of a claim. Each row's `p` is the paired t-test's
  (`statistics.paired_t_p`), computed from `per_seed` when absent; a row is
  above (below) when its adjusted p < `alpha` and its mean difference is
  positive (negative), else level."""
  for row in family:
    if row.get("p") is None:
      row["p"] = statistics.paired_t_p(row["per_seed"])
  adjusted = statistics.holm([row["p"] for row in family])
  for row, p in zip(family, adjusted):
    row["holm_p"] = p
    row["holm_verdict"] = ("level" if p is None or p >= alpha else
                           "above" if row["difference"] > 0 else "below")


def verdict(row: Mapping) -> str:
  """'above', 'below' or 'level' for a compared row, read from the 95%
  t-interval over seeds of its per-seed differences: 'level' when the
  interval holds 0 (or there is none: one seed)."""
  interval = row["vs_control"]["t_interval"]
  if interval is None:
    return "level"
  low, high = interval
  return "above" if low > 0 else "below" if high < 0 else "level"


def needs_more_seeds(row: Mapping) -> bool:
  """A row at fewer than `VERDICT_SEEDS` paired seeds, above, below or
  level alike: run more before a verdict (one stopping rule; a rule that
  stopped at 3 seeds on a sign and ran 5 on a level would pick the seeds
  by the answer)."""
  return len(row["vs_control"]["per_seed"]) < VERDICT_SEEDS


def shown_verdict(verdict_name: str, flag: Optional[str]) -> str:
  """A verdict as a table shows it: bold when above or below and at the
  seeds a verdict needs; with the flag, unbolded, when it is not one."""
  if flag:
    return f"{verdict_name} ({flag})"
  return verdict_name if verdict_name == "level" else f"**{verdict_name}**"


def format_table(comparison: Mapping, arms: Sequence[Arm],
                 measures: Sequence[str], digits: int = 2) -> str:
  """One Markdown table: mean +- std per arm and measure; for each arm but
  the control, its mean difference to the control with the 95% t-interval
  over seeds, the verdict it gives (unadjusted) and the Holm-adjusted one
  over the arm's measures, the example-level bootstrap interval beside
  them, the seeds it is ahead on, and the flag to run more seeds."""
  f = lambda x: "nan" if x is None or math.isnan(x) else f"{x:.{digits}f}"
  lines = ["| arm | compute | " + " | ".join(measures) + " |",
           "|---|---|" + "---|" * len(measures)]
  control = check_arms(arms)
  for arm in arms:
    compute = "not trained" if arm.compute is None else (
        f"{arm.compute.token_passes / 1e6:.1f}M tok" +
        ("" if control.compute is None or arm is control else
         f" ({arm.compute.token_passes / control.compute.token_passes:.2f}x)"))
    cells = []
    for measure in measures:
      row = comparison.get(arm.name, {}).get(measure)
      if row is None:
        cells.append("-")
        continue
      cell = f"{f(row['mean'])} ± {f(row['std'])}"
      if "vs_control" in row:
        d = row["vs_control"]
        sign = d["sign_test"]
        star = ("bootstrap" if d["resampled"] != "seeds only" else
                "bootstrap over seeds only")
        bracket = lambda i: ("[-]" if i is None else
                             f"[{i[0]:+.{digits}f}, {i[1]:+.{digits}f}]")
        cell += (f"; Δ {d['difference']:+.{digits}f}, t "
                 f"{bracket(d['t_interval'])} {verdict(row)} (unadjusted), "
                 f"{d['holm_verdict']} (Holm); {star} "
                 f"{bracket(d['bootstrap_interval'])}; "
                 f"{sign['positive']}/{len(d['per_seed'])} seeds up"
                 + (f"; {MORE_SEEDS}" if needs_more_seeds(row) else ""))
      cells.append(cell)
    name = arm.name + (" (control)" if arm.control else "")
    lines.append(f"| {name} | {compute} | " + " | ".join(cells) + " |")
  return "\n".join(lines)


class UnitStore:
  """Cached results of one (arm, seed) each, `<work_dir>/<arm>/seed<S>/`
  (the unit `result.json` and the arm's run), or with `units_dir` the unit
  at `<units_dir>/<arm>/seed<S>.json`, a folder to commit apart from runs.

  Every saved unit carries its provenance (`unit_provenance.FIELDS`: arm,
  seed, commit, CPU, date, ...): `run` takes it when the unit starts and
  refuses modified code; `save` stamps a unit that has none when it is
  saved (recording, not refusing, modified code).
  """

  def __init__(self, work_dir: str, units_dir: Optional[str] = None):
    self.work_dir = work_dir
    self.units_dir = units_dir

  @staticmethod
  def _slug(arm: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in arm)

  def directory(self, arm: str, seed: int) -> str:
    return os.path.join(self.work_dir, self._slug(arm), f"seed{seed}")

  def _path(self, arm, seed):
    if self.units_dir:
      return os.path.join(self.units_dir, self._slug(arm), f"seed{seed}.json")
    return os.path.join(self.directory(arm, seed), "result.json")

  def load(self, arm: str, seed: int) -> Optional[dict]:
    path = self._path(arm, seed)
    if not os.path.exists(path):
      return None
    with open(path, encoding="utf-8") as f:
      return json.load(f)

  def save(self, arm: str, seed: int, result: Mapping) -> None:
    unit = dict(result)
    if "commit" not in unit:
      unit.update(unit_provenance.provenance(arm, seed,
                                             refuse_modified=False))
    unit.update(arm=arm, seed=seed)  # a unit copied from another seed
    os.makedirs(os.path.dirname(self._path(arm, seed)), exist_ok=True)
    with atomic_file(self._path(arm, seed)) as temporary:
      with open(temporary, "w", encoding="utf-8") as f:
        json.dump(unit, f)

  def run(self, arm: str, seed: int, work: Callable[[], Mapping]) -> dict:
    """The unit of (arm, seed): the saved one, else `work()`'s result saved
    with the provenance taken before it started (`unit_provenance`;
    ValueError, nothing run, when tracked code is modified)."""
    unit = self.load(arm, seed)
    if unit is None:
      started = unit_provenance.provenance(arm, seed)
      unit = {**work(), **started}
      self.save(arm, seed, unit)
    return unit

  def units(self, arms: Sequence[Arm], seeds: Sequence[int]
            ) -> Dict[str, dict]:
    """{"<arm> seed <S>": unit} of every finished unit."""
    return {f"{arm.name} seed {seed}": unit for arm in arms for seed in seeds
            for unit in [self.load(arm.name, seed)] if unit is not None}

  def results(self, arms: Sequence[Arm], seeds: Sequence[int]
              ) -> Dict[str, Dict[int, dict]]:
    """{arm: {seed: measures}} of every finished unit."""
    out = {}
    for arm in arms:
      for seed in seeds:
        unit = self.load(arm.name, seed)
        if unit is not None:
          out.setdefault(arm.name, {})[seed] = unit["measures"]
    return out


def unit_order(arms: Sequence[Arm], chosen: Sequence[str],
               seeds: Sequence[int]) -> List[Tuple[str, int]]:
  """(arm, seed) in the order to run: the untrained arms (cheap) for every
  seed first, then seed by seed the chosen trained arms in `arms`' order."""
  untrained = [a.name for a in arms if a.compute is None and a.name in chosen]
  trained = [a.name for a in arms if a.compute is not None
             and a.name in chosen]
  return ([(name, seed) for name in untrained for seed in seeds]
          + [(name, seed) for seed in seeds for name in trained])


def add_arguments(parser: argparse.ArgumentParser, arms: Sequence[str],
                  default_seeds: str = "1,2,3",
                  benchmarks: bool = True) -> None:
  """--seeds, --arms, --resamples, --report_only, and with `benchmarks`
  --data_dir (a script that reads its evaluation data from a folder of its
  own flags leaves it out)."""
  parser.add_argument("--seeds", default=default_seeds,
                      help="Comma-separated seeds; every arm runs each "
                      f"(at least {MIN_SEEDS} for the table, "
                      f"{VERDICT_SEEDS} for a verdict).")
  parser.add_argument("--arms", default=",".join(arms),
                      help="Arms to train and evaluate in this invocation "
                      f"(some of {','.join(arms)}); finished units are "
                      "reused, the table holds every finished one.")
  parser.add_argument("--resamples", type=int, default=statistics.RESAMPLES,
                      help="Bootstrap resamples of the intervals.")
  parser.add_argument("--report_only", action="store_true",
                      help="Tabulate finished units; train nothing.")
  if not benchmarks:
    return
  parser.add_argument("--data_dir", default=None,
                      help="The benchmark files the dev measures read, in "
                      f"the eval command's --data_dir layout ({DATA_LAYOUT}); "
                      "no default, needed unless --report_only.")


# What `--data_dir` holds and where its files come from.
DATA_LAYOUT = ("sts/STSBenchmark, sts/SICK, transfer/..., tatoeba/: "
               "docs/benchmark_data.md")


def data_dir(args) -> Optional[str]:
  """The evidence run's `--data_dir`: the folder of the benchmark files
  (None with `--report_only`, which reads none). One sentence naming the flag
  and what it holds when it is missing, before anything trains."""
  return data_folder(args, "data_dir", "the folder of the benchmark files, "
                     f"in the eval command's --data_dir layout ({DATA_LAYOUT})")


def data_folder(args, flag: str, holds: str) -> Optional[str]:
  """`args.<flag>`, a data folder an evidence script takes by flag (no
  default outside the repository): the folder, or None with `--report_only`
  when not given; else one sentence naming the flag and what it `holds`."""
  value = getattr(args, flag)
  if value and os.path.isdir(value):
    return value
  if args.report_only and not value:
    return None
  what = (f"--{flag}={value} is not a folder" if value
          else f"--{flag} is missing")
  raise ValueError(f"{what}: give {holds}.")


def parse_selection(args, arms: Sequence[str]) -> Tuple[List[int], List[str]]:
  """(seeds, chosen arm names) of `add_arguments`' flags; one clear error."""
  try:
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
  except ValueError:
    raise ValueError(f"--seeds must be comma-separated integers, got "
                     f"{args.seeds!r}.") from None
  chosen = [a.strip() for a in args.arms.split(",") if a.strip()]
  unknown = [a for a in chosen if a not in arms]
  if unknown or not chosen:
    raise ValueError(f"--arms must be some of {','.join(arms)}; got "
                     f"{','.join(unknown) or 'none'}.")
  if len(set(seeds)) != len(seeds) or not seeds:
    raise ValueError(f"--seeds must be distinct integers, got {args.seeds!r}.")
  if args.resamples < 100:
    raise ValueError(f"--resamples must be 100 or more, got {args.resamples}.")
  return seeds, chosen


def check_counts(parser: argparse.ArgumentParser, args,
                 names: Sequence[str]) -> None:
  """The parser's error (usage, exit status 2) unless each flag of `names`
  ("steps", "batch_size") is 1 or more."""
  if any(getattr(args, name) < 1 for name in names):
    parser.error(" and ".join(f"--{name}" for name in names)
                 + " must be 1 or more.")


def check_selection(parser: argparse.ArgumentParser, args,
                    arms: Sequence[str]) -> None:
  """`parse_selection` of the parsed `args`, its seeds and arms set as
  `args.seeds` and `args.arms`; its error the parser's."""
  try:
    args.seeds, args.arms = parse_selection(args, arms)
  except ValueError as error:
    parser.error(str(error))


def report(title: str, arms: Sequence[Arm], measures: Sequence[str],
           results, path: str, setup: Mapping,
           resamples: int = statistics.RESAMPLES,
           digits: int = 2, units: Optional[Mapping[str, Mapping]] = None
           ) -> Dict[str, object]:
  """Prints the table (with each arm's compute) and writes it as JSON; with
  `units` (`UnitStore.units`), the file's `commit` is theirs
  (`unit_provenance.code_commits`: every commit, said, when they differ)."""
  comparison = compare(results, arms, measures, resamples)
  seeds = sorted({s for r in results.values() for s in r})
  print(f"\n{title}")
  for arm in arms:
    done = sorted(results.get(arm.name, {}))
    print(f"  {arm.name}{' (control)' if arm.control else ''}: "
          f"{arm.compute.describe() if arm.compute else 'not trained'}; "
          f"seeds {','.join(map(str, done)) or 'none'}"
          + (f"; {arm.description}" if arm.description else ""))
  if len(seeds) < VERDICT_SEEDS:
    print(f"  (only {len(seeds)} seed(s) finished: a verdict needs "
          f"{VERDICT_SEEDS}; the rows below are not verdicts)")
  print("mean ± sample std over seeds; Δ = arm minus control (mean of the "
        "per-seed differences); t = its 95% t-interval over seeds, which the "
        "unadjusted verdict (above / below / level) reads; Holm = the verdict "
        "of the paired t-test's p over seeds, Holm-adjusted over the arm's "
        "measures (adjusted p < 0.05); bootstrap = the paired bootstrap 95% "
        "interval over seeds and examples, beside them; seeds up = sign "
        "test's count.\n")
  print(format_table(comparison, arms, measures, digits))
  output = {"title": title, "setup": dict(setup), "measures": list(measures),
            "arms": [{"name": a.name, "control": a.control,
                      "description": a.description,
                      "compute": None if a.compute is None else {
                          "steps": a.compute.steps,
                          "token_passes": a.compute.token_passes,
                          "described": a.compute.describe(),
                          "work": [dataclasses.asdict(w)
                                   for w in a.compute.work]}}
                     for a in arms],
            "comparison": comparison}
  if units is not None:
    output.update(unit_provenance.code_commits(units))
    if output["mixed_commits"]:
      print(f"\n{output['mixed_commits']}")
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  with atomic_file(path) as temporary:
    with open(temporary, "w", encoding="utf-8") as f:
      json.dump(output, f, indent=1)
  print(f"\n(written to {path})")
  return output
