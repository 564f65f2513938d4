r"""Mine parallel sentences from two corpora with the margin criterion
(Artetxe & Schwenk 2018, arXiv:1811.01136) on FAISS (inference/bitext_mining.py).

    python -m cmlm mine --model=exports/multilingual --source=en.txt \
        --target=de.txt --output=pairs.tsv [--mode=max] [--threshold=1.06]
    python -m cmlm mine --source_embeddings=en.npy \
        --target_embeddings=de.npy --index=ivf --nlist=4096 --nprobe=32 \
        --output=pairs.tsv

Each side is a .txt file of sentences (one a line) encoded with --model, or
a .npy of embeddings (`encode --output=x.npy`), read memory-mapped; with
both, the embeddings are mined and the sentences written. Each sentence's
--k nearest neighbours in the other corpus are found both ways (--index:
exact flat, or approximate ivf / hnsw, whose recall against exact search on
a sample of sentences is printed), candidates scored by the --margin
(ratio: cos(x, y) / mean; distance: cos(x, y) - mean, the mean of both
neighbourhoods' mean cosines) and selected by --mode (LASER's): forward (each
source sentence's best target), backward (each target sentence's best
source), intersection (pairs both ways) or max (both, one-to-one from the
best down). --output: `score<TAB>source<TAB>target` a line, best first
(row numbers where only embeddings were given).

    python -m cmlm mine --model=exports/multilingual --source=en.txt \
        --target=de.txt --output=pairs.tsv --dask_workers=4

--dask_workers (a local cluster) or --dask_address (a running one) encodes
the sentences and searches on a Dask cluster: --encode_shard_size sentences
and --shard_size queries a task, the pairs of one process, and a killed
worker's shards run again elsewhere (inference/dask_encoding.py,
inference/dask_mining.py).
"""
import math

from absl import flags

from cmlm.commands import flag_parsing
from cmlm.data_pipelines import atomic_file

FLAGS = flag_parsing.command_flags(__name__)
flags.DEFINE_string("source", None, "The source sentences: a .txt file, one "
                    "a line (UTF-8).", flag_values=FLAGS)
flags.DEFINE_string("target", None, "The target sentences: a .txt file, one "
                    "a line (UTF-8).", flag_values=FLAGS)
flags.DEFINE_string("source_embeddings", None, "The source embeddings: a "
                    ".npy of float [sentences, dim] (then --source is only "
                    "written, never encoded).", flag_values=FLAGS)
flags.DEFINE_string("target_embeddings", None, "The target embeddings: a "
                    ".npy of float [sentences, dim].", flag_values=FLAGS)
flags.DEFINE_string("model", None, "What encodes --source / --target: any "
                    "model encode takes (an export, a SavedModel, a training "
                    "--model_dir, ...).", flag_values=FLAGS)
flags.DEFINE_integer("batch_size", 256, "Sentences per batch when "
                     "encoding.", flag_values=FLAGS)
flags.DEFINE_string("output", None, "The .tsv file of mined pairs.",
                    flag_values=FLAGS)
flags.DEFINE_bool("overwrite", False, "Replace --output when it exists.",
                  flag_values=FLAGS)
flags.DEFINE_integer("k", 4, "Neighbourhood size of the margin (and the "
                     "candidates of each sentence).", flag_values=FLAGS)
flags.DEFINE_enum("margin", "ratio", ["ratio", "distance"], "ratio: cos / "
                  "mean; distance: cos - mean.", flag_values=FLAGS)
flags.DEFINE_enum("mode", "max", ["forward", "backward", "intersection",
                                  "max"],
                  "Which candidates are pairs (LASER's modes).",
                  flag_values=FLAGS)
flags.DEFINE_float("threshold", None, "Keep pairs scoring at least this "
                   "(default: every pair of --mode).", flag_values=FLAGS)
flags.DEFINE_enum("index", "flat", ["flat", "ivf", "hnsw"], "FAISS index: "
                  "flat (IndexFlatIP, exact), ivf (IndexIVFFlat) or hnsw "
                  "(IndexHNSWFlat).", flag_values=FLAGS)
flags.DEFINE_integer("nlist", None, "ivf: k-means cells (default: 4 "
                     "sqrt(sentences), at least 39 sentences a cell).",
                     flag_values=FLAGS)
flags.DEFINE_integer("nprobe", 16, "ivf: cells searched a query.",
                     flag_values=FLAGS)
flags.DEFINE_integer("hnsw_m", 32, "hnsw: graph links a node.",
                     flag_values=FLAGS)
