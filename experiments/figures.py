"""Every measured figure of the docs, rendered from its results file.

The evidence tables have `experiments/evidence_tables.py`; this module does
the same for the other figures: the speed tables, the demo's time and
figures, the test-suite times, the Dask and the soak figures, and the
encoder under concurrent callers. Each comes
from a JSON under `docs/results/` (or `projects/*/results/`) that carries
the command, the commit of the code that ran, the CPU model string, its ISA
flags, the cores, the date and the load; the page holds what this module
renders from it between markers, so a page and its file cannot drift apart
(`tests/experiments/test_results_figures.py` renders them in memory):

    <!-- figures:speed docs/results/encode_intel_xeon.json -->
    ...a table...
    <!-- /figures -->

    ... a figure inside a sentence: <!-- figure:FILE:KEY -->86.69<!-- /figure -->

A block's kind is one of `RENDERERS`; an inline figure's KEY is a dotted
path into the file (`rows.0.stsb_dev`, list items by index), rendered as
the file gives it, or in a format spec after a bar (`KEY|.2f`). Paths are
relative to the repository root.

  python experiments/figures.py            # rewrite every block (and plot)
  python experiments/figures.py --check    # exit 1 if one differs
"""
import argparse
import glob
import os
import re
import statistics as pystats
import sys
from typing import Callable, Dict, List, Mapping, Sequence

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

BLOCK = re.compile(r"(<!-- figures:(\w+) ([^>]+?) -->\n)(.*?)(<!-- /figures -->)",
                   re.S)
INLINE = re.compile(r"(<!-- figure:([^:>\s]+):([^>\s]+) -->)(.*?)"
                    r"(<!-- /figure -->)", re.S)


def documents(root: str = REPO_ROOT) -> List[str]:
  """Every Markdown page of the docs that holds a figure marker."""
  pages = ["README.md", "BUILD.md"] + sorted(
      glob.glob("docs/*.md", root_dir=root)) + sorted(
          glob.glob("projects/*/README.md", root_dir=root))
  out = []
  for page in pages:
    with open(os.path.join(root, page), encoding="utf-8") as f:
      text = f.read()
    if "<!-- figures:" in text or "<!-- figure:" in text or (
        "<!-- plot:" in text):
      out.append(page.replace(os.sep, "/"))
  return out


def load(path: str, root: str = REPO_ROOT) -> dict:
  """The results file `path` a marker names (`evidence_tables.load`)."""
  from cmlm.experiments import evidence_tables  # pylint: disable=g-import-not-at-top
  return evidence_tables.load(path, root)


def lookup(result, key: str):
  """`result`'s value at a dotted path (`rows.0.stsb_dev`)."""
  value = result
  for part in key.split("."):
    value = value[int(part)] if isinstance(value, list) else value[part]
  return value


def _int(x) -> str:
  return f"{x:,.0f}"


def _na(x, fmt: str) -> str:
  return "n/a" if x is None else format(x, fmt)


def cpu_and_flags(result: Mapping,
                  unrecorded: str = " (flags not recorded)") -> str:
  """A results file's CPU model with its ISA flags: "AMD EPYC (avx2
  avx512f)"; `unrecorded` follows the model when it holds no flags."""
  flags = result.get("cpu_flags")
  return f"{result.get('cpu')}" + (f" ({' '.join(flags)})" if flags
                                   else unrecorded)


def provenance(result: Mapping) -> str:
  """One line: command, commit, CPU and flags, cores, date, load."""
  load = result.get("load")
  if load is None and "load_before" in result:
    load = f"1-minute load {result['load_before']} before"
  if load is None and "load_1min" in result:
    load = f"1-minute load {result['load_1min']} at the start"
  note = result.get("commit_note")
  return ("`" + result["command"] + "`; commit "
          + f"`{result.get('commit') or 'not recorded'}`"
          + (f" ({note})" if note else "") + f"; {cpu_and_flags(result)}"
          + f", {result.get('cores') or '?'} cores; {result.get('date')}; "
          + f"{load if load is not None else 'load not recorded'}"
          + (f". {result['transcribed']}" if result.get("transcribed")
             else "") + ".")


