"""The evaluation report: `report.json` (everything) and `report.md` (a table
of each task's headline figure in the paper's units, then the details)."""
import contextlib
import datetime
import json
import math
import os
from typing import Dict, List, Optional

from cmlm.data_pipelines import atomic_file

REPORT_JSON = "report.json"
REPORT_MARKDOWN = "report.md"


def _clean(value):
  """JSON-safe values: NaN and infinities become null, numpy becomes Python."""
  if isinstance(value, dict):
    return {str(k): _clean(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [_clean(v) for v in value]
  if hasattr(value, "item") and not isinstance(value, (str, bytes)):
    value = value.item()
  if isinstance(value, float) and not math.isfinite(value):
    return None
  return value


def _figure(value) -> str:
  if value is None or (isinstance(value, float) and not math.isfinite(value)):
    return "n/a"
  return f"{value:.2f}" if isinstance(value, float) else str(value)


def build_report(model: str, results: Dict[str, dict],
                 provenance: Optional[dict] = None) -> dict:
  """The report object: the model, when, how, and each task's result.

  Each result has `headline` (the metric's name), its value under that name
  and as `main_score`, `paper` (the table or figure it reproduces),
  `seconds` and `data`. `provenance` (`evaluation/provenance.py`: the
  command line, versions, subsample, data checksums) is merged in.
  """
  return _clean({
      "model": model,
      "created": datetime.datetime.now(datetime.timezone.utc).isoformat(
          timespec="seconds"),
      **(provenance or {}),
      "tasks": results})


def markdown_table(report: dict) -> str:
  lines = [f"# Evaluation of `{report['model']}`", "",
           f"{report['created']}", ""] + _provenance_lines(report) + [
           "| task | paper | metric | score | examples | evaluated on | "
           "seconds |",
           "|---|---|---|---:|---:|---|---:|"]
  for name, result in report["tasks"].items():
    size = next((result[key] for key in ("num_pairs", "num_examples",
                                         "num_questions",
                                         "num_test", "num_gold",
                                         "num_sentences") if key in result), "")
    lines.append(f"| {name} | {result['paper']} | {result['headline']} | "
                 f"{_figure(result.get(result['headline']))} | {size} | "
                 f"{result.get('evaluated_on', '')} | "
                 f"{_figure(result.get('seconds'))} |")
  lines += _details(report["tasks"])
  return "\n".join(lines) + "\n"


def _provenance_lines(report: dict) -> List[str]:
  """The command, code and library versions, and the subsample, if recorded."""
  lines = []
  if report.get("command_line"):
    lines.append(f"- command: `{report['command_line']}`")
  environment = report.get("environment") or {}
  if environment:
    commit = environment.get("git_commit") or "unknown"
    if environment.get("git_dirty"):
      commit += " (with uncommitted changes)"
    libraries = ", ".join(f"{name} {version}" for name, version in
                          (environment.get("libraries") or {}).items()
                          if version)
    lines += [f"- cmlm {environment.get('cmlm') or '(not installed)'}, "
              f"commit {commit}; Python {environment.get('python')} on "
              f"{environment.get('platform')}",
              f"- libraries: {libraries}"]
  if "subsample" in report:
    subsample = report["subsample"]
    lines.append("- examples: all" if not subsample else
                 f"- examples: a subsample of at most "
                 f"{subsample['max_examples_per_split']} per split (seed "
                 f"{subsample['seed']})")
  if report.get("data_files"):
    lines.append(f"- data: {len(report['data_files'])} files, SHA-256 in "
                 "report.json")
  return lines + ([""] if lines else [])


def _details(tasks: Dict[str, dict]) -> List[str]:
  lines = []
  for name, result in tasks.items():
    rows = []
    if "datasets" in result:  # STS12-16
      rows = [(dataset, r["spearman"], r["num_pairs"])
              for dataset, r in result["datasets"].items()]
      header = "| dataset | spearman | pairs |\n|---|---:|---:|"
    elif "languages" in result:  # Tatoeba
      rows = [(language, r["xxx_to_eng"], r["eng_to_xxx"], r["accuracy"])
              for language, r in result["languages"].items()]
      header = ("| language | xxx→eng | eng→xxx | mean |\n"
                "|---|---:|---:|---:|")
    elif "categories" in result:  # analogy
      rows = [(f"{kind} (all)", r["accuracy"], r["num_questions"])
              for kind, r in result["kinds"].items()]
      rows += [(category, r["accuracy"], r["num_questions"])
               for category, r in result["categories"].items()]
      header = "| category | accuracy | questions |\n|---|---:|---:|"
    elif "cosine" in result:  # mining
      rows = [("ratio margin", result["f1"], result["precision"],
               result["recall"], result["threshold"]),
              ("cosine", *(result["cosine"][key] for key in
                           ("f1", "precision", "recall", "threshold")))]
      header = ("| score | F1 | precision | recall | threshold |\n"
                "|---|---:|---:|---:|---:|")
    elif "distributions" in result:  # language distribution
      languages = list(next(iter(result["distributions"]["cosine"].values())))
      rows = [(f"{variant}: {query}", *row.values())
              for variant, table in result["distributions"].items()
              for query, row in table.items()]
      header = ("| queries | " + " | ".join(languages) + " |\n|---|" +
                "---:|" * len(languages))
    if rows:
      lines += ["", f"## {name}", "", header]
      lines += ["| " + " | ".join(_figure(v) for v in row) + " |"
                for row in rows]
      if "plot" in result:
        lines += ["", f"![{name}]({os.path.basename(result['plot'])})"]
  return lines


def check_report_dir(report_dir: str) -> None:
  """Raises ValueError, one sentence, when `report_dir` is a file or under
  one: said before any task runs, not when the report is written."""
  atomic_file.check_output_path(report_dir, "--report_dir", directory=True)


def write_report(report: dict, report_dir: str) -> Dict[str, str]:
  """Writes report.json and report.md into `report_dir`; returns their paths.
  Both or neither: when one cannot be written (a full disk), the other is
  removed again, and `report_dir` too if this call made it."""
  created = not os.path.exists(report_dir)
  os.makedirs(report_dir, exist_ok=True)
  paths = {"json": os.path.join(report_dir, REPORT_JSON),
           "markdown": os.path.join(report_dir, REPORT_MARKDOWN)}
  written = []
  try:
    for kind, text in (("json", json.dumps(report, indent=2,
                                           ensure_ascii=False)),
                       ("markdown", markdown_table(report))):
      with atomic_file.atomic_file(paths[kind]) as temporary:
        with open(temporary, "w", encoding="utf-8") as f:
          f.write(text + ("\n" if kind == "json" else ""))
      written.append(paths[kind])
  except BaseException:
    for path in written:
      with contextlib.suppress(OSError):
        os.remove(path)
    if created:
      with contextlib.suppress(OSError):
        os.rmdir(report_dir)  # only if empty
    raise
  return paths
