"""An export packed for TF-Hub and Kaggle Models: `export --package_dir=P`.

    package_export(export_dir, package_dir, overwrite=False) -> [paths]

reads the export's published version once (`layout.resolve`: `current`'s
target, a version that is never written to again, so the archives are of one
export even while another export runs) and writes

    P/encoder.tar.gz        each SavedModel as tfhub.dev and Kaggle Models
    P/preprocessor.tar.gz   take one: `saved_model.pb`, `variables/`,
    P/serving.tar.gz        `assets/`... at the archive's root
    P/README.md             the model card (`export.cards.model_card`)
    P/model-metadata.json           Kaggle's metadata for `kaggle models
    P/model-instance-metadata.json  create` / `kaggle models instances
                                    create`: every field the kaggle client
                                    reads, the license in Kaggle's words,
                                    slugs from the model's name; only
                                    `ownerSlug` is left to fill in
                                    (INSERT_OWNER_SLUG_HERE, as `kaggle
                                    models init` leaves it)

An export whose card states no license (`--license`) is refused: Kaggle
Models takes none without one. Nothing written names a local path
(`export_info.json` and the card name the checkpoint relative to the run).
Archive entries are sorted and owned by root.
`P` appears whole or not at all (`training.atomic`).
"""
import json
import os
import re
import tarfile
from typing import List

from cmlm.export.cards import model_card
from cmlm.inference import layout
from cmlm.inference import run_facts
from cmlm.training import atomic

PARTS = layout.PARTS
KAGGLE_FRAMEWORK = "tensorFlow2"
OWNER_PLACEHOLDER = "INSERT_OWNER_SLUG_HERE"  # the Kaggle user or organization
INSTANCE_SLUG = "default"  # the variation: one per model


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


def check_license(license_id: str, export_dir: str = "") -> str:
  """Kaggle's name for `license_id` (`run_facts.LICENSES`); a ValueError
  of one line when there is none (an export without a license)."""
  name = run_facts.LICENSES.get(license_id or "")
  if name is None:
    raise ValueError(
        f"{export_dir or 'The export'} states no license for its weights "
        f"({license_id or 'none recorded'}), and Kaggle Models takes no model "
        "without one: export with --license=SPDX_ID (one of "
        f"{', '.join(run_facts.LICENSES)}) to pack it.")
  return name


def slug(name: str) -> str:
  """A Kaggle slug of a model name: `owner/My_Model.v2` -> `my-model-v2`."""
  return re.sub(r"[^a-z0-9]+", "-", name.split("/")[-1].lower()).strip(
      "-")[:50]


def package_export(export_dir: str, package_dir: str,
                   overwrite: bool = False) -> List[str]:
  """Packs `export_dir`'s published export into `package_dir`; returns the
  paths written (see the module docstring)."""
  if not package_dir:
    raise ValueError("--package_dir must name the directory to write the "
                     ".tar.gz archives into.")
  version_dir = layout.resolve(export_dir)
  missing = [part for part in PARTS if not os.path.isfile(
      os.path.join(version_dir, part, "saved_model.pb"))]
  if missing:
    raise FileNotFoundError(f"{export_dir} has no {', '.join(missing)} "
                            "SavedModel to pack; export it first.")
  info = layout.read_info(os.path.join(version_dir, "encoder")) or {}
  license_name = check_license(info.get("license", ""), export_dir)
  atomic.check_writable([package_dir], overwrite)
  card = os.path.join(version_dir, layout.CARD_FILE)
  card_text = ""
  if os.path.isfile(card):
    with open(card, encoding="utf-8") as f:
      card_text = f.read()
  body = model_card.body(card_text)
  title = next((line[2:] for line in body.splitlines()
                if line.startswith("# ")), "CMLM sentence encoder")
  title = title.replace("`", "")[:50]
  model_slug = slug(info.get("model_name", "")) or slug(title)
  names = [f"{part}.tar.gz" for part in PARTS] + [
      layout.CARD_FILE, "model-metadata.json",
      "model-instance-metadata.json"]
  with atomic.atomic_directory(package_dir, overwrite) as temporary:
    for part in PARTS:
      pack_saved_model(os.path.join(version_dir, part),
                       os.path.join(temporary, f"{part}.tar.gz"))
    with open(os.path.join(temporary, layout.CARD_FILE), "w",
              encoding="utf-8") as f:
      f.write(card_text)
    origin_url = info.get("origin_url", "")
    _write_json(os.path.join(temporary, "model-metadata.json"), {
        "ownerSlug": OWNER_PLACEHOLDER, "title": title, "slug": model_slug,
        "subtitle": "A sentence encoder: text to embeddings (TF SavedModel)",
        "isPrivate": True, "description": body, "publishTime": "",
        "provenanceSources": origin_url})
    _write_json(os.path.join(temporary, "model-instance-metadata.json"), {
        "ownerSlug": OWNER_PLACEHOLDER, "modelSlug": model_slug,
        "instanceSlug": INSTANCE_SLUG, "framework": KAGGLE_FRAMEWORK,
        "overview": _overview(body) or title, "usage": body,
        "licenseName": license_name, "fineTunable": True,
        "trainingData": list(info.get("datasets", [])),
        "modelInstanceType": ("ExternalVariant" if origin_url
                              else "Unspecified"),
        "baseModelInstance": "", "externalBaseModelUrl": origin_url,
        "versionNotes": (f"{info.get('checkpoint')} (step "
                         f"{info.get('step')}), version "
                         f"{info.get('version_name')}" if info else "")})
  return [os.path.join(package_dir, name) for name in names]


def _overview(body: str) -> str:
  """The first paragraph of the card's Overview section."""
  _, found, rest = body.partition("\n## Overview\n")
  return rest.strip().split("\n\n", 1)[0] if found else ""


def _write_json(path: str, value) -> None:
  with open(path, "w", encoding="utf-8") as f:
    json.dump(value, f, indent=2, ensure_ascii=False)
    f.write("\n")