def render_speed(results: Sequence[Mapping]) -> str:
  """Per path: sentences/s at each batch size, STS-B dev, the smallest
  cosine to sentence-transformers, `load_s` and `peak_rss_mb`."""
  (result,) = results
  batches = sorted({r["batch_size"] for r in result["rows"]})
  paths = list(dict.fromkeys(r["path"] for r in result["rows"]))
  rows = {(r["path"], r["batch_size"]): r for r in result["rows"]}
  lines = [provenance(result), "",
           "| path | " + " | ".join(f"batch {b}" for b in batches)
           + " | STS-B dev | min cosine | `load_s` | `peak_rss_mb` |",
           "|---|" + "---|" * (len(batches) + 4)]
  for path in paths:
    first = rows[(path, batches[0])]
    lines.append(
        f"| `{path}` | " + " | ".join(
            f"{rows[(path, b)]['sent_per_s']:.0f}" for b in batches)
        + f" | {first['stsb_dev']:.2f} | {first['min_cosine']:.3f} | "
        f"{_na(first.get('load_s'), '.1f')} | "
        f"{_na(first.get('peak_rss_mb'), '.0f')} |")
  return "\n".join(lines) + "\n"


def _spread(values: Sequence[float], fmt: str) -> str:
  return (f"{format(pystats.mean(values), fmt)} ({format(min(values), fmt)}"
          f" to {format(max(values), fmt)})")


def _cpu_cell(result: Mapping) -> str:
  """The CPU as a table cell: the file's string when it names the flags,
  else the model with its ISA flags and cores."""
  if "flags" in result["cpu"]:
    return result["cpu"]
  return f"{cpu_and_flags(result)}, {result['cores']} cores"


def render_demo_time(results: Sequence[Mapping]) -> str:
  """Per run: seed, wall time, training minutes, steps, load, CPU, commit."""
  lines = ["| seed | wall | training | steps | load | CPU | commit | date |",
           "|---|---|---|---|---|---|---|---|"]
  for r in results:
    f = r["figures"]
    # The file's own minutes where it has them: the README quotes them.
    minutes = r.get("wall_minutes", r["wall_seconds"] / 60)
    lines.append(f"| {r['seed']} | {minutes:.1f} min "
                 f"({r['wall_seconds']} s) | {f['train_minutes']:.1f} min | "
                 f"{f['train_steps']} | {r['load']} | {_cpu_cell(r)} | "
                 f"`{r['commit']}` | {r['date']} |")
  return "\n".join(lines) + "\n"


# The demo's figures table: (label, untrained key, trained key, mean-pool
# key, format, scale).
DEMO_ROWS = (
    ("held-out MLM loss", "heldout_mlm_loss_untrained",
     "heldout_mlm_loss_trained", None, ".2f", 1),
    ("conditioning gain, random other s1 (nats/token)",
     "conditioning_gain_untrained", "conditioning_gain", None, "+.3f", 1),
    ("gain, s1 of the same source", None, "conditioning_gain_same_source",
     None, "+.3f", 1),
    ("gain, s1 of another source", None, "conditioning_gain_other_source",
     None, "+.3f", 1),
    ("retrieval: median rank of the true s2", "retrieval_median_rank_untrained",
     "retrieval_median_rank_trained", None, ".0f", 1),
    ("retrieval: top-10 (%)", "retrieval_top10_untrained",
     "retrieval_top10_trained", None, ".1f", 100),
    ("retrieval: mean reciprocal rank", "retrieval_mrr_untrained",
     "retrieval_mrr_trained", "retrieval_mrr_untrained_mean_pooled", ".3f", 1),
    ("retrieval: top-1 (%)", "retrieval_top1_untrained",
     "retrieval_top1_trained", "retrieval_top1_untrained_mean_pooled", ".1f",
     100),
    ("STS-B dev Spearman x 100 (chose the recipe)", "stsb_dev_untrained",
     "stsb_dev_trained", "stsb_dev_untrained_mean_pooled", ".1f", 1),
)


