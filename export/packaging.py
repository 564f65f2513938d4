"""An export packed for TF-Hub and Kaggle Models: `export --package_dir=P`.

    package_export(export_dir, package_dir, overwrite=False) -> [paths]

reads the export's published version once (`publish.resolve`: `current`'s
target, a version that is never written to again, so the archives are of one
export even while another export runs) and writes

    P/encoder.tar.gz        each SavedModel as tfhub.dev and Kaggle Models
    P/preprocessor.tar.gz   take one: `saved_model.pb`, `variables/`,
    P/serving.tar.gz        `assets/`... at the archive's root
    P/README.md             the model card (`export.model_card`)
    P/model-metadata.json           Kaggle's metadata for `kaggle models
    P/model-instance-metadata.json  create` / `kaggle models instances
                                    create` (fill in the INSERT_..._HERE
                                    slugs, as `kaggle models init` leaves them)

Archive entries are sorted and owned by root.
`P` appears whole or not at all (`training.atomic`).
"""
import json
import os
import tarfile
from typing import List

from export import model_card
from export import publish
from training import atomic

PARTS = publish.PARTS
KAGGLE_FRAMEWORK = "tensorFlow2"


def _reset_owner(info: tarfile.TarInfo) -> tarfile.TarInfo:
  info.uid = info.gid = 0
  info.uname = info.gname = "root"
  return info


def pack_saved_model(saved_model_dir: str, archive: str) -> None:
  """`saved_model_dir`'s files into `archive` (.tar.gz), at its root."""
  with tarfile.open(archive, "w:gz") as tar:
    for folder, dirs, files in os.walk(saved_model_dir, followlinks=True):
      dirs.sort()
      for name in sorted(files):
        path = os.path.join(folder, name)
        tar.add(path, arcname=os.path.relpath(path, saved_model_dir),
                recursive=False, filter=_reset_owner)


def package_export(export_dir: str, package_dir: str,
                   overwrite: bool = False) -> List[str]:
  """Packs `export_dir`'s published export into `package_dir`; returns the
  paths written (see the module docstring)."""
  if not package_dir:
    raise ValueError("--package_dir must name the directory to write the "
                     ".tar.gz archives into.")
  version_dir = publish.resolve(export_dir)
  missing = [part for part in PARTS if not os.path.isfile(
      os.path.join(version_dir, part, "saved_model.pb"))]
  if missing:
    raise FileNotFoundError(f"{export_dir} has no {', '.join(missing)} "
                            "SavedModel to pack; export it first.")
  atomic.check_writable([package_dir], overwrite)
  card = os.path.join(version_dir, model_card.CARD_FILE)
  card_text = ""
  if os.path.isfile(card):
    with open(card, encoding="utf-8") as f:
      card_text = f.read()
  info = publish.read_info(os.path.join(version_dir, "encoder")) or {}
  names = [f"{part}.tar.gz" for part in PARTS] + [
      model_card.CARD_FILE, "model-metadata.json",
      "model-instance-metadata.json"]
  with atomic.atomic_directory(package_dir, overwrite) as temporary:
    for part in PARTS:
      pack_saved_model(os.path.join(version_dir, part),
                       os.path.join(temporary, f"{part}.tar.gz"))
    with open(os.path.join(temporary, model_card.CARD_FILE), "w",
              encoding="utf-8") as f:
      f.write(card_text)
    title = (card_text.splitlines() or ["# CMLM sentence encoder"])[0]
    _write_json(os.path.join(temporary, "model-metadata.json"), {
        "ownerSlug": "INSERT_OWNER_SLUG_HERE",
        "title": title.lstrip("# ").replace("`", "")[:50],
        "slug": "INSERT_SLUG_HERE", "subtitle": "", "isPrivate": True,
        "description": card_text, "publishTime": "",
        "provenanceSources": ""})
    _write_json(os.path.join(temporary, "model-instance-metadata.json"), {
        "ownerSlug": "INSERT_OWNER_SLUG_HERE",
        "modelSlug": "INSERT_EXISTING_MODEL_SLUG_HERE",
        "instanceSlug": "INSERT_INSTANCE_SLUG_HERE",
        "framework": KAGGLE_FRAMEWORK, "overview": title.lstrip("# "),
        "usage": card_text, "fineTunable": True, "trainingData": [],
        "modelInstanceType": "Unspecified",
        "versionNotes": (f"step {info.get('step')}, version "
                         f"{info.get('version_name')}" if info else "")})
  return [os.path.join(package_dir, name) for name in names]


def _write_json(path: str, value) -> None:
  with open(path, "w", encoding="utf-8") as f:
    json.dump(value, f, indent=2, ensure_ascii=False)
    f.write("\n")
