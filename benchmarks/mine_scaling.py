"""Time and peak memory of bitext mining's stages at scale, and the
approximate indexes' recall (inference/bitext_mining.py).

For each size of `--sizes` (rows a side) and each index of `--indexes`,
synthetic clustered embeddings (`--dim`, `--clusters` centres, `--spread` noise;
clustered so that an approximate index's recall means something, as it
would not on uniform noise) are written as .npy files under `--work_dir`
and read memory-mapped, as `python -m cmlm mine` reads them; then, both
ways (source in target, target in source):

  index   the keys L2-normalised and indexed (`nearest_neighbours.build_index`)
  search  the queries searched by shards of `--shard_size` rows, k nearest
  margin  ratio-margin scores, each side's best candidate, max-mode pairs

Each stage's wall seconds (summed over both ways) and the peak resident
memory during it (VmHWM of /proc/self/status, reset before the stage by
writing 5 to /proc/self/clear_refs; None where that is not allowed), and
for ivf/hnsw `recall_at_k` and `top1_agreement` against exact search on
`--recall_sample` source rows. Prints a table and writes `--output`
(docs/results/mine_scaling.json) with command, commit, CPU, ISA, cores,
date and load. Never asserts a time; run it on a quiet machine:

  python benchmarks/mine_scaling.py [--sizes=100000,1000000]
      [--indexes=flat,ivf,hnsw] [--dim=384] [--work_dir=DIR]
      [--skip=1000000/flat,1000000/hnsw]

`--skip` names SIZE/INDEX cells left out (exact search of a million a side
is 2 x 10^12 dot products, hours on a few cores); the results file lists
them under `skipped`, with exact search's cost in dot products. For a
skipped flat cell, exact search of `--exact_sample` source rows against
every target row is timed (index and search, one way) and the whole
search's seconds both ways projected from its rate: exact search's time is
linear in the queries.
"""
import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from cmlm.data_pipelines import atomic_file  # noqa: E402
import encode_peers  # noqa: E402  (this folder; imports no runtime)
from cmlm.experiments import unit_provenance  # noqa: E402
from cmlm.inference import bitext_mining  # noqa: E402
from cmlm.inference import nearest_neighbours  # noqa: E402

REPO_ROOT = unit_provenance.REPO_ROOT


def parse_args(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--sizes", default="100000,1000000")
  parser.add_argument("--indexes", default="flat,ivf,hnsw")
  parser.add_argument("--dim", type=int, default=384)
  parser.add_argument("--clusters", type=int, default=1000)
  parser.add_argument("--spread", type=float, default=1.0, help="noise "
                      "around a centre, a coordinate (centres: unit normal)")
  parser.add_argument("--k", type=int, default=4)
  parser.add_argument("--shard_size", type=int, default=100000)
  parser.add_argument("--nprobe", type=int, default=16)
  parser.add_argument("--recall_sample", type=int, default=1000)
  parser.add_argument("--exact_sample", type=int, default=10000,
                      help="source rows whose exact search is timed in a "
                      "skipped flat cell (0: none)")
  parser.add_argument("--skip", default="", help="comma-separated "
                      "SIZE/INDEX cells to leave out, e.g. 1000000/flat")
  parser.add_argument("--work_dir", default=None, help="where the synthetic "
                      ".npy files go (default: a temporary folder)")
  parser.add_argument("--output", default=os.path.join(
      REPO_ROOT, "docs", "results", "mine_scaling.json"))
  args = parser.parse_args(argv)
  args.sizes = [int(s) for s in args.sizes.split(",")]
  args.indexes = [s.strip() for s in args.indexes.split(",")]
  if set(args.indexes) - set(nearest_neighbours.INDEX_KINDS):
    parser.error(f"--indexes: some of {nearest_neighbours.INDEX_KINDS}.")
  args.skip = [s.strip() for s in args.skip.split(",") if s.strip()]
  cells = {f"{size}/{kind}" for size in args.sizes for kind in args.indexes}
  if set(args.skip) - cells:
    parser.error(f"--skip: {sorted(set(args.skip) - cells)} is not a "
                 "SIZE/INDEX cell of --sizes and --indexes.")
  if args.exact_sample < 0:
    parser.error(f"--exact_sample must be 0 or more, got {args.exact_sample}.")
  return args


def write_clustered(path, rows, dim, clusters, spread, seed, chunk=100_000):
  """`rows` vectors around `clusters` shared centres (the same centres for
  both sides: seed 0), written chunk by chunk into a .npy; memory-mapped."""
  centres = np.random.default_rng(0).normal(size=(clusters, dim))
  rng = np.random.default_rng(seed)
  out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32,
                                  shape=(rows, dim))
  for start in range(0, rows, chunk):
    stop = min(start + chunk, rows)
    out[start:stop] = (centres[rng.integers(clusters, size=stop - start)] +
                       spread * rng.normal(size=(stop - start, dim)))
  out.flush()
  del out
  return np.load(path, mmap_mode="r")


def reset_peak():
  try:
    with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
      f.write("5")
    return True
  except OSError:
    return False


class Stages:
  """Seconds and peak MiB per stage, summed / maxed over calls."""

  def __init__(self):
    self.figures = {}

  def run(self, name, work):
    resettable = reset_peak()
    start = time.perf_counter()
    result = work()
    seconds = time.perf_counter() - start
    figure = self.figures.setdefault(name, {"seconds": 0.0,
                                            "peak_rss_mb": None})
    figure["seconds"] = round(figure["seconds"] + seconds, 3)
    if resettable:
      figure["peak_rss_mb"] = max(figure["peak_rss_mb"] or 0,
                                  encode_peers.peak_rss_mb())
    return result


