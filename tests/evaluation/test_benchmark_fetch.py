"""`cmlm fetch`: fixture archives, built here in each release's layout and
served from 127.0.0.1 (no network), land where eval's task readers read
them; checksums are recorded then verified; a cut connection is resumed
with a Range request; a network, HTTP or checksum error is one line with
nothing published; a killed fetch's staging folder is removed."""
import contextlib
import dataclasses
import http.server
import io
import json
import os
import socket
import subprocess
import sys
import tarfile
import threading
import time
import zipfile

import pytest

from cmlm.evaluation import benchmark_fetch
from cmlm.evaluation import benchmark_sources
from cmlm.evaluation.benchmark_fetch import FetchError
from cmlm.evaluation.benchmark_fetch import FetchOptions
from tests import helpers

QUIET = dict(retry_wait_s=0.0, show_progress=False, timeout_s=5.0)
STS_PAIRS = "a cat sits\ta cat is sitting\textra\nthe sun\tthe moon\n"
SICK = ("pair_ID\tsentence_A\tsentence_B\trelatedness_score\t"
        "entailment_judgment\n1\ta man runs\ta person runs\t4.5\tENTAILMENT\n"
        "2\ta dog barks\ta cat sleeps\t1.2\tNEUTRAL\n")
MRPC = ("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
        "1\t1\t2\tHe left.\tHe went away.\n0\t3\t4\tIt rains.\tIt is sunny.\n")


def _zip(files):
  data = io.BytesIO()
  with zipfile.ZipFile(data, "w") as archive:
    for name, text in files.items():
      archive.writestr(name, text)
  return data.getvalue()


def _tar_gz(files):
  data = io.BytesIO()
  with tarfile.open(fileobj=data, mode="w:gz") as archive:
    for name, text in files.items():
      info = tarfile.TarInfo(name)
      info.size = len(text.encode())
      archive.addfile(info, io.BytesIO(text.encode()))
  return data.getvalue()


def release_files():
  """{benchmark: {file name at its source: bytes}}, in each release's
  layout (archive folders and names as the sources have them)."""
  files = {}
  for year, folder, prefix in [(12, "test-gold", "STS"), (13, "test-gs", "STS"),
                               (14, "sts-en-test-gs-2014", "STS"),
                               (15, "test_evaluation_task2a", "STS"),
                               (16, "sts2016-english-with-gs-v1.0",
                                "STS2016")]:
    files[f"sts{year}"] = {f"STS20{year}-en-test.zip": _zip({
        f"{folder}/{prefix}.input.news.txt": STS_PAIRS,
        f"{folder}/{prefix}.gs.news.txt": "4.2\n\n",
        f"{folder}/00-readme.txt": "not taken"})}
  benchmark_line = "main-news\tfile\t2012\t0001\t{}\ta cat\ta feline\n"
  files["sts-b"] = {"Stsbenchmark.tar.gz": _tar_gz({
      f"stsbenchmark/sts-{split}.csv": benchmark_line.format(score)
      for split, score in [("train", 1.0), ("dev", 2.0), ("test", 3.0)]})}
  files["sick"] = {f"sick_{split}.zip": _zip({f"SICK_{split}.txt": SICK,
                                              "readme.txt": "x"})
                   for split in ("train", "trial", "test_annotated")}
  binary = _zip({
      "data/rt10662/rt-polarity.pos": "good film\n",
      "data/rt10662/rt-polarity.neg": "bad film\n",
      "data/customerr/custrev.pos": "works well\n",
      "data/customerr/custrev.neg": "broke soon\n",
      "data/subj/subj.objective": "the film is set in rome\n",
      "data/subj/subj.subjective": "a lovely film\n",
      "data/mpqa/mpqa.pos": "fine\n", "data/mpqa/mpqa.neg": "awful\n"})
  for name in ("mr", "cr", "subj", "mpqa"):
    files[name] = {"datasmall_NB_ACL12.zip": binary}
  files["sst2"] = {f"sentiment-{split}": b"a fine film\t1\na dull film\t0\n"
                   for split in ("train", "dev", "test")}
  files["trec"] = {name: b"DESC:manner How did it go ?\nNUM:date When ?\n"
                   for name in ("train_5500.label", "TREC_10.label")}
  files["mrpc"] = {f"msr_paraphrase_{split}.txt": MRPC
                   for split in ("train", "test")}
  files["tatoeba"] = {
      f"tatoeba.{language}-eng.{side}": f"sentence of {side}\n"
      for language in benchmark_sources.TATOEBA_LANGUAGES
      for side in (language, "eng")}
  return {benchmark: {name: data if isinstance(data, bytes) else data.encode()
                      for name, data in by_name.items()}
          for benchmark, by_name in files.items()}


