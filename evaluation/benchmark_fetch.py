"""Downloads benchmarks into the `--data_dir` layout `eval` reads
(`python -m cmlm fetch`; the sources are `evaluation/benchmark_sources.py`).

Each benchmark appears whole or not at all: its files are gathered in a
temporary folder beside its target (`.tmp-fetch-PID-NAME`) and renamed into
place when all are there and verified. A download goes to
`DIR/.tmp-fetch-FILE.part`; after a network error the bytes fetched stay
there and the next fetch asks the server for the rest (an HTTP Range
request; a server that ignores it sends the whole file again). A killed
fetch's temporary folders are removed by the next fetch of the same target.

Checksums: a download whose sha256 is pinned in the registry is verified
against it; one not pinned has the sha256 of its first download recorded
in `DIR/checksums.json` (with the URL and the license) once its benchmark
is published (a download that does not unpack records nothing), and every
later download of it is verified against that record. A mismatch removes the
download and stops with one line; nothing is published.

One fetch at a time writes a `--data_dir`: a fetch holds
`DIR/.cmlm-fetch.lock` (`training.run_lock`) while it works, and a second
one started meanwhile stops at once with one line naming the holder (both
would download into the same `.part` files).
"""
import contextlib
import dataclasses
import fnmatch
import hashlib
import http.client
import json
import os
import shutil
import sys
import tarfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from typing import Dict, List, Optional, TextIO, Tuple

from cmlm.data_pipelines import atomic_file
from cmlm.evaluation import benchmark_sources
from cmlm.evaluation.benchmark_sources import Benchmark
from cmlm.evaluation.benchmark_sources import Download
from cmlm.inference import progress as progress_bar
from cmlm.training import run_lock

CHECKSUMS_FILE = "checksums.json"
LOCK_FILE_NAME = ".cmlm-fetch.lock"
PART_PREFIX = ".tmp-fetch-"
_CHUNK = 1 << 16


class FetchError(ValueError):
  """A download that failed (network, HTTP status, checksum, a damaged
  archive): one line for the user, status 2, nothing published. After a
  network error (`resumable`) the downloads are kept for the next fetch;
  after any other, this run's downloads are removed."""

  def __init__(self, message: str, resumable: bool = False):
    super().__init__(message)
    self.resumable = resumable


class _ReadError(Exception):
  """The connection failed while the body was read (retried, resumed)."""


@dataclasses.dataclass
class FetchOptions:
  timeout_s: float = 60.0
  retries: int = 3  # tries of one download, each resuming the last
  retry_wait_s: float = 2.0
  show_progress: bool = True
  log: TextIO = sys.stderr


def parse_source_urls(text: Optional[str]) -> Dict[str, str]:
  """NAME=URL,... -> {benchmark: base URL}, each checked."""
  mirrors = {}
  for item in filter(None, (text or "").split(",")):
    name, sep, url = item.partition("=")
    name = benchmark_sources.ALIASES.get(name.strip(), name.strip())
    if not sep or name not in benchmark_sources.BENCHMARKS:
      raise ValueError(f"--source_url takes NAME=URL with NAME a benchmark "
                       f"({', '.join(benchmark_sources.BENCHMARKS)}); got "
                       f"{item!r}.")
    parsed = urllib.parse.urlparse(url.strip())
    if parsed.scheme == "file":
      folder = urllib.request.url2pathname(parsed.path)
      if parsed.netloc not in ("", "localhost") or not os.path.isdir(folder):
        raise ValueError(f"--source_url {name}={url}: the folder {folder} "
                         "does not exist; a file:// URL names a local "
                         "folder holding the benchmark's files under their "
                         "source names.")
    elif parsed.scheme not in ("http", "https") or not parsed.netloc:
      raise ValueError(f"--source_url {name}={url}: expected an http://, "
                       "https:// or file:// URL of a folder serving the "
                       "benchmark's files under their source names.")
    mirrors[name] = url.strip()
  return mirrors


def fetch_benchmarks(names: List[str], data_dir: str,
                     source_urls: Optional[Dict[str, str]] = None,
                     options: Optional[FetchOptions] = None) -> List[str]:
  """Fetches the benchmarks `names` (benchmarks, eval task names, groups)
  into `data_dir`; returns the folders written (those already fetched are
  skipped). Every name, URL and target is checked before any download."""
  options = options or FetchOptions()
  source_urls = source_urls or {}
  benchmarks = [with_source(b, source_urls)
                for b in benchmark_sources.resolve(names)]
  made = bool(data_dir) and not os.path.lexists(data_dir)
  data_dir = _usable_data_dir(data_dir)
  try:
    with run_lock.hold(data_dir, name=LOCK_FILE_NAME, what="fetch",
                       flag="--data_dir"):
      return _fetch_locked(benchmarks, data_dir, options)
  finally:
    if made:
      with contextlib.suppress(OSError):
        os.rmdir(data_dir)  # made for this fetch, which wrote nothing


