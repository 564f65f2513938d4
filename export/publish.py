"""Publishing an export as a whole: versioned directories and one pointer.

An export is three SavedModels that belong together (the encoder, the
preprocessor that tokenizes for it, and the text-to-embedding serving
model). Renaming three directories into place one after another lets a
reader load a new encoder with an old preprocessor, or find `encoder/`
briefly absent. So an export directory is laid out as

    EXPORT_DIR/
      versions/<name>/encoder/              one export, written whole into
      versions/<name>/preprocessor/         versions/.tmp-<name>-*/ and then
      versions/<name>/serving/              renamed into place
      current -> versions/<name>            the published one: a symlink,
                                            replaced atomically (os.replace)
      encoder -> current/encoder            the TF-Hub paths readers use:
      preprocessor -> current/preprocessor  symlinks through `current`
      README.md -> current/README.md        the model card, when written
      tflite -> current/tflite              the TFLite and ONNX artifacts,
      onnx -> current/onnx                  when exported (`--formats`)
      serving/<version> -> ../versions/<name>/serving
                                            TF Serving's base path (one
                                            symlink per serving version)

`<name>` is the serving version (the checkpoint's step, or `--version`),
with `.1`, `.2`, ... appended when that version is exported again with
`--overwrite`: a published directory is never written to again. A reader
that resolves `current` once (`resolve`; `encode` and `eval` do) loads the
encoder and the preprocessor of one export; `EXPORT_DIR/encoder` and
`EXPORT_DIR/preprocessor` always exist. Each SavedModel carries
`assets.extra/export_info.json` (the checkpoint's name in the run, its
step, the version's name, a unique id, and the card's model name, license,
language and datasets), the same in the three.
`versions/<name>/checksums.json`, written last, holds the size and SHA-256
of every file of the version; readers check the SavedModel they load
against it (`inference.integrity`).

Versions that neither `current` nor a `serving/<version>` link names any
more are removed by a later export once they have been replaced for
`PRUNE_AFTER_S` seconds (a reader may still be loading one: 10 minutes to
finish). An export holds
`EXPORT_DIR/.cmlm-export.lock` while it runs; at its start it removes what a
killed export left (`.tmp-*` and `.old-*` entries).
"""
import datetime
import json
import os
import shutil
import time
import uuid
from typing import Callable, Dict, List, Optional, Sequence

from cmlm.inference import integrity
from cmlm.inference.layout import ARTIFACT_INFO_FILE
from cmlm.inference.layout import ARTIFACT_PARTS
from cmlm.inference.layout import CARD_FILE
from cmlm.inference.layout import CURRENT
from cmlm.inference.layout import INFO_FILE
from cmlm.inference.layout import PARTS
from cmlm.inference.layout import VERSIONS_DIR
from cmlm.training import atomic
from cmlm.training import run_lock

# The layout's names, `resolve` and `read_info` are the readers'
# (`inference.layout`); this module writes that layout.
LOCK_FILE_NAME = ".cmlm-export.lock"
PRUNE_AFTER_S = 600.0
_LEFTOVER_PREFIXES = (".tmp-", ".old-")


def write_info(version_dir: str, info: Dict) -> None:
  """Writes `info` into every SavedModel of `version_dir`, and beside each
  artifact (before it is published)."""
  paths = [os.path.join(version_dir, part, INFO_FILE) for part in PARTS]
  paths += [os.path.join(version_dir, part, ARTIFACT_INFO_FILE)
            for part in ARTIFACT_PARTS
            if os.path.isdir(os.path.join(version_dir, part))]
  for path in paths:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
      json.dump(info, f, indent=1)


def new_info(checkpoint_path: str, step: int, **card) -> Dict:
  """What `export_info.json` records: the checkpoint by its name in the run
  (`ckpt-N`: no path of the machine that exported it), its step, when, a
  unique id (`publish_export` adds the version's name), and `card`, what
  the model card states (`card_facts.export_info`: name, license, ...)."""
  return dict(checkpoint=os.path.basename(checkpoint_path.rstrip("/")),
              step=step, id=uuid.uuid4().hex,
              exported_at=datetime.datetime.now().isoformat(timespec="seconds"),
              **card)


def remove_leftovers(export_dir: str) -> List[str]:
  """Removes the temporary entries of killed exports; returns their paths.

  Call only while holding the export lock: then no export is writing them.
  """
  removed = []
  for directory in (export_dir, os.path.join(export_dir, VERSIONS_DIR),
                    os.path.join(export_dir, "serving")):
    if not os.path.isdir(directory):
      continue
    for name in os.listdir(directory):
      if name.startswith(_LEFTOVER_PREFIXES):
        path = os.path.join(directory, name)
        if os.path.isdir(path) and not os.path.islink(path):
          shutil.rmtree(path, ignore_errors=True)
        else:
          os.unlink(path)
        removed.append(path)
  return removed


def version_name(export_dir: str, version: int) -> str:
  """`<version>`, or `<version>.<k>` when that name is taken."""
  versions = os.path.join(export_dir, VERSIONS_DIR)
  name, k = str(version), 0
  while os.path.lexists(os.path.join(versions, name)):
    k += 1
    name = f"{version}.{k}"
  return name