class _Handler(http.server.BaseHTTPRequestHandler):
  """Serves `server.files` by path, honouring `Range: bytes=N-`; a path in
  `server.cut_once` is sent half and the connection closed, once; one in
  `server.truncated` is sent half every time."""

  def do_GET(self):  # pylint: disable=invalid-name
    self.server.requests.append((self.path, self.headers.get("Range")))
    data = self.server.files.get(self.path)
    if data is None:
      self.send_error(404)
      return
    start = 0
    if self.headers.get("Range"):
      start = int(self.headers["Range"].split("=")[1].rstrip("-"))
      if start >= len(data):
        self.send_error(416)
        return
    self.send_response(206 if start else 200)
    if start:
      self.send_header("Content-Range",
                       f"bytes {start}-{len(data) - 1}/{len(data)}")
    self.send_header("Content-Length", str(len(data) - start))
    self.end_headers()
    if self.path in self.server.stall:  # half, then wait (bounded)
      self.wfile.write(data[:len(data) // 2])
      self.wfile.flush()
      self.server.stall[self.path].wait(timeout=30)
      return
    if (self.path in self.server.cut_once or
        self.path in self.server.truncated):
      self.server.cut_once.discard(self.path)
      self.wfile.write(data[start:start + (len(data) - start) // 2])
      self.close_connection = True
      return
    self.wfile.write(data[start:])

  def log_message(self, *args):
    pass


@pytest.fixture(name="server")
def fixture_server():
  server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
  server.files, server.requests, server.cut_once = {}, [], set()
  server.stall, server.truncated = {}, set()
  # shutdown() waits for serve_forever to look again: every 0.05 s, not
  # every 0.5 s (its default), a wait each test would pay.
  thread = threading.Thread(target=server.serve_forever, args=(0.05,),
                            daemon=True)
  thread.start()
  try:
    yield server
  finally:
    for event in server.stall.values():
      event.set()
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def serve(server, benchmarks):
  """Serves each benchmark's release under /NAME/; returns --source_url's
  mapping."""
  files = release_files()
  for name in benchmarks:
    for file_name, data in files[name].items():
      server.files[f"/{name}/{file_name}"] = data
  host, port = server.server_address
  return {name: f"http://{host}:{port}/{name}" for name in benchmarks}


def fetch(names, data_dir, urls, **options):
  return benchmark_fetch.fetch_benchmarks(
      names, str(data_dir), urls, FetchOptions(**{**QUIET, **options},
                                               log=io.StringIO()))


def test_every_benchmark_lands_where_eval_s_tasks_read_it(server, tmp_path):
  import cmlm.evaluation  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  from cmlm.evaluation import tasks  # pylint: disable=g-import-not-at-top
  from cmlm.evaluation.task_data import EvalOptions  # pylint: disable=g-import-not-at-top
  urls = serve(server, benchmark_sources.GROUPS["all"])
  for name in ("mr", "cr", "subj", "mpqa"):  # one archive at one mirror
    urls[name] = urls["mr"]
  fetch(["all"], tmp_path, urls)
  read = {}
  for benchmark in benchmark_sources.BENCHMARKS.values():
    for task_name in benchmark.tasks:
      task = tasks.TASKS[task_name]
      assert benchmark.target == task.default_path
      read[task_name] = task.read(str(tmp_path / task.default_path),
                                  EvalOptions())["data"]
  assert set(read) == set(tasks.GROUPS["sts"] + tasks.GROUPS["transfer"] +
                          ["tatoeba"])
  assert read["sts16"]["news"].scores.tolist() == [4.2]  # renamed STS2016.*
  assert read["sts-b"].scores.tolist() == [3.0]  # the test split
  assert read["sick-e"]["train"].labels is not None
  assert len(read["tatoeba"]) == 112
  assert not os.path.exists(tmp_path / "sts/STS12-en-test/00-readme.txt")
  left = [e for e in os.listdir(tmp_path) if e.startswith(".tmp")]
  assert not left  # every download removed once its benchmarks are in place
  # eval's line for a task without --data_dir names the fetch that helps.
  from cmlm.evaluation import runner  # pylint: disable=g-import-not-at-top
  for task_name, words in [("sick-e", "fetch --benchmarks=sick-e "),
                           ("mining", "--mining_source")]:
    with pytest.raises(ValueError, match=words):
      runner.resolve_tasks([task_name], None, {})
  # The archive shared by MR, CR, SUBJ and MPQA was downloaded once.
  shared = [p for p, _ in server.requests if p.endswith("NB_ACL12.zip")]
  assert len(shared) == 1


def test_a_file_name_is_one_download_in_the_registry():
  """checksums.json and the .part files key a download by its file name."""
  urls = {}
  for benchmark in benchmark_sources.BENCHMARKS.values():
    for download in benchmark.downloads:
      assert urls.setdefault(download.file_name, download.url) == download.url


def test_the_docs_layout_names_every_fetched_folder():
  with open(os.path.join(helpers.REPO_ROOT, "docs", "benchmark_data.md"),
            encoding="utf-8") as f:
    layout = f.read().split("## The `--data_dir` layout")[1].split("```")[1]
  for benchmark in benchmark_sources.BENCHMARKS.values():
    top, *rest = benchmark.target.split("/")
    assert f"  {top}/" in layout
    folder = "/".join(rest)
    if folder.startswith("STS1") and folder.endswith("-en-test"):
      folder = "STS12-en-test/ ... STS16-en-test"  # the years as a range
    if rest:
      assert f"{folder}/" in layout, benchmark.target


def test_checksums_are_recorded_then_verified(server, tmp_path):
  urls = serve(server, ["sts-b", "trec"])
  fetch(["sts-b", "trec"], tmp_path, urls)
  record = json.loads((tmp_path / "checksums.json").read_text())
  entry = record["files"]["Stsbenchmark.tar.gz"]
  assert len(entry["sha256"]) == 64 and not entry["pinned"]
  assert record["benchmarks"]["trec"]["license"] == "research use"
  log = io.StringIO()
  benchmark_fetch.fetch_benchmarks(["trec"], str(tmp_path), urls,
                                   FetchOptions(**QUIET, log=log))
  assert "already in" in log.getvalue()  # skipped
  # The source changes under the recorded checksum: refused, none written.
  os.rename(tmp_path / "transfer/TREC", tmp_path / "old")
  server.files["/trec/TREC_10.label"] += b"ABBR:exp What ?\n"
  with pytest.raises(FetchError, match=r"TREC_10.label: sha256 .* differs "
                     r"from the .* recorded in .*checksums.json"):
    fetch(["trec"], tmp_path, urls)
  assert not os.path.exists(tmp_path / "transfer/TREC")
  assert not [e for e in os.listdir(tmp_path / "transfer")
              if e.startswith(".tmp")]
  assert not [e for e in os.listdir(tmp_path) if e.endswith(".part")]


def test_a_pinned_checksum_is_checked(server, tmp_path, monkeypatch):
  urls = serve(server, ["mrpc"])
  mrpc = benchmark_sources.BENCHMARKS["mrpc"]
  pinned = tuple(dataclasses.replace(d, sha256="0" * 64)
                 for d in mrpc.downloads)
  monkeypatch.setitem(benchmark_sources.BENCHMARKS, "mrpc",
                      dataclasses.replace(mrpc, downloads=pinned))
  with pytest.raises(FetchError, match="pinned in"):
    fetch(["mrpc"], tmp_path, urls)
  assert not os.path.exists(tmp_path / "transfer/MRPC")


def test_a_cut_connection_is_resumed_with_a_range_request(server, tmp_path):
  urls = serve(server, ["sts-b"])
  server.cut_once.add("/sts-b/Stsbenchmark.tar.gz")
  fetch(["sts-b"], tmp_path, urls)
  ranges = [r for p, r in server.requests if p.endswith(".tar.gz")]
  assert ranges[0] is None and ranges[1].startswith("bytes=")
  assert (tmp_path / "sts/STSBenchmark/sts-test.csv").read_text().startswith(
      "main-news")


def test_a_network_error_keeps_the_part_for_the_next_fetch(server, tmp_path):
  urls = serve(server, ["sts-b"])
  server.cut_once.add("/sts-b/Stsbenchmark.tar.gz")
  with pytest.raises(FetchError, match=r"network error .* after 1 tries; "
                     r"\d+ bytes are kept in .*\.part and the next fetch "
                     "resumes them"):
    fetch(["sts-b"], tmp_path, urls, retries=1)
  assert not os.path.exists(tmp_path / "sts")  # made for it, then removed
  fetch(["sts-b"], tmp_path, urls, retries=1)  # resumed, then complete
  assert server.requests[-1][1].startswith("bytes=")
  assert sorted(os.listdir(tmp_path / "sts/STSBenchmark")) == [
      "sts-dev.csv", "sts-test.csv", "sts-train.csv"]


def test_unreachable_and_missing_files_are_one_line(server, tmp_path):
  with contextlib.closing(socket.socket()) as free:
    free.bind(("127.0.0.1", 0))
    closed_port = free.getsockname()[1]
  with pytest.raises(FetchError, match="network error"):
    fetch(["trec"], tmp_path,
          {"trec": f"http://127.0.0.1:{closed_port}/trec"}, retries=2)
  with pytest.raises(FetchError, match=r"HTTP 404"):
    fetch(["trec"], tmp_path, {"trec": "http://127.0.0.1:"
                                       f"{server.server_address[1]}/none"})
  assert not os.path.exists(tmp_path / "transfer/TREC")


def test_bad_input_is_refused_before_any_download(server, tmp_path):
  with pytest.raises(ValueError, match="Unknown benchmark 'stsx'"):
    fetch(["stsx"], tmp_path, {})
  for bad in ["sts-b=ftp://host/x", "sts-b=not a url", "nope=http://h/x",
              "sts-b"]:
    with pytest.raises(ValueError, match="--source_url"):
      benchmark_fetch.parse_source_urls(bad)
  (tmp_path / "transfer/TREC").mkdir(parents=True)  # a copy of one's own
  with pytest.raises(FileExistsError, match="not written by `cmlm fetch`"):
    fetch(["trec"], tmp_path, serve(server, ["trec"]))
  (tmp_path / "afile").write_text("x")
  with pytest.raises(FileExistsError, match="is a file"):
    fetch(["trec"], tmp_path / "afile", {})
  assert not server.requests


def test_a_killed_fetch_s_staging_folder_is_removed(server, tmp_path):
  dead = tmp_path / "transfer" / ".tmp-fetch-999999999-TREC"
  dead.mkdir(parents=True)
  (dead / "train_5500.label").write_text("half")
  fetch(["trec"], tmp_path, serve(server, ["trec"]))
  assert not dead.exists()
  assert sorted(os.listdir(tmp_path / "transfer")) == ["TREC"]


def test_a_fetch_killed_mid_download_is_cleaned_up_by_the_next(server,
                                                               tmp_path):
  urls = serve(server, ["trec"])
  server.stall["/trec/train_5500.label"] = threading.Event()
  process = subprocess.Popen(
      [sys.executable, "-m", "cmlm", "fetch", "--benchmarks=trec",
       f"--data_dir={tmp_path}", f"--source_url=trec={urls['trec']}"],
      cwd=helpers.REPO_ROOT, stdout=subprocess.DEVNULL,
      stderr=subprocess.DEVNULL)
  staging = tmp_path / "transfer" / f".tmp-fetch-{process.pid}-TREC"
  try:
    deadline = time.monotonic() + 60
    while not staging.exists() and time.monotonic() < deadline:
      time.sleep(0.05)
    assert staging.exists()
  finally:
    process.kill()  # SIGKILL: no handler runs
    process.wait(timeout=30)
    server.stall.pop("/trec/train_5500.label").set()
  fetch(["trec"], tmp_path, urls)
  assert not staging.exists()
  assert sorted(os.listdir(tmp_path / "transfer")) == ["TREC"]
  assert not [e for e in os.listdir(tmp_path) if e.startswith(".tmp")]
  assert (tmp_path / "transfer/TREC/train_5500.label").read_bytes() == (
      server.files["/trec/train_5500.label"])
