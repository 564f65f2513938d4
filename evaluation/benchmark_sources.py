"""Where `python -m cmlm fetch` downloads each benchmark `eval` reads, and
where each file lands under `--data_dir`.

A `Benchmark` names its folder under `--data_dir` (the `default_path` of the
eval task that reads it, `evaluation/tasks.py`), its license as the source
states it, and its `Download`s: a URL, the file's sha256 where one is pinned
(None where it is not: `fetch` records the sha256 of the first download in
`--data_dir/checksums.json` and verifies every later one against it), and,
for an archive, the members to take (`Member`: a glob on the member's path
in the archive; each lands under its own base name, renamed where the
release's names differ from the ones eval reads).

The URLs are those of SentEval's `data/downstream/get_transfer_data.bash`
(facebookresearch/SentEval) and LASER's Tatoeba files; docs/benchmark_data.md
gives each benchmark's source and license in words. The files are taken as
released: SentEval's script also tokenizes them with Moses, and eval's
readers read the untokenized text.
"""
import dataclasses
import os
from typing import Dict, List, Optional, Tuple


@dataclasses.dataclass(frozen=True)
class Member:
  """Members of an archive whose path matches `pattern` (fnmatch); each
  lands under its base name, with a leading `rename[0]` made `rename[1]`."""
  pattern: str
  rename: Tuple[str, str] = ("", "")

  def landing_name(self, member_path: str) -> str:
    name = os.path.basename(member_path)
    old, new = self.rename
    if old and name.startswith(old):
      name = new + name[len(old):]
    return name


@dataclasses.dataclass(frozen=True)
class Download:
  url: str
  archive: str = ""  # "" (the file itself), "zip" or "tar.gz"
  members: Tuple[Member, ...] = ()  # an archive's members to take
  sha256: Optional[str] = None  # None: recorded on first fetch

  @property
  def file_name(self) -> str:
    """The file's name at its source: the name it lands under when it is
    not an archive, and the name a --source_url mirror serves it under."""
    return self.url.rstrip("/").rsplit("/", 1)[-1]


@dataclasses.dataclass(frozen=True)
class Benchmark:
  name: str
  title: str
  target: str  # its folder under --data_dir, as eval reads it
  license: str
  downloads: Tuple[Download, ...]
  tasks: Tuple[str, ...]  # the eval tasks that read it


_STS_WIKI = "http://ixa2.si.ehu.es/stswiki/images"
_SENTEVAL = "https://dl.fbaipublicfiles.com/senteval/senteval_data"
_SICK = "http://alt.qcri.org/semeval2014/task1/data/uploads"
_SST = "https://raw.githubusercontent.com/PrincetonML/SIF/master/data"
_TREC = "https://cogcomp.seas.upenn.edu/Data/QA/QC"
_TATOEBA = ("https://raw.githubusercontent.com/facebookresearch/LASER/main/"
            "data/tatoeba/v1")
# SentEval's MR, CR, SUBJ and MPQA: one archive (Wang and Manning 2012).
_BINARY = Download(f"{_SENTEVAL}/datasmall_NB_ACL12.zip", "zip")
# The 112 languages of Tatoeba v1 (Artetxe and Schwenk 2019), ISO 639-3.
TATOEBA_LANGUAGES = tuple("""
afr amh ang ara arq arz ast awa aze bel ben ber bos bre bul cat cbk ceb ces
cha cmn cor csb cym dan deu dsb dtp ell epo est eus fao fin fra fry gla gle
glg gsw heb hin hrv hsb hun hye ido ile ina ind isl ita jav jpn kab kat kaz
khm kor kur kzj lat lfn lit lvs mal mar max mhr mkd mon nds nld nno nob nov
oci orv pam pes pms pol por ron rus slk slv spa sqi srp swe swg swh tam tat
tel tgl tha tuk tur tzl uig ukr urd uzb vie war wuu xho yid yue zsm""".split())

_STS_LICENSE = ("per dataset, in each year's readme (e.g. MSRpar under "
                "Microsoft Research's license)")
_CORNELL = "no license file in the release (NLTK's data index: CC BY 4.0)"


def _sts_year(year: int, archive: str, folder: str, prefix: str) -> Benchmark:
  members = tuple(Member(f"{folder}/{prefix}.{kind}.*.txt",
                         (f"{prefix}.", "STS."))
                  for kind in ("input", "gs"))
  return Benchmark(
      f"sts{year}", f"SemEval STS 20{year}, English", f"sts/STS{year}-en-test",
      _STS_LICENSE, (Download(f"{_STS_WIKI}/{archive}", "zip", members),),
      (f"sts{year}",))


def _binary(name: str, title: str, folder: str, files: Tuple[str, str],
            license_line: str) -> Benchmark:
  members = tuple(Member(f"data/{folder}/{file}") for file in files)
  return Benchmark(name, title, f"transfer/{name.upper()}", license_line,
                   (dataclasses.replace(_BINARY, members=members),), (name,))


