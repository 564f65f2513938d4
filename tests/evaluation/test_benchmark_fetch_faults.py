"""`cmlm fetch` given bad input or meeting a fault: an unknown benchmark, a
file:// mirror that does not exist or lacks a file, a download whose
checksum differs from the recorded one, a download cut short, a truncated
archive, a full or read-only destination. Each ends with status 2 and one
line, and leaves nothing half-written under --data_dir (only the bytes of
a network error, which the next fetch resumes). Two fetches into one
--data_dir: the second stops at once, naming the first, which completes."""
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from cmlm.evaluation import benchmark_fetch
from cmlm.training import run_lock
from cmlm.training import stop_signals
from tests import helpers
from tests.cmlm.test_command_faults import RefusingDisk
from tests.cmlm.test_command_faults import one_error_line
from tests.evaluation.test_benchmark_fetch import fetch
from tests.evaluation.test_benchmark_fetch import fixture_server  # noqa: F401  pylint: disable=unused-import
from tests.evaluation.test_benchmark_fetch import release_files
from tests.evaluation.test_benchmark_fetch import serve


@pytest.fixture(autouse=True)
def _no_second_interrupt_watcher(monkeypatch):
  monkeypatch.setattr(stop_signals, "watch_for_second_interrupt",
                      lambda label: None)  # not this test process's business


def mirror(root, names):
  """Each benchmark's release files in ROOT/NAME/; --source_url's file://
  mapping."""
  files = release_files()
  urls = {}
  for name in names:
    folder = os.path.join(root, name)
    os.makedirs(folder)
    for file_name, data in files[name].items():
      with open(os.path.join(folder, file_name), "wb") as f:
        f.write(data)
    urls[name] = "file://" + urllib.request.pathname2url(folder)
  return urls


def tree(path):
  """Every file and folder under `path`, relative to it."""
  return sorted(os.path.relpath(os.path.join(root, name), path)
                for root, dirs, names in os.walk(path)
                for name in dirs + names)


def test_a_file_url_mirror_is_fetched_like_an_http_one(tmp_path):
  urls = mirror(str(tmp_path / "mirror"), ["trec"])
  data = tmp_path / "data"
  fetch(["trec"], data, urls)
  assert tree(data) == ["checksums.json", "transfer", "transfer/TREC",
                        "transfer/TREC/TREC_10.label",
                        "transfer/TREC/train_5500.label"]  # no lock, no part
  assert (data / "transfer/TREC/TREC_10.label").read_bytes() == (
      release_files()["trec"]["TREC_10.label"])