def _point(link: str, target: str) -> None:
  """Makes `link` a symlink to `target`, atomically: a new symlink renamed
  over the old one. An older real directory there (the flat layout) is
  moved aside first, then removed. The version the link named before is
  stamped (its directory's mtime) as replaced now, for `prune`."""
  directory, base = os.path.split(link)
  replaced = (os.path.realpath(link) if os.path.islink(link) and
              os.path.exists(link) else None)
  temporary = os.path.join(directory, f".tmp-{base}-{uuid.uuid4().hex[:8]}")
  os.symlink(target, temporary)
  old = None
  if os.path.isdir(link) and not os.path.islink(link):
    old = os.path.join(directory, f".old-{base}-{uuid.uuid4().hex[:8]}")
    os.rename(link, old)
  try:
    os.replace(temporary, link)
  except OSError:
    os.unlink(temporary)
    if old:
      os.rename(old, link)
    raise
  if old:
    shutil.rmtree(old, ignore_errors=True)
  if replaced and os.path.realpath(link) != replaced:
    if os.path.basename(replaced) in PARTS:  # serving/N -> versions/<n>/serving
      replaced = os.path.dirname(replaced)
    os.utime(replaced)


def publish(export_dir: str, name: str, version: int) -> None:
  """Publishes the complete `versions/<name>` as the export's current one
  and as serving version `version`."""
  os.makedirs(os.path.join(export_dir, "serving"), exist_ok=True)
  _point(os.path.join(export_dir, "serving", str(version)),
         os.path.join("..", VERSIONS_DIR, name, "serving"))
  _point(os.path.join(export_dir, CURRENT), os.path.join(VERSIONS_DIR, name))
  version_dir = os.path.join(export_dir, VERSIONS_DIR, name)
  for part in ARTIFACT_PARTS:  # a link to an artifact this version lacks goes
    link = os.path.join(export_dir, part)
    if (not os.path.isdir(os.path.join(version_dir, part)) and
        os.path.islink(link) and
        os.readlink(link) == os.path.join(CURRENT, part)):
      os.unlink(link)
  # README.md: the model card (export.cards.model_card), when the version has one.
  card = os.path.join(version_dir, CARD_FILE)
  for part in ("encoder", "preprocessor") + tuple(
      part for part in ARTIFACT_PARTS
      if os.path.isdir(os.path.join(version_dir, part))) + (
      (CARD_FILE,) if os.path.isfile(card) else ()):
    link = os.path.join(export_dir, part)
    if os.path.islink(link) and os.readlink(link) == os.path.join(CURRENT,
                                                                  part):
      continue
    if part == CARD_FILE and os.path.lexists(link) and not os.path.islink(
        link):
      continue  # a README.md of the user's own is left alone
    _point(link, os.path.join(CURRENT, part))


def prune(export_dir: str, after_s: Optional[float] = None) -> None:
  """Removes the versions no link names any more and none has named for
  `after_s` seconds (default `PRUNE_AFTER_S`)."""
  after_s = PRUNE_AFTER_S if after_s is None else after_s
  versions = os.path.join(export_dir, VERSIONS_DIR)
  referenced = set()
  links = [os.path.join(export_dir, CURRENT)]
  serving = os.path.join(export_dir, "serving")
  if os.path.isdir(serving):
    links += [os.path.join(serving, n) for n in os.listdir(serving)]
  for link in links:
    if os.path.islink(link):
      target = os.path.realpath(link)
      if os.path.dirname(target) != os.path.realpath(versions):
        target = os.path.dirname(target)  # serving/N -> versions/<name>
      referenced.add(os.path.relpath(target, os.path.realpath(export_dir)))
  for name in os.listdir(versions):
    if name.startswith(_LEFTOVER_PREFIXES):
      continue
    path = os.path.join(versions, name)
    if (os.path.join(VERSIONS_DIR, name) not in referenced and
        time.time() - os.stat(path).st_mtime >= after_s):
      shutil.rmtree(path, ignore_errors=True)


def publish_export(export_dir: str, version: int, overwrite: bool,
                   write: Callable[[str], None], info: Dict,
                   targets: Sequence[str] = ()) -> str:
  """Writes an export with `write(directory)` and publishes it whole.

  Holds the export lock throughout; removes a killed export's leftovers;
  refuses existing `targets` unless `overwrite`; `write` fills a temporary
  `versions/.tmp-*` directory with `encoder/`, `preprocessor/` and
  `serving/`, which is renamed to `versions/<name>` and published (see the
  module docstring). Returns `versions/<name>`'s path.
  """
  with run_lock.hold(export_dir, name=LOCK_FILE_NAME, what="export",
                     flag="--export_dir"):
    for path in remove_leftovers(export_dir):
      print(f"Removed {path}, left by an interrupted export.", flush=True)
    atomic.check_writable(targets, overwrite)
    name = version_name(export_dir, version)
    version_dir = os.path.join(export_dir, VERSIONS_DIR, name)
    with atomic.atomic_directory(version_dir) as temporary:
      write(temporary)
      write_info(temporary, dict(info, version_name=name))
      # Last: every file's size and SHA-256, checked by readers before they
      # load a SavedModel (inference.integrity).
      integrity.write_checksums(temporary)
    publish(export_dir, name, version)
    prune(export_dir)
  return version_dir