def render_demo_figures(results: Sequence[Mapping]) -> str:
  """Mean (lowest to highest) over the seeds of each measure, untrained,
  trained and the untrained weights mean-pooled; each seed's intervals."""
  seeds = ", ".join(str(r["seed"]) for r in results)
  lines = [f"| measure (mean (lowest to highest) over seeds {seeds}) | "
           "untrained (max pool) | trained | untrained weights, mean pool |",
           "|---|---|---|---|"]
  for label, *keys, fmt, scale in DEMO_ROWS:
    cells = []
    for key in keys:
      cells.append("-" if key is None else _spread(
          [r["figures"][key] * scale for r in results], fmt))
    lines.append(f"| {label} | " + " | ".join(cells) + " |")
  for label, key in (("conditioning gain", "conditioning_gain_ci95"),
                     ("MRR gain, paired", "retrieval_mrr_gain_ci95")):
    lines.append(f"| {label}: each seed's bootstrap 95% | - | " + "; ".join(
        f"[{r['figures'][key][0]:+.3f}, {r['figures'][key][1]:+.3f}]"
        for r in results) + " | - |")
  share = [100 * r["figures"]["conditioning_gain"]
           / r["figures"]["heldout_mlm_loss_trained"] for r in results]
  lines.append("| conditioning gain as a share of the trained held-out MLM "
               f"loss (%) | - | {_spread(share, '.1f')} | - |")
  family = [(label, fmt, [r["figures"][trained] - r["figures"][pooled]
                          for r in results])
            for label, trained, pooled, fmt in DEMO_AGAINST_MEAN_POOL]
  for (label, fmt, differences), held in zip(family,
                                             _holm_readings(family)):
    lines.append(f"| {label}, trained minus untrained mean pool: each seed; "
                 "mean, 95% t-interval over seeds | - | "
                 + _against_seeds(differences, fmt) + held + " | - |")
  return "\n".join(lines) + "\n"


# The demo's claim against the untrained weights read with mean pooling (a
# bag of random word vectors): (label, trained key, mean-pool key, format),
# one family for Holm's adjustment.
DEMO_AGAINST_MEAN_POOL = (
    ("retrieval MRR", "retrieval_mrr_trained",
     "retrieval_mrr_untrained_mean_pooled", "+.3f"),
    ("STS-B dev", "stsb_dev_trained", "stsb_dev_untrained_mean_pooled",
     "+.1f"))


def _against_seeds(differences: Sequence[float], fmt: str) -> str:
  """Per-seed differences, their mean and t-interval over seeds, and what
  the interval says (above, below or level) at this many seeds; under the
  evidence protocol's 5 seeds, flagged as no verdict."""
  from cmlm.evaluation import statistics  # pylint: disable=g-import-not-at-top
  from cmlm.experiments import evidence_protocol  # pylint: disable=g-import-not-at-top
  found = statistics.t_interval(differences)
  low, high = found["interval"]
  reading = "above" if low > 0 else "below" if high < 0 else "level"
  flag = ("" if len(differences) >= evidence_protocol.VERDICT_SEEDS else
          f" ({evidence_protocol.MORE_SEEDS})")
  return (", ".join(format(d, fmt) for d in differences)
          + f"; {format(found['mean'], fmt)} [{format(low, fmt)}, "
          f"{format(high, fmt)}]: {reading} over "
          f"{len(differences)} seeds{flag}")


def _holm_readings(family) -> List[str]:
  """For each (label, format, per-seed differences) of one family, at the
  evidence protocol's 5 seeds or more: its paired t-test's p adjusted by
  Holm over the family, and the verdict it gives ('' under 5 seeds)."""
  from cmlm.experiments import evidence_protocol  # pylint: disable=g-import-not-at-top
  if min(len(d) for _, _, d in family) < evidence_protocol.VERDICT_SEEDS:
    return [""] * len(family)
  rows = [{"per_seed": list(d), "difference": pystats.mean(d)}
          for _, _, d in family]
  evidence_protocol.holm_family(rows)
  return [f"; Holm over the {len(rows)} rows: p {row['holm_p']:.3g}, "
          + evidence_protocol.shown_verdict(row["holm_verdict"], None)
          for row in rows]


def _minutes(seconds: float) -> str:
  return f"{int(seconds // 60)} min {round(seconds % 60)} s"


