r"""Download the public benchmarks `eval` reads (STS12-16, STS-B, SICK,
SentEval's transfer tasks, Tatoeba) from their sources into the
`--data_dir` layout eval reads, with checksums
(evaluation/benchmark_fetch.py).

    python -m cmlm fetch --benchmarks=sts,transfer,tatoeba --data_dir=DIR
    python -m cmlm fetch --benchmarks=sts-b --data_dir=DIR \
        --source_url=sts-b=https://mirror.example/stsbenchmark
    python -m cmlm fetch --list

Each benchmark's license is printed as it is fetched (and recorded in
DIR/checksums.json): check it before you redistribute a copy. A benchmark
appears whole or not at all; an interrupted download is resumed by the next
fetch; one fetch at a time writes a DIR (a second stops at once). Sources
and licenses: docs/benchmark_data.md.
"""
from absl import flags

from cmlm.commands import flag_parsing

FLAGS = flag_parsing.command_flags(__name__)
flags.DEFINE_string("benchmarks", None, "Comma-separated benchmarks (sts12.."
                    "sts16, sts-b, sick (or sick-r, sick-e), mr, cr, subj, "
                    "mpqa, sst2, trec, mrpc, tatoeba) or groups (sts, "
                    "transfer, multilingual, all).", flag_values=FLAGS)
flags.DEFINE_string("data_dir", None, "The folder to fetch into (made if "
                    "missing): the one eval's --data_dir will name.",
                    flag_values=FLAGS)
flags.DEFINE_string("source_url", None, "NAME=URL,...: fetch benchmark NAME's "
                    "files from the http(s) or file:// folder URL (each file "
                    "under its name at the source) instead of the public "
                    "source; the checksums are verified as for the source.",
                    flag_values=FLAGS)
flags.DEFINE_bool("list", False, "List the benchmarks (those of --benchmarks "
                  "when given): folder, source and license; fetch nothing.",
                  flag_values=FLAGS)
flags.DEFINE_bool("progress", True, "Show a progress bar per download.",
                  flag_values=FLAGS)


def main(argv) -> None:
  flag_parsing.parse("fetch", __doc__, FLAGS, argv)
  # pylint: disable=g-import-not-at-top
  from cmlm.evaluation import benchmark_fetch
  from cmlm.evaluation import benchmark_sources
  # pylint: enable=g-import-not-at-top
  names = [n.strip() for n in (FLAGS.benchmarks or "").split(",") if n.strip()]
  if FLAGS.list:  # the named ones (an unknown name refused), else all
    listed = (benchmark_sources.resolve(names) if names
              else benchmark_sources.BENCHMARKS.values())
    for benchmark in listed:
      print(f"{benchmark.name:8s} {benchmark.target:24s} {benchmark.title}; "
            f"from {benchmark.downloads[0].url}"
            f"{' (and more)' if len(benchmark.downloads) > 1 else ''}; "
            f"license: {benchmark.license}")
    return
  source_urls = benchmark_fetch.parse_source_urls(FLAGS.source_url)
  unused = sorted(set(source_urls) - {benchmark.name for benchmark in
                                      benchmark_sources.resolve(names)})
  if unused:  # a URL given for nothing fetched: a mistyped --benchmarks?
    raise ValueError(f"--source_url names {', '.join(unused)}, which this "
                     f"fetch does not fetch (--benchmarks={','.join(names)}); "
                     "add it to --benchmarks or drop its URL.")
  benchmark_fetch.fetch_benchmarks(
      names, FLAGS.data_dir, source_urls,
      benchmark_fetch.FetchOptions(show_progress=FLAGS.progress))