def one_way(stages, queries, keys, k, config, shard_size):
  """Neighbourhoods of `queries` in `keys`, staged as index and search."""
  index = stages.run("index", lambda: nearest_neighbours.build_index(
      nearest_neighbours.unit_rows(keys), config))

  def search():
    found = [index.search(nearest_neighbours.unit_rows(queries[a:b]), k)
             for a, b in nearest_neighbours.shard_bounds(len(queries),
                                                         shard_size)]
    return bitext_mining.Neighbourhoods(
        np.concatenate([f[0] for f in found]),
        np.concatenate([f[1] for f in found]))
  return stages.run("search", search)


def mine_once(source, target, kind, args):
  config = nearest_neighbours.IndexConfig(kind, nprobe=args.nprobe)
  nearest_neighbours.check_index(config, min(len(source), len(target)))
  stages = Stages()
  forward = one_way(stages, source, target, args.k, config, args.shard_size)
  backward = one_way(stages, target, source, args.k, config, args.shard_size)

  def margin():
    forward_best = bitext_mining.best_candidates(forward, bitext_mining
                                                 .margin_scores(forward,
                                                                backward.means))
    backward_best = bitext_mining.best_candidates(
        backward, bitext_mining.margin_scores(backward, forward.means))
    return bitext_mining.select_pairs(*forward_best, *backward_best, "max")
  pairs = stages.run("margin", margin)
  figures = {"stages": stages.figures, "pairs": len(pairs)}
  if kind != "flat":
    figures["recall"] = nearest_neighbours.recall_against_exact(
        source, target, forward.indices, args.k, args.recall_sample)
  return figures


def sampled_exact(source, target, args) -> dict:
  """Exact search of `--exact_sample` source rows (the first ones: rows are
  drawn from the clusters at random) against every target row, one way:
  the index's and the search's seconds, the search's rate in dot products
  a second, and the whole exact search, both ways, projected from it."""
  queries = source[:min(args.exact_sample, len(source))]
  start = time.perf_counter()
  index = nearest_neighbours.build_index(
      nearest_neighbours.unit_rows(target),
      nearest_neighbours.IndexConfig("flat"))
  index_seconds = time.perf_counter() - start
  start = time.perf_counter()
  for a, b in nearest_neighbours.shard_bounds(len(queries), args.shard_size):
    index.search(nearest_neighbours.unit_rows(queries[a:b]), args.k)
  seconds = time.perf_counter() - start
  rate = len(queries) * len(target) / seconds
  return {"queries": len(queries), "index_seconds": round(index_seconds, 3),
          "search_seconds": round(seconds, 6),
          "dot_products_per_second": round(rate),
          "projected_search_seconds_both_ways": round(
              2 * len(source) * len(target) / rate)}


def write_report(report: dict, path: str) -> None:
  """The results so far, atomically: a run stopped part way keeps its
  finished cells (`complete` false until the last)."""
  with atomic_file.atomic_file(path) as temporary:
    with open(temporary, "w", encoding="utf-8") as f:
      json.dump(report, f, indent=1)
      f.write("\n")


def main(argv=None):
  args = parse_args(argv)
  facts = unit_provenance.provenance("mine_scaling", 0, refuse_modified=False,
                                     argv=argv)
  report = {key: facts[key] for key in unit_provenance.FIELDS
            if key not in ("arm", "seed")}
  report["command"] = unit_provenance.without_local_paths(
      report["command"], ("work_dir", "output"))
  report.update(dim=args.dim, clusters=args.clusters, spread=args.spread,
                k=args.k,
                shard_size=args.shard_size, nprobe=args.nprobe, results={},
                cells=[f"{size}/{kind}" for size in args.sizes
                       for kind in args.indexes], complete=False,
                skipped={cell: {"dot_products_both_ways": 2 * int(
                    cell.split("/")[0]) ** 2} for cell in args.skip})
  with tempfile.TemporaryDirectory(dir=args.work_dir) as scratch:
    for size in args.sizes:
      source = write_clustered(os.path.join(scratch, f"source_{size}.npy"),
                               size, args.dim, args.clusters, args.spread,
                               seed=1)
      target = write_clustered(os.path.join(scratch, f"target_{size}.npy"),
                               size, args.dim, args.clusters, args.spread,
                               seed=2)
      for kind in args.indexes:
        if f"{size}/{kind}" in args.skip:
          if kind == "flat" and args.exact_sample:
            sample = sampled_exact(source, target, args)
            report["skipped"][f"{size}/{kind}"]["sampled_exact"] = sample
            write_report(report, args.output)
            print(f"{size:>8} {kind:>5}: not run; {sample['queries']} "
                  f"queries searched exactly in {sample['search_seconds']}"
                  "s; the search both ways projected to "
                  f"{sample['projected_search_seconds_both_ways']}s",
                  flush=True)
          continue
        figures = mine_once(source, target, kind, args)
        report["results"][f"{size}/{kind}"] = figures
        write_report(report, args.output)  # each cell kept as it ends
        stages = figures["stages"]
        recall = figures.get("recall") or {}
        print(f"{size:>8} {kind:>5}: " + "  ".join(
            f"{name} {s['seconds']:.1f}s {s['peak_rss_mb']} MiB"
            for name, s in stages.items()) +
              (f"  recall@{args.k} {recall['recall_at_k']:.4f} top-1 "
               f"{recall['top1_agreement']:.4f}" if recall else ""),
              flush=True)
      del source, target
  report["complete"] = True
  write_report(report, args.output)
  print(f"Wrote {args.output}")


if __name__ == "__main__":
  main()