def render_test_suite(results: Sequence[Mapping]) -> str:
  """`benchmarks/test_suite_time.py`: one results file per CPU, each its
  provenance line, then every run in one table with its CPU and ISA flags
  (two CPUs of one model name, a Zen 3 and a Zen 4, differ in them)."""
  lines = [line for result in results for line in (provenance(result), "")]
  lines += ["| CPU | command | tests | outcome | time | 1-minute load |",
            "|---|---|---|---|---|---|"]
  for result in results:
    cpu = cpu_and_flags(result, unrecorded="")
    for run in result["runs"]:
      # A run with failures still took its time; the table says they failed.
      outcome = ("all passed" if run.get("exit_status", 0) == 0 else
                 f"{run.get('failed', 0)} failed, {run.get('passed', 0)} "
                 "passed")
      lines.append(f"| {cpu} | `{run['command']}` | {run['tests']} "
                   f"| {outcome} | {_minutes(run['seconds'])} | "
                   f"{run['load']} |")
  return "\n".join(lines) + "\n"


def render_input_release(results: Sequence[Mapping]) -> str:
  """`benchmarks/input_release.py`: per arm and wait, the release of a
  finished run's input iterator (median and largest wall seconds, median CPU
  seconds over the trials), then the input pipeline's examples/s."""
  (r,) = results
  lines = [provenance(r), "",
           f"Each trial: a fresh process trains a {r['steps']}-step "
           "cmlm/tiny run, goes on for the wait, then its garbage collector "
           f"releases the run, with {r['busy']} spinning processes beside "
           "it; the arms alternate. The input pipeline is "
           f"{r['experiment']}'s, over {r['pipeline_batches']} batches, "
           "each arm twice, alternated.", "",
           "| tf.data | wait s | trials | release s (median) | "
           "release s (largest) | release CPU s (median) |",
           "|---|---|---|---|---|---|"]
  arms = list(dict.fromkeys(row["arm"] for row in r["releases"]))
  waits = list(dict.fromkeys(row["wait_s"] for row in r["releases"]))
  for arm in arms:
    for wait in waits:
      rows = [row for row in r["releases"]
              if row["arm"] == arm and row["wait_s"] == wait]
      walls = [row["release_wall_s"] for row in rows]
      cpus = [row["release_cpu_s"] for row in rows]
      lines.append(f"| {arm} | {wait:g} | {len(rows)} | "
                   f"{pystats.median(walls):.2f} | {max(walls):.2f} | "
                   f"{pystats.median(cpus):.2f} |")
  lines += ["", "| tf.data | input pipeline examples/s |", "|---|---|"]
  for arm, speeds in r["pipeline_examples_per_s"].items():
    lines.append(f"| {arm} | {', '.join(f'{s:,.0f}' for s in speeds)} |")
  return "\n".join(lines) + "\n"


def render_dask(results: Sequence[Mapping]) -> str:
  (r,) = results
  cpu = r["cpu"]
  lines = [provenance(dict(r, cpu=cpu["model"], cpu_flags=cpu["flags"],
                           cores=cpu["cores"],
                           load=f"1-minute load {r['load_before']:.2f} "
                           f"before, {r['load_after']:.2f} after")),
           "", f"{r['corpus_bytes'] / 1e6:.0f} MB in {r['corpus_files']} "
           f"files, {r['corpus_documents']:,} documents, sequence length "
           f"{r['seq_length']}; built from {', '.join(r['sources'])}"
           f"{' ' + r['sources_note'] if r.get('sources_note') else ''}.",
           "",
           "| run | seconds | records/s | sentences/s | marginal records/s "
           "per worker | peak memory per worker |", "|---|---|---|---|---|---|"]
  direct = r["direct_in_process"]
  lines.append(f"| DirectRunner, in process | {direct['seconds']:.1f} | "
               f"{_int(direct['records_per_s'])} | "
               f"{_int(direct['sentences_per_s'])} | "
               f"{_int(direct['marginal_records_per_s_per_worker'])} | "
               f"(the launcher: {_int(r['launcher_peak_memory_mb'])} MB) |")
  for key in sorted(k for k in r if k.startswith("dask_")):
    run = r[key]
    memory = " and ".join(_int(m) for m in run["worker_peak_memory_mb"])
    before = " and ".join(_int(m) for m in run["worker_memory_before_jobs_mb"])
    name = "process" if run["workers"] == 1 else "processes"
    lines.append(f"| Dask, {run['workers']} worker {name} | "
                 f"{run['seconds']:.1f} | {_int(run['records_per_s'])} | "
                 f"{_int(run['sentences_per_s'])} | "
                 f"{_int(run['marginal_records_per_s_per_worker'])} | "
                 f"{memory} MB ({before} MB before the job) |")
  lines += ["", f"{direct['records']:,} records ({direct['sentences']:,} "
            "sentences) in every run.", "",
            "| workers | 1e9 pairs |", "|---|---|"]
  for workers, hours in r["projection_hours_for_1e9_pairs"].items():
    lines.append(f"| {workers} | ~{hours:.1f} h |")
  return "\n".join(lines) + "\n"


