"""Plots drawn from the results files, committed, and checked like the tables.

A page asks for a plot between markers:

    <!-- plot:forest docs/figures/evidence_forest.png docs/results/a.json ... -->
    ...an image link and the plotted data's hash...
    <!-- /plot -->

The kinds (`PLOTS`): `forest`, every evidence claim's difference to its
control per measure (mean and 95% t-interval over seeds, read from the
per-seed values as `evidence_tables.comparison` computes them, the level
line at 0); `speed`, sentences/s by path and batch size of one CPU's
encoding benchmark. PNG bytes vary with matplotlib's version, so staleness
is judged on the data a plot is drawn from, never the pixels: the data goes
to a sidecar `<plot>.json` beside the PNG, its sha256 into the PNG's
metadata (`data_sha256`) and into the page's block. A block differs from
its files when the data they give has another hash; `stale_plots` also
names a plot whose sidecar or PNG does not hold that hash.
`python experiments/figures.py` rewrites blocks and redraws stale plots.
"""
import hashlib
import json
import os
import re
from typing import Callable, Dict, List, Mapping, Sequence

from cmlm.experiments import evidence_tables

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCK = re.compile(r"(<!-- plot:(\w+) (\S+\.png) ([^>]+?) -->\n)(.*?)"
                   r"(<!-- /plot -->)", re.S)


def forest_data(results: Sequence[Mapping]) -> List[dict]:
  """One row per claim arm and measure of each results file."""
  rows = []
  for result in results:
    control = evidence_tables.control_of(result)
    computed = evidence_tables.comparison(result["per_seed"], control)
    for arm in result.get("claim_arms") or list(computed):
      for measure in result["measures"]:
        row = computed[arm][measure]
        rows.append({"group": result.get("title") or result["claim"],
                     "label": f"{arm} - {control}, {measure}",
                     "mean": row["difference"],
                     "t_interval": list(row["t_interval"]),
                     "seeds": len(row["per_seed"]),
                     # Under 5 seeds no row is a verdict (grey).
                     "verdict": (row["verdict"] if row["flag"] is None
                                 else "no verdict")})
  return rows


def speed_data(results: Sequence[Mapping]) -> dict:
  (result,) = results
  series = {}
  for row in result["rows"]:
    series.setdefault(row["path"], {"peer": bool(row.get("peer")),
                                    "sent_per_s": {}})
    series[row["path"]]["sent_per_s"][str(row["batch_size"])] = \
        row["sent_per_s"]
  return {"cpu": result["cpu"], "cpu_flags": result.get("cpu_flags"),
          "cores": result.get("cores"), "date": result.get("date"),
          "commit": result.get("commit"), "series": series}


def draw_forest(data: Sequence[Mapping], path: str, metadata: Mapping) -> None:
  import matplotlib
  matplotlib.use("Agg")
  from matplotlib import pyplot as plt
  groups = list(dict.fromkeys(row["group"] for row in data))
  sizes = [sum(row["group"] == g for row in data) for g in groups]
  figure, axes = plt.subplots(
      len(groups), 1, figsize=(8, 0.9 + 0.32 * sum(sizes) + 0.6 * len(groups)),
      gridspec_kw={"height_ratios": sizes}, squeeze=False)
  for axis, group in zip(axes[:, 0], groups):
    rows = [row for row in data if row["group"] == group]
    ys = list(range(len(rows)))[::-1]
    for y, row in zip(ys, rows):
      low, high = row["t_interval"]
      color = {"above": "tab:green", "below": "tab:red"}.get(row["verdict"],
                                                             "tab:gray")
      axis.plot([low, high], [y, y], color=color, linewidth=2)
      axis.plot([row["mean"]], [y], "o", color=color)
    axis.axvline(0.0, color="black", linewidth=0.8)
    axis.set_yticks(ys)
    axis.set_yticklabels([f"{r['label']} ({r['seeds']} seeds)" for r in rows],
                         fontsize=7)
    axis.set_title(group, fontsize=8, loc="left")
    axis.tick_params(axis="x", labelsize=7)
  axes[-1, 0].set_xlabel("difference to the control: mean and 95% "
                         "t-interval over seeds", fontsize=8)
  figure.tight_layout()
  figure.savefig(path, dpi=110, metadata=dict(metadata))
  plt.close(figure)