def _fetch_locked(benchmarks: List[Benchmark], data_dir: str,
                  options: FetchOptions) -> List[str]:
  """`fetch_benchmarks` once `data_dir`'s lock is held."""
  record = _read_record(data_dir)
  unchanged = json.dumps(record, sort_keys=True)
  todo = []
  for benchmark in benchmarks:
    target = os.path.join(data_dir, benchmark.target)
    _remove_stale_staging(target)
    if os.path.lexists(target):
      if benchmark.name in record["benchmarks"] and os.path.isdir(target):
        print(f"{benchmark.name}: already in {target}; skipped.",
              file=options.log)
        continue
      raise FileExistsError(
          f"{target} already exists and was not written by `cmlm fetch`; "
          f"eval reads it as it is: move it away to fetch {benchmark.name} "
          "again, or choose another --data_dir.")
    todo.append(benchmark)
  # url -> its complete, verified file and that file's checksum entry
  downloaded: Dict[str, Tuple[str, dict]] = {}
  written = []
  try:
    for index, benchmark in enumerate(todo):
      print(f"{benchmark.name}: {benchmark.title}; license: "
            f"{benchmark.license}", file=options.log)
      target = os.path.join(data_dir, benchmark.target)
      _publish(benchmark, target, data_dir, record, downloaded, options)
      written.append(target)
      # Recorded at once: a folder in place but not in the record reads as
      # someone else's to the next fetch.
      _write_record(data_dir, record)
      unchanged = json.dumps(record, sort_keys=True)
      print(f"{benchmark.name}: {target}", file=options.log)
      still_needed = {d.url for b in todo[index + 1:] for d in b.downloads}
      for url in [u for u in downloaded if u not in still_needed]:
        os.remove(downloaded.pop(url)[0])
  except FetchError as error:
    if not error.resumable:
      for path, _ in downloaded.values():
        with contextlib.suppress(OSError):
          os.remove(path)
    raise
  finally:
    if json.dumps(record, sort_keys=True) != unchanged:
      _write_record(data_dir, record)
  return written


def with_source(benchmark: Benchmark, source_urls: Dict[str, str]):
  if benchmark.name in source_urls:
    return benchmark_sources.with_mirror(benchmark,
                                         source_urls[benchmark.name])
  return benchmark


def _usable_data_dir(data_dir: str) -> str:
  if not data_dir:
    raise ValueError("fetch needs --data_dir=DIR, the folder eval's "
                     "--data_dir will name.")
  data_dir = os.path.abspath(data_dir)
  if os.path.exists(data_dir) and not os.path.isdir(data_dir):
    raise FileExistsError(f"--data_dir {data_dir} is a file; expected a "
                          "folder (made if missing).")
  try:
    os.makedirs(data_dir, exist_ok=True)
  except OSError as error:
    raise ValueError(f"cannot make --data_dir {data_dir}: "
                     f"{error.strerror or error}.") from error
  if not os.access(data_dir, os.W_OK | os.X_OK):
    raise ValueError(f"cannot write into --data_dir {data_dir} (permission "
                     "denied); choose another folder.")
  return data_dir


def _publish(benchmark: Benchmark, target: str, data_dir: str, record: dict,
             downloaded: Dict[str, Tuple[str, dict]],
             options: FetchOptions) -> None:
  """Gathers the benchmark's files in a staging folder, then renames it."""
  parent = os.path.dirname(target)
  made_parent = not os.path.isdir(parent)  # e.g. DIR/sts: removed if empty
  os.makedirs(parent, exist_ok=True)
  staging = _staging_path(target, os.getpid())
  with atomic_file.in_progress(staging):
    try:
      os.makedirs(staging)
      files = {}
      for download in benchmark.downloads:
        if download.url not in downloaded:
          downloaded[download.url] = _download_verified(
              download, data_dir, record, options)
        path, files[_record_key(download)] = downloaded[download.url]
        _place(download, path, staging)
      atomic_file.check_before_replace()
      os.rename(staging, target)
    except BaseException:
      shutil.rmtree(staging, ignore_errors=True)
      if made_parent:
        with contextlib.suppress(OSError):
          os.rmdir(parent)  # only if empty
      raise
  record["files"].update(files)
  record["benchmarks"][benchmark.name] = {
      "path": benchmark.target, "title": benchmark.title,
      "license": benchmark.license, "tasks": list(benchmark.tasks),
      "files": files}