def render_soak(results: Sequence[Mapping]) -> str:
  (r,) = results
  # A file written before `commands` was recorded ran the first four.
  commands = r.get("commands", ["train", "export", "encode", "eval"])
  disk_refusals = sum(count for line, count in r["refusals"].items()
                      if "No space left" in line or "disk is full" in line)
  exports = [verdict for name, verdict in r["final"]["exports"].items()
             if name != "imported run"]
  rows = (("commands of a cycle", ", ".join(commands)),
          ("cycles", r["cycles"]), ("processes", r["processes"]),
          ("ended ok", r["ok"]), ("SIGKILLed", r["sigkill"]),
          ("SIGTERMed", r["sigterm"]),
          ("of them stopped cleanly", r["stopped_cleanly"]),
          ("refused with one line", r["refused_one_line"]),
          ("of them on a full disk", disk_refusals),
          ("of them for an input a killed step had not written",
           r["refused_one_line"] - disk_refusals),
          ("disk fills", r["disk_fills"]),
          ("leftovers of a killed save removed", r["save_leftovers_removed"]),
          ("leftovers of a killed export removed",
           r.get("export_leftovers_removed", "not counted")),
          ("exports at the end: equal to their checkpoint / checkpoint "
           "rotated out", f"{exports.count('equal')} / "
           f"{exports.count('checkpoint rotated out')}"),
          ("checkpoints moved aside", r["checkpoints_moved_aside"]),
          ("seconds under faults / in all",
           f"{r['seconds_under_faults']} / {r['seconds']}"),
          ("lost", len(r["lost"])))
  lines = [provenance(dict(r, cpu=r["cpu_model"])), "", "| count | |",
           "|---|---|"]
  lines += [f"| {name} | {value} |" for name, value in rows]
  return "\n".join(lines) + "\n"


def render_concurrent(results: Sequence[Mapping]) -> str:
  """Per backend and number of callers (`benchmarks/concurrent_encode.py`):
  sentences/s, p50 and p99 latency, and how far each result is from the
  sequential embedding. A check run shows no speed."""
  (r,) = results
  check = r.get("check_run")
  span = (f"{r['seconds']:g} s" if r.get("seconds") else
          f"{r['requests_per_caller']} requests per caller")
  lines = [provenance(r), "",
           f"Model: {r['model']}; requests of {r['batch_size']} "
           f"sentence{'s' if r['batch_size'] > 1 else ''}; {span} per "
           "row; a result differs when its cosine to the sequential "
           f"embedding is below {r['equal_cosine']}."]
  if check:
    lines += ["", "A check run: it shows that the benchmark runs and that "
              "every result equals its sequential embedding; its times are "
              "not figures (a tiny duration on a loaded machine), so none is "
              "shown."]
  lines += ["", "| backend | callers | sentences/s | p50 ms | p99 ms | "
            "requests | min cosine | differing |", "|---|---|---|---|---|---|"
            "---|---|"]
  for row in r["rows"]:
    # (How many requests a check run made is a speed too.)
    speed = (["-"] * 4 if check else
             [f"{row['sent_per_s']:.0f}", f"{row['p50_ms']:.1f}",
              f"{row['p99_ms']:.1f}", str(row["requests"])])
    lines.append(f"| {row['backend']} | {row['callers']} | "
                 + " | ".join(speed) + f" | {row['min_cosine']:.6f} | "
                 f"{row['differing']} |")
  return "\n".join(lines) + "\n"


def _hours(hours: float) -> str:
  return (f"{hours:,.1f} h" if hours < 48
          else f"{hours:,.0f} h ({hours / 24:,.0f} days)")


