"""What `soak_faults.py` runs in: the disk that fills and empties, and the
benchmark mirror its `fetch` downloads from.

`Disk`: the work directory as a 256 MB tmpfs that a thread fills to the
last byte now and then and empties a few seconds later (where this process
may mount one: root on Linux).

`write_mirror` and `MirrorServer`: release files in the layout of two
benchmarks (TREC's two label files, STS-B's tar.gz), served from 127.0.0.1
slowly enough that a kill lands inside a download, with HTTP Range
requests honoured (a killed fetch's `.part` is resumed).

Standard library only: the soak's own process loads no TensorFlow.
"""
import contextlib
import http.server
import io
import os
import random
import subprocess
import tarfile
import threading
import time
from typing import Dict, List

# Served at this many bytes a second: a file of ~1 MB takes about a second.
BYTES_PER_SECOND = 1 << 20
_CHUNK = 1 << 14
BENCHMARKS = ("trec", "sts-b")


class Disk:
  """The work directory: a tmpfs a thread fills and empties, when one can
  be mounted here."""

  def __init__(self, path: str, rng: random.Random, faults: bool):
    self.path, self._rng = path, rng
    self.mounted = faults and os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256m", "tmpfs", path],
        capture_output=True).returncode == 0
    self.fills = 0
    self._stop = threading.Event()
    self._thread = None

  def start(self):
    if self.mounted:
      self._thread = threading.Thread(target=self._fill_and_empty,
                                      daemon=True)
      self._thread.start()

  def _fill_and_empty(self):
    filler = os.path.join(self.path, "filler")
    while not self._stop.wait(self._rng.uniform(5, 25)):
      with open(filler, "wb", buffering=0) as f:
        with contextlib.suppress(OSError):
          while True:
            f.write(b"\0" * (1 << 20))
      self.fills += 1
      self._stop.wait(self._rng.uniform(1, 6))
      os.remove(filler)

  def stop(self):
    self._stop.set()
    if self._thread:
      self._thread.join()
    with contextlib.suppress(FileNotFoundError):
      os.remove(os.path.join(self.path, "filler"))

  def unmount(self):
    if self.mounted:
      subprocess.run(["umount", "-l", self.path], check=False)


def write_mirror(folder: str, sentences: List[str]) -> Dict[str, str]:
  """Writes each benchmark's files under FOLDER/NAME/ (their names at the
  source); returns {benchmark: its folder}."""
  trec = "".join(f"DESC:manner {s} ?\n" for s in sentences)
  sts_b = {f"stsbenchmark/sts-{split}.csv": "".join(
      f"main-news\tsoak\t2024\t{i:04d}\t{i % 6}.0\t{a}\t{b}\n"
      for i, (a, b) in enumerate(zip(sentences[offset::2],
                                     sentences[offset + 1::2])))
           for offset, split in enumerate(("train", "dev", "test"))}
  files = {
      "trec": {"train_5500.label": (trec * 40).encode(),
               "TREC_10.label": (trec * 4).encode()},
      "sts-b": {"Stsbenchmark.tar.gz": _tar_gz(sts_b)}}
  folders = {}
  for name, by_name in files.items():
    folders[name] = os.path.join(folder, name)
    os.makedirs(folders[name], exist_ok=True)
    for file_name, data in by_name.items():
      with open(os.path.join(folders[name], file_name), "wb") as f:
        f.write(data)
  return folders


def _tar_gz(files: Dict[str, str]) -> bytes:
  data = io.BytesIO()
  with tarfile.open(fileobj=data, mode="w:gz") as archive:
    for name, text in files.items():
      info = tarfile.TarInfo(name)
      info.size = len(text.encode())
      archive.addfile(info, io.BytesIO(text.encode()))
  return data.getvalue()


class _Handler(http.server.BaseHTTPRequestHandler):
  """Serves the mirror folder, throttled, honouring `Range: bytes=N-`."""

  def do_GET(self):  # pylint: disable=invalid-name
    path = os.path.join(self.server.folder, self.path.lstrip("/"))
    if ".." in self.path or not os.path.isfile(path):
      self.send_error(404)
      return
    with open(path, "rb") as f:
      data = f.read()
    start = 0
    if self.headers.get("Range"):
      start = int(self.headers["Range"].split("=")[1].split("-")[0])
      if start >= len(data):
        self.send_error(416)
        return
    self.send_response(206 if start else 200)
    if start:
      self.send_header("Content-Range",
                       f"bytes {start}-{len(data) - 1}/{len(data)}")
    self.send_header("Content-Length", str(len(data) - start))
    self.end_headers()
    try:
      for offset in range(start, len(data), _CHUNK):
        self.wfile.write(data[offset:offset + _CHUNK])
        time.sleep(_CHUNK / BYTES_PER_SECOND)
    except (BrokenPipeError, ConnectionResetError):
      pass  # the fetch was killed

  def log_message(self, *args):
    pass


class MirrorServer:
  """`with MirrorServer(folder) as server:` serves `folder` on 127.0.0.1;
  `server.url(benchmark)` is --source_url's URL of a benchmark."""

  def __init__(self, folder: str):
    self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    self._server.daemon_threads = True
    self._server.folder = folder
    self._thread = threading.Thread(target=self._server.serve_forever,
                                    daemon=True)

  def __enter__(self):
    self._thread.start()
    return self

  def url(self, benchmark: str) -> str:
    host, port = self._server.server_address
    return f"http://{host}:{port}/{benchmark}"

  def __exit__(self, *exc_info):
    self._server.shutdown()
    self._server.server_close()
    self._thread.join(timeout=10)