BENCHMARKS: Dict[str, Benchmark] = {b.name: b for b in [
    _sts_year(12, "4/40/STS2012-en-test.zip", "test-gold", "STS"),
    _sts_year(13, "2/2f/STS2013-en-test.zip", "test-gs", "STS"),
    _sts_year(14, "8/8c/STS2014-en-test.zip", "sts-en-test-gs-2014", "STS"),
    _sts_year(15, "d/da/STS2015-en-test.zip", "test_evaluation_task2a", "STS"),
    _sts_year(16, "9/98/STS2016-en-test.zip",
              "sts2016-english-with-gs-v1.0", "STS2016"),
    Benchmark("sts-b", "STS Benchmark (Cer et al. 2017)", "sts/STSBenchmark",
              "scores CC BY-SA 4.0; texts per source (its LICENSE.txt)",
              (Download(f"{_STS_WIKI}/4/48/Stsbenchmark.tar.gz", "tar.gz",
                        (Member("stsbenchmark/sts-*.csv"),)),), ("sts-b",)),
    Benchmark("sick", "SICK (Marelli et al. 2014)", "sts/SICK",
              "CC BY-NC-SA 3.0",
              tuple(Download(f"{_SICK}/sick_{split}.zip", "zip",
                             (Member(f"SICK_{split}.txt"),))
                    for split in ("train", "trial", "test_annotated")),
              ("sick-r", "sick-e")),
    _binary("mr", "movie review polarity v1.0 (Pang and Lee 2005)",
            "rt10662", ("rt-polarity.pos", "rt-polarity.neg"), _CORNELL),
    _binary("cr", "customer reviews (Hu and Liu 2004)", "customerr",
            ("custrev.pos", "custrev.neg"),
            "none stated by the authors (NLTK's data index: CC BY 4.0)"),
    _binary("subj", "subjectivity v1.0 (Pang and Lee 2004)", "subj",
            ("subj.objective", "subj.subjective"), _CORNELL),
    _binary("mpqa", "MPQA opinion polarity (Wiebe et al. 2005)", "mpqa",
            ("mpqa.pos", "mpqa.neg"), "the MPQA project's terms"),
    Benchmark("sst2", "Stanford Sentiment Treebank, binary (Socher et al. "
              "2013)", "transfer/SST/binary", "none stated in the files",
              tuple(Download(f"{_SST}/sentiment-{split}")
                    for split in ("train", "dev", "test")), ("sst2",)),
    Benchmark("trec", "TREC question classification (Li and Roth 2002)",
              "transfer/TREC", "research use",
              tuple(Download(f"{_TREC}/{name}.label")
                    for name in ("train_5500", "TREC_10")), ("trec",)),
    Benchmark("mrpc", "Microsoft Research Paraphrase Corpus (Dolan and "
              "Brockett 2005)", "transfer/MRPC",
              "Microsoft Research's MRPC license",
              tuple(Download(f"{_SENTEVAL}/msr_paraphrase_{split}.txt")
                    for split in ("train", "test")), ("mrpc",)),
    Benchmark("tatoeba", "Tatoeba test set v1 (Artetxe and Schwenk 2019)",
              "tatoeba", "CC BY 2.0 FR (Tatoeba's terms)",
              tuple(Download(f"{_TATOEBA}/tatoeba.{language}-eng.{side}")
                    for language in TATOEBA_LANGUAGES
                    for side in (language, "eng")), ("tatoeba",)),
]}

GROUPS: Dict[str, List[str]] = {
    "sts": ["sts12", "sts13", "sts14", "sts15", "sts16", "sts-b", "sick"],
    "transfer": ["mr", "cr", "subj", "mpqa", "sst2", "trec", "mrpc"],
    "multilingual": ["tatoeba"],
}
GROUPS["all"] = GROUPS["sts"] + GROUPS["transfer"] + GROUPS["multilingual"]
# Eval's task names that read a benchmark of another name.
ALIASES = {"sick-r": "sick", "sick-e": "sick"}


def resolve(names: List[str]) -> List[Benchmark]:
  """The benchmarks of `names` (benchmarks, eval task names or groups), in
  order, each once."""
  if not names:
    raise ValueError("fetch needs --benchmarks=NAME,... (" + known() + ").")
  chosen: List[str] = []
  for name in names:
    name = ALIASES.get(name, name)
    if name not in BENCHMARKS and name not in GROUPS:
      raise ValueError(f"Unknown benchmark {name!r}; known: {known()}.")
    for each in GROUPS.get(name, [name]):
      if each not in chosen:
        chosen.append(each)
  return [BENCHMARKS[name] for name in chosen]


def known() -> str:
  return (", ".join([*BENCHMARKS, *ALIASES]) + "; groups "
          + ", ".join(GROUPS))


def with_mirror(benchmark: Benchmark, base_url: str) -> Benchmark:
  """`benchmark` with each file fetched from BASE_URL/FILE_NAME (the name
  the file has at its source) instead; checksums stay as they are."""
  base = base_url.rstrip("/")
  return dataclasses.replace(benchmark, downloads=tuple(
      dataclasses.replace(d, url=f"{base}/{d.file_name}")
      for d in benchmark.downloads))