def render_recipe_cost(results: Sequence[Mapping]) -> str:
  """Per recipe: its encoder, batch, steps and pairs, what was measured and
  at which batch, steps/s and the hours its full step count takes; the
  speed columns only from a quiet machine (`quiet` in the file), the
  extrapolated ones said so."""
  (r,) = results
  lines = [provenance(r), "",
           "| experiment | encoder | batch | steps | pairs | measured at "
           "batch | steps/s | full run |", "|---|---|---|---|---|---|---|---|"]
  for name, row in r["recipes"].items():
    measured = f"{row['measured_batch']:,}" + (
        f", extrapolated linearly to {row['batch']:,}"
        if row["extrapolated"] else "")
    speed = (f"{row['steps_per_s']:.3g}", "~" + _hours(row["projected_hours"])
             ) if r["quiet"] else ("not measured quietly",) * 2
    lines.append(f"| `{name}` | {row['encoder']} | {row['batch']:,} | "
                 f"{row['train_steps']:,} | {row['examples']:,} | {measured} "
                 f"| {speed[0]} | {speed[1]} |")
  if not r["quiet"]:
    lines += ["", f"The machine was not quiet ({r['load']}, on "
              f"{r['cores']} cores; quiet: {r['quiet_rule']}), so these runs "
              "give no speed figure; `python benchmarks/recipe_cost.py` on a "
              "quiet machine does."]
  return "\n".join(lines) + "\n"


def _flags(result: Mapping) -> Mapping:
  """`result` with `cpu_flags` as provenance reads them, from an `isa`
  mapping ({flag: present}) where the file holds one."""
  if "cpu_flags" in result or not isinstance(result.get("isa"), Mapping):
    return result
  return dict(result, cpu_flags=[f for f, on in result["isa"].items() if on])


def render_large_file(results: Sequence[Mapping]) -> str:
  """`benchmarks/encode_large_file.py`: the streaming `encode` command's
  sentences/s against the same model in memory, and its peak memory at
  each file size."""
  (r,) = results
  lines = [provenance(_flags(r)), "",
           f"Model: {r['model']}, {r['backend']} backend, batches of "
           f"{r['batch_size']}; {r['lines']:,} lines."]
  if not r["quiet"]:
    lines += ["", "The machine was not quiet, so no speed is shown."]
  else:
    ratio = r["streaming_vs_in_memory"]
    lines += ["", "| measure | sentences/s |", "|---|---|",
              f"| in memory (`SentenceEncoder.encode`) | "
              f"{_int(r['in_memory_sent_per_s'])} |",
              f"| `encode` streaming, its start taken off | "
              f"{_na(r['streaming_sent_per_s'], ',.0f')} "
              f"({_na(ratio, '.2f')}x in memory) |",
              f"| `encode`, whole run ({r['streaming_wall_s']:.1f} s, start "
              f"{r['streaming_start_s']:.1f} s) | "
              f"{_int(r['whole_run_sent_per_s'])} |"]
  lines += ["", "| lines | peak memory of `encode` |", "|---|---|"]
  lines += [f"| {int(n):,} | {mb:,.0f} MB |"
            for n, mb in r["peak_rss_mb"].items()]
  return "\n".join(lines) + "\n"


def render_mine_scaling(results: Sequence[Mapping]) -> str:
  """`benchmarks/mine_scaling.py`, one table per results file: per size and
  index, each stage's seconds and peak memory, the pairs, the approximate
  index's recall; the cells left out with their cost, and exact search's
  time where a sample of it was measured."""
  return "\n".join(_mine_scaling_table(r) for r in results)