def draw_speed(data: Mapping, path: str, metadata: Mapping) -> None:
  import matplotlib
  matplotlib.use("Agg")
  from matplotlib import pyplot as plt
  figure, axis = plt.subplots(figsize=(8, 5))
  colors = plt.get_cmap("tab20").colors
  for i, (name, series) in enumerate(data["series"].items()):
    batches = list(series["sent_per_s"])
    axis.plot(batches, [series["sent_per_s"][b] for b in batches],
              "--o" if series["peer"] else "-o", label=name, markersize=4,
              color=colors[i % len(colors)])
  axis.set_yscale("log")
  axis.set_xlabel("batch size")
  axis.set_ylabel("sentences/s (log scale)")
  axis.set_title(f"{data['cpu']}, {data['cores']} cores, {data['date']} "
                 "(dashed: peers)", fontsize=9)
  axis.legend(fontsize=6, ncol=2, handlelength=3, loc="center left", bbox_to_anchor=(1, 0.5))
  figure.tight_layout()
  figure.savefig(path, dpi=110, metadata=dict(metadata))
  plt.close(figure)


PLOTS: Dict[str, tuple] = {"forest": (forest_data, draw_forest),
                           "speed": (speed_data, draw_speed)}


def digest(data) -> str:
  return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def png_digest(path: str):
  """The `data_sha256` a PNG was drawn with, or None."""
  if not os.path.exists(path):
    return None
  from PIL import Image
  with Image.open(path) as image:
    return image.info.get("data_sha256")


def sidecar(png: str) -> str:
  return os.path.splitext(png)[0] + ".json"


def _data(kind: str, files: Sequence[str], root: str):
  if kind not in PLOTS:
    raise ValueError(f"Unknown plot kind {kind!r}: one of {', '.join(PLOTS)}.")
  return PLOTS[kind][0]([evidence_tables.load(p, root) for p in files])


def render_block(kind: str, png: str, files: Sequence[str], root: str,
                 document_dir: str, write: bool) -> str:
  data = _data(kind, files, root)
  sha = digest(data)
  if write and (png_digest(os.path.join(root, png)) != sha or
                _read_sidecar(os.path.join(root, png)) != data):
    os.makedirs(os.path.dirname(os.path.join(root, png)), exist_ok=True)
    evidence_tables.write_json(data, os.path.join(root, sidecar(png)))
    PLOTS[kind][1](data, os.path.join(root, png), {"data_sha256": sha})
  link = os.path.relpath(png, document_dir or ".")
  alt = {"forest": "forest plot of every evidence claim",
         "speed": "sentences/s by path and batch size"}[kind]
  return (f"![{alt}]"
          f"({link})\n\nDrawn from [{os.path.basename(sidecar(png))}]"
          f"({os.path.relpath(sidecar(png), document_dir or '.')}) "
          f"(data sha256 `{sha[:16]}`).\n")


def _read_sidecar(png: str):
  try:
    with open(sidecar(png), encoding="utf-8") as f:
      return json.load(f)
  except (OSError, ValueError):
    return None


def render_document(text: str, root: str = REPO_ROOT, document_dir: str = "",
                    write: bool = False) -> str:
  """`text` with every plot block rendered from its files; with `write`,
  a plot whose PNG or sidecar does not hold its data is redrawn."""
  return BLOCK.sub(lambda m: m.group(1) + "\n" + render_block(
      m.group(2), m.group(3), m.group(4).split(), root, document_dir, write)
                   + "\n" + m.group(6), text)


def stale_plots(text: str, root: str = REPO_ROOT) -> List[str]:
  """The plots of `text` whose sidecar or PNG does not hold the data their
  files give."""
  stale = []
  for m in BLOCK.finditer(text):
    data = _data(m.group(2), m.group(4).split(), root)
    png = os.path.join(root, m.group(3))
    if _read_sidecar(png) != json.loads(json.dumps(data)) or (
        png_digest(png) != digest(data)):
      stale.append(m.group(3))
  return stale