flags.DEFINE_integer("ef_search", 128, "hnsw: search beam width.",
                     flag_values=FLAGS)
flags.DEFINE_integer("recall_sample", 1000, "ivf/hnsw: source sentences "
                     "searched exactly too, to report the index's recall "
                     "(0: none).", flag_values=FLAGS)
flags.DEFINE_integer("shard_size", 100000, "Query sentences searched at a "
                     "time.", flag_values=FLAGS)
flags.DEFINE_integer("index_shard_size", None, "Sentences a FAISS index "
                     "holds; a larger corpus is indexed by shards and each "
                     "sentence's top k merged across them (default: one "
                     "index a side).", flag_values=FLAGS)
flags.DEFINE_integer("dask_workers", 0, "Encode and search on a "
                     "dask.distributed LocalCluster of this many worker "
                     "processes (0: in this process).", flag_values=FLAGS)
flags.DEFINE_string("dask_address", None, "Encode and search on the running "
                    "Dask cluster at this scheduler address "
                    "(tcp://HOST:8786); its workers must read --model and "
                    "the embeddings' paths.", flag_values=FLAGS)
flags.DEFINE_integer("encode_shard_size", 10000, "On a Dask cluster: "
                     "sentences a task encodes.", flag_values=FLAGS)
flags.DEFINE_bool("progress", True, "Show progress on standard error.",
                  flag_values=FLAGS)


def main(argv) -> None:
  flag_parsing.parse("mine", __doc__, FLAGS, argv)
  atomic_file.check_output_path(FLAGS.output, "--output", False)
  for name in ("batch_size", "shard_size", "encode_shard_size"):
    if FLAGS[name].value < 1:
      raise ValueError(f"--{name} must be 1 or more, got {FLAGS[name].value}.")
  if FLAGS.index_shard_size is not None and FLAGS.index_shard_size < 1:
    raise ValueError("--index_shard_size must be 1 or more, got "
                     f"{FLAGS.index_shard_size}.")
  if FLAGS.threshold is not None and not math.isfinite(FLAGS.threshold):
    raise ValueError(f"--threshold must be a finite score, got "
                     f"{FLAGS.threshold}.")
  if FLAGS.dask_workers < 0:
    raise ValueError("--dask_workers must be 0 or more, got "
                     f"{FLAGS.dask_workers}.")
  if FLAGS.dask_workers and FLAGS.dask_address:
    raise ValueError("Give --dask_workers (a local cluster) or "
                     "--dask_address (a running one), not both.")
  result = _mine(_dask_client())
  recall = result["recall"]
  if recall:
    print(f"{FLAGS.index} index against exact search on "
          f"{recall['sample_size']} source sentences: recall@{recall['k']} "
          f"{recall['recall_at_k']:.4f}, top-1 agreement "
          f"{recall['top1_agreement']:.4f}")
  print(f"Wrote {FLAGS.output}: {len(result['pairs'])} pairs ({FLAGS.mode} "
        f"mode, {FLAGS.margin} margin, k={FLAGS.k}).")


def _dask_client():
  """What opens the Dask client the encoding and search run on (--dask_workers,
  --dask_address): a context manager factory, entered once the inputs are
  checked; None to search in this process."""
  from cmlm.inference import dask_mining  # pylint: disable=g-import-not-at-top
  if FLAGS.dask_workers:
    return lambda: dask_mining.local_client(FLAGS.dask_workers)
  if FLAGS.dask_address:
    return lambda: dask_mining.remote_client(FLAGS.dask_address)
  return None


def _mine(open_client):
  # pylint: disable=g-import-not-at-top
  from cmlm.inference import mine_files
  from cmlm.inference import nearest_neighbours
  config = nearest_neighbours.IndexConfig(
      FLAGS.index, nlist=FLAGS.nlist, nprobe=FLAGS.nprobe,
      hnsw_m=FLAGS.hnsw_m, ef_search=FLAGS.ef_search)
  return mine_files.mine_files(
      FLAGS.output, FLAGS.source, FLAGS.target, FLAGS.source_embeddings,
      FLAGS.target_embeddings, FLAGS.model, FLAGS.batch_size,
      FLAGS.overwrite, FLAGS.progress, k=FLAGS.k, margin=FLAGS.margin,
      mode=FLAGS.mode, threshold=FLAGS.threshold, config=config,
      query_shard_size=FLAGS.shard_size,
      key_shard_size=FLAGS.index_shard_size,
      recall_sample=FLAGS.recall_sample, open_client=open_client,
      encode_shard_size=FLAGS.encode_shard_size)