def test_each_bad_input_and_fault_is_one_line_and_publishes_nothing(
    server, tmp_path, capsys):
  urls = mirror(str(tmp_path / "mirror"), ["trec", "sts-b"])
  lacking = mirror(str(tmp_path / "lacking"), ["trec"])
  os.remove(tmp_path / "lacking/trec/train_5500.label")
  archive = tmp_path / "mirror/sts-b/Stsbenchmark.tar.gz"
  archive.write_bytes(archive.read_bytes()[:len(archive.read_bytes()) // 2])
  recorded = tmp_path / "recorded"  # a record of other files' checksums
  recorded.mkdir()
  (recorded / "checksums.json").write_text(json.dumps({
      "benchmarks": {}, "files": {name: {"sha256": "0" * 64} for name in (
          "train_5500.label", "TREC_10.label")}}))
  served = serve(server, ["trec"])
  server.truncated.add("/trec/train_5500.label")
  cases = [  # (argv after --data_dir=D, words of its line, what D holds)
      (["--benchmarks=trecx"], "Unknown benchmark 'trecx'", None),
      ([f"--source_url=trec={urls['trec']}x"], "does not exist", None),
      ([f"--source_url=trec={lacking['trec']}"], "No such file", None),
      ([f"--source_url=trec={urls['trec']}"],
       "differs from the " + "0" * 64 + " recorded in", recorded),
      ([f"--source_url=trec={served['trec']}"], "bytes are kept", None),
      ([f"--source_url=sts-b={urls['sts-b']}", "--benchmarks=sts-b"],
       "not a readable tar.gz archive", None)]
  problems = []
  for index, (argv, words, holds) in enumerate(cases):
    data = str(tmp_path / f"data{index}")
    if holds:
      os.rename(holds, data)
    before = tree(data) if holds else None
    if not any(a.startswith("--benchmarks") for a in argv):
      argv = argv + ["--benchmarks=trec"]
    status, lines = helpers.run_command(
        ["fetch", f"--data_dir={data}", "--noprogress"] + argv, capsys)
    problem = one_error_line("fetch", status, lines)
    if not problem and words not in lines[-1]:
      problem = f"no {words!r} in {lines[-1]}"
    left = tree(data) if os.path.exists(data) else None
    if words == "bytes are kept":  # a network error: its bytes are kept
      kept = [name for name in left if name.endswith(".part")]
      left = [name for name in left if name not in kept + ["checksums.json"]]
      if len(kept) != 1:
        problem = f"kept {kept}"
    if not problem and left not in (before, []):
      problem = f"left {left} (had {before})"
    if problem:
      problems.append(f"{argv[0]}: {problem}")
  assert not problems, "\n".join(problems)


@pytest.mark.parametrize("kind", ["full", "read_only"])
def test_a_full_or_read_only_destination_is_one_line(tmp_path, capsys, kind):
  urls = mirror(str(tmp_path / "mirror"), ["trec"])
  with RefusingDisk(str(tmp_path), kind) as disk:
    disk.refuse()
    try:
      status, lines = helpers.run_command(
          ["fetch", "--benchmarks=trec", f"--data_dir={disk.path}/data",
           f"--source_url=trec={urls['trec']}", "--noprogress"], capsys)
    finally:
      disk.allow()
    assert one_error_line("fetch", status, lines) is None
    assert disk.files() == []


def test_a_data_dir_in_use_is_refused_before_any_download(server, tmp_path):
  data = str(tmp_path / "data")
  with run_lock.hold(data, command="python -m cmlm fetch (holder)",
                     name=benchmark_fetch.LOCK_FILE_NAME, what="fetch",
                     flag="--data_dir"):
    with pytest.raises(run_lock.RunDirectoryInUse,
                       match=r"in use by another fetch \(pid \d+ .*\(holder\)"
                       r"\); .* another --data_dir\."):
      fetch(["trec"], data, serve(server, ["trec"]))
  assert not server.requests
  assert not os.path.exists(data)  # the holder made it, and removed it


def test_two_fetches_into_one_data_dir_do_not_mix(server, tmp_path, capsys):
  urls = serve(server, ["trec"])
  stalled = "/trec/train_5500.label"
  server.stall[stalled] = threading.Event()
  data = tmp_path / "data"
  argv = ["fetch", "--benchmarks=trec", f"--data_dir={data}",
          f"--source_url=trec={urls['trec']}", "--noprogress"]
  first = subprocess.Popen([sys.executable, "-m", "cmlm"] + argv,
                           cwd=helpers.REPO_ROOT, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
  try:
    deadline = time.monotonic() + 60
    while (not [p for p, _ in server.requests if p == stalled] and
           time.monotonic() < deadline):
      time.sleep(0.05)
    status, lines = helpers.run_command(argv, capsys)  # the second, meanwhile
  finally:
    server.stall.pop(stalled).set()
    _, errors = first.communicate(timeout=120)
  assert one_error_line("fetch", status, lines) is None
  assert f"is in use by another fetch (pid {first.pid} " in lines[-1]
  assert first.returncode == 0, errors[-2000:]
  assert tree(data) == ["checksums.json", "transfer", "transfer/TREC",
                        "transfer/TREC/TREC_10.label",
                        "transfer/TREC/train_5500.label"]
  assert (data / "transfer/TREC/train_5500.label").read_bytes() == (
      server.files[stalled])