def _download_verified(download: Download, data_dir: str, record: dict,
                       options: FetchOptions) -> Tuple[str, dict]:
  """The download's complete file, verified, and its checksum entry."""
  part = os.path.join(data_dir, f"{PART_PREFIX}{download.file_name}.part")
  try:
    _download(download.url, part, options)
  except BaseException as error:
    # Only the bytes of a network error are kept (the next fetch resumes
    # them); a full disk, a stop or a missing file leaves nothing.
    if not (isinstance(error, FetchError) and error.resumable):
      with contextlib.suppress(OSError):
        os.remove(part)
    raise
  digest = _sha256(part)
  key = _record_key(download)
  recorded = record["files"].get(key, {}).get("sha256")
  expected = download.sha256 or recorded
  if expected and digest != expected:
    os.remove(part)
    where = ("pinned in evaluation/benchmark_sources.py" if download.sha256
             else f"recorded in {os.path.join(data_dir, CHECKSUMS_FILE)}")
    raise FetchError(
        f"{download.url}: sha256 {digest} differs from the {expected} "
        f"{where}; the download was removed and nothing was published (a "
        "--source_url mirror must serve the same files).")
  return part, {"url": download.url, "sha256": digest,
                "bytes": os.path.getsize(part),
                "pinned": bool(download.sha256)}


def _download(url: str, part: str, options: FetchOptions) -> None:
  """Downloads `url` into `part`, resuming what `part` holds."""
  for attempt in range(1, options.retries + 1):
    have = os.path.getsize(part) if os.path.exists(part) else 0
    headers = {"User-Agent": "cmlm-fetch"}
    if have:
      headers["Range"] = f"bytes={have}-"
    try:
      with urllib.request.urlopen(urllib.request.Request(url,
                                                         headers=headers),
                                  timeout=options.timeout_s) as response:
        # A 206 that starts elsewhere than asked is taken whole again.
        resumed = (have and response.status == 206 and
                   (response.headers.get("Content-Range") or "").startswith(
                       f"bytes {have}-"))
        if response.status == 206 and not resumed:
          with contextlib.suppress(OSError):
            os.remove(part)
          continue
        length = response.headers.get("Content-Length")
        total = (have if resumed else 0) + int(length) if length else 0
        _copy(response, part, "ab" if resumed else "wb",
              have if resumed else 0, total, url, options)
      return
    except urllib.error.HTTPError as error:
      if error.code == 416 and have:
        return  # the part already holds the whole file
      raise FetchError(f"{url}: HTTP {error.code} {error.reason}; nothing "
                       "was published.") from error
    except (urllib.error.URLError, _ReadError, http.client.HTTPException,
            ConnectionError, TimeoutError) as error:
      # (A write the disk refused is an OSError of another kind: it stops
      # the fetch as a disk error, `cmlm/__main__.py`.)
      reason = getattr(error, "reason", None) or error
      if url.startswith("file:") and isinstance(error, urllib.error.URLError):
        # A missing file, not the network: trying again cannot help.
        raise FetchError(
            f"{url}: {getattr(reason, 'strerror', None) or reason} (a "
            "file:// mirror holds every file of the benchmark under its "
            "source name); nothing was published.") from error
      if attempt == options.retries:
        kept = os.path.getsize(part) if os.path.exists(part) else 0
        resume = (f"{kept} bytes are kept in {part} and the next fetch "
                  "resumes them" if kept else "nothing was downloaded")
        raise FetchError(
            f"{url}: network error ({reason}) after {attempt} tries; "
            f"{resume}; nothing was published.", resumable=True) from error
      time.sleep(options.retry_wait_s)
  raise FetchError(f"{url}: the server answered each resumed request with "
                   "another part of the file; nothing was published.")


def _copy(response, part: str, mode: str, start: int, total: int, url: str,
          options: FetchOptions) -> None:
  bar = _BytesProgress(total, start, enabled=options.show_progress,
                       stream=options.log)
  done = start
  try:
    with open(part, mode) as out:
      while True:
        try:
          chunk = response.read(_CHUNK)
        except (OSError, http.client.HTTPException) as error:
          raise _ReadError(error) from error
        if not chunk:
          break
        out.write(chunk)
        done += len(chunk)
        bar.update(len(chunk))
  finally:
    bar.close()
  if total and done < total:
    raise http.client.IncompleteRead(b"", total - done)