def _mine_scaling_table(r: Mapping) -> str:
  lines = [provenance(_flags(r)), "",
           f"Synthetic clustered embeddings: {r['dim']} dimensions, "
           f"{r['clusters']:,} clusters; k = {r['k']}, IVF nprobe "
           f"{r['nprobe']}; both ways (source in target, target in source).",
           "", "| sentences a side | index | index s | search s | margin s | "
           "peak MB | pairs | recall@k | top-1 agreement |",
           "|---|---|---|---|---|---|---|---|---|"]
  for cell, figures in r["results"].items():
    size, kind = cell.split("/")
    stages = figures["stages"]
    peak = max((s["peak_rss_mb"] or 0) for s in stages.values())
    recall = figures.get("recall") or {}
    lines.append(
        f"| {int(size):,} | {kind} | "
        + " | ".join(f"{stages[n]['seconds']:.1f}"
                     for n in ("index", "search", "margin"))
        + f" | {_int(peak) if peak else 'n/a'} | {_int(figures['pairs'])} | "
        + f"{_na(recall.get('recall_at_k'), '.4f')} | "
        + f"{_na(recall.get('top1_agreement'), '.4f')} |")
  for cell, cost in r.get("skipped", {}).items():
    size, kind = cell.split("/")
    # What exact search would cost; an approximate index's is another.
    why = (f": exact search is {cost['dot_products_both_ways']:.1e} dot "
           "products" if kind == "flat" else "")
    sample = cost.get("sampled_exact")
    if kind == "flat" and sample:
      hours = sample["projected_search_seconds_both_ways"] / 3600
      why += (f", about {hours:.1f} hours at the "
              f"{sample['dot_products_per_second']:.2e} a second measured "
              f"on {sample['queries']:,} queries")
    lines.append(f"| {int(size):,} | {kind} | not run{why} | | | | | | |")
  for cell in r.get("cells", []):
    if cell not in r["results"] and cell not in r.get("skipped", {}):
      size, kind = cell.split("/")
      lines.append(f"| {int(size):,} | {kind} | stopped before it ended | | "
                   "| | | | |")
  return "\n".join(lines) + "\n"


RENDERERS: Dict[str, Callable[[Sequence[Mapping]], str]] = {
    "speed": render_speed, "demo_time": render_demo_time,
    "demo_figures": render_demo_figures, "test_suite": render_test_suite,
    "dask": render_dask, "soak": render_soak,
    "concurrent": render_concurrent, "recipe_cost": render_recipe_cost,
    "large_file": render_large_file, "mine_scaling": render_mine_scaling,
    "input_release": render_input_release}


def render_inline(value, fmt: str = "") -> str:
  """An inline figure: `value` as the file gives it, or `format(value,
  fmt)`; a list's items joined by commas."""
  if isinstance(value, list):
    return ", ".join(render_inline(v, fmt) for v in value)
  return format(value, fmt) if fmt else str(value)


def render_document(text: str, root: str = REPO_ROOT) -> str:
  """`text` with every figure block and inline figure rendered from its
  files (blank lines around a block: a Markdown table ends at one)."""
  def block(m):
    kind = m.group(2)
    if kind not in RENDERERS:
      raise ValueError(f"Unknown figures kind {kind!r}: one of "
                       f"{', '.join(RENDERERS)}.")
    results = [load(p, root) for p in m.group(3).split()]
    return m.group(1) + "\n" + RENDERERS[kind](results) + "\n" + m.group(5)
  text = BLOCK.sub(block, text)
  def inline(m):
    key, _, fmt = m.group(3).partition("|")
    return (m.group(1) + render_inline(lookup(load(m.group(2), root), key),
                                       fmt) + m.group(5))
  return INLINE.sub(inline, text)


def differing_documents(root: str = REPO_ROOT, write: bool = False
                        ) -> List[str]:
  from cmlm.experiments import plots  # matplotlib only when plotting
  differing = []
  for document in documents(root):
    path = os.path.join(root, document)
    with open(path, encoding="utf-8") as f:
      text = f.read()
    rendered = render_document(text, root)
    rendered = plots.render_document(
        rendered, root, os.path.dirname(document), write=write)
    if rendered != text or plots.stale_plots(rendered, root):
      differing.append(document)
      if write:
        with open(path, "w", encoding="utf-8") as f:
          f.write(rendered)
  return differing


def render_pages(results: str, root: str = REPO_ROOT) -> List[str]:
  """Re-renders the pages' figures when `results` lies under `root`'s
  docs/results/ (a benchmark's default); returns the pages rewritten.
  Otherwise a second run of the same tree would test pages that no longer
  match their results file, and fail the docs' test."""
  folder = os.path.join(os.path.abspath(root), "docs", "results") + os.sep
  if not os.path.abspath(results).startswith(folder):
    return []
  return differing_documents(root, write=True)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--check", action="store_true",
                      help="Change nothing; exit 1 when a block or a plot "
                      "differs from its results files.")
  args = parser.parse_args(argv)
  differing = differing_documents(write=not args.check)
  for name in differing:
    print(f"{name} differs from its results files." if args.check
          else f"rewrote {name}")
  return 1 if args.check and differing else 0


if __name__ == "__main__":
  sys.path.insert(0, REPO_ROOT)
  sys.exit(main())