class _BytesProgress(progress_bar.Progress):
  """`[####....] 40% 1.2/3.0 MB | 0.9 MB/s | ETA 0m02s` for a download."""

  def __init__(self, total: int, start: int, **kwargs):
    # A file under a megabyte (each of Tatoeba's 224) draws no bar.
    super().__init__(total, enabled=kwargs["enabled"] and total >= 1 << 20,
                     stream=kwargs["stream"])
    self._done = self._start_bytes = start

  def _line(self) -> str:
    fraction = min(self._done / self._total, 1.0)
    filled = int(round(self._width * fraction))
    elapsed = time.perf_counter() - self._start
    rate = (self._done - self._start_bytes) / elapsed if elapsed > 0 else 0.0
    eta = (self._total - self._done) / rate if rate > 0 else 0.0
    return (f"[{'#' * filled}{'.' * (self._width - filled)}] "
            f"{fraction:4.0%} {self._done / 1e6:.1f}/{self._total / 1e6:.1f}"
            f" MB | {rate / 1e6:.1f} MB/s | ETA {eta // 60:.0f}m"
            f"{eta % 60:02.0f}s")


def _place(download: Download, path: str, staging: str) -> None:
  """Copies the file, or the archive's chosen members, into `staging`."""
  if not download.archive:
    shutil.copyfile(path, os.path.join(staging, download.file_name))
    return
  try:
    if download.archive == "zip":
      with zipfile.ZipFile(path) as archive:
        names = [i.filename for i in archive.infolist() if not i.is_dir()]
        _extract(download, names, archive.open, staging)
    else:
      with tarfile.open(path, "r:gz") as archive:
        members = {m.name: m for m in archive.getmembers() if m.isfile()}
        _extract(download, list(members),
                 lambda name: archive.extractfile(members[name]), staging)
  except (zipfile.BadZipFile, tarfile.TarError, EOFError) as error:
    raise FetchError(f"{download.url}: not a readable {download.archive} "
                     f"archive ({error}); nothing was published.") from error


def _extract(download: Download, names: List[str], open_member,
             staging: str) -> None:
  for member in download.members:
    matches = [n for n in names if fnmatch.fnmatchcase(n, member.pattern)]
    if not matches:
      raise FetchError(f"{download.url} holds no file matching "
                       f"{member.pattern!r}; the release differs from the "
                       "one the registry names. Nothing was published.")
    for name in matches:
      landing = os.path.join(staging, member.landing_name(name))
      with open_member(name) as source, open(landing, "wb") as out:
        shutil.copyfileobj(source, out)


def _record_key(download: Download) -> str:
  """A file's key in checksums.json: its name at the source (unique in the
  registry, and the same at a --source_url mirror)."""
  return download.file_name


def _sha256(path: str) -> str:
  digest = hashlib.sha256()
  with open(path, "rb") as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
      digest.update(chunk)
  return digest.hexdigest()


def _staging_path(target: str, pid: int) -> str:
  parent, name = os.path.split(target)
  return os.path.join(parent, f"{PART_PREFIX}{pid}-{name}")


def _remove_stale_staging(target: str) -> None:
  """Removes the staging folders of `target` that killed fetches left."""
  parent, name = os.path.split(target)
  with contextlib.suppress(OSError):
    for entry in os.listdir(parent):
      pid = entry[len(PART_PREFIX):-len(name) - 1]
      if (entry.startswith(PART_PREFIX) and entry.endswith(f"-{name}")
          and pid.isdigit() and not atomic_file._running(int(pid))):  # pylint: disable=protected-access
        shutil.rmtree(os.path.join(parent, entry), ignore_errors=True)


def _read_record(data_dir: str) -> dict:
  path = os.path.join(data_dir, CHECKSUMS_FILE)
  if not os.path.exists(path):
    return {"files": {}, "benchmarks": {}}
  try:
    with open(path, encoding="utf-8") as f:
      record = json.load(f)
    record.setdefault("files", {})
    record.setdefault("benchmarks", {})
    return record
  except (ValueError, AttributeError) as error:
    raise ValueError(f"{path} is not the JSON record `cmlm fetch` writes "
                     f"({error}); move it away to start a new one.") from error


def _write_record(data_dir: str, record: dict) -> None:
  record["note"] = ("sha256 of each file `cmlm fetch` downloaded: pinned "
                    "ones are the registry's; the others were recorded on "
                    "their first fetch and later fetches are verified "
                    "against them.")
  with atomic_file.atomic_file(os.path.join(data_dir, CHECKSUMS_FILE)) as tmp:
    with open(tmp, "w", encoding="utf-8") as f:
      json.dump(record, f, indent=2, sort_keys=True)
      f.write("\n")
