"""What a training run says of itself, read from its record: the facts a
model card and an MTEB model's metadata share.

    run = run_record.read_run("runs/tiny")
    default_license(run)             # an import's license, else "unknown"
    languages(run)                   # (["en"], False): guessed, not stated
    training_data(run)               # ({"cmlm": ["corpus_en"]}, [])
    name_in_run(run.checkpoint_path, run.model_dir)   # "ckpt-20"

Everything comes from a `run_record.RunRecord` (its config, vocabulary
and `import_info.json` as read once); nothing here reads a file, and
nothing keeps a local path: files go by their names relative to
the run, or by base name. `export.cards.card_facts` adds what the user
states; `cmlm.mteb_model` reads the same facts for MTEB.
"""
import os
import re
from typing import Dict, List, Sequence, Tuple

UNKNOWN_LICENSE = "unknown"
# The licenses Kaggle Models takes (kaggle-api docs/models_metadata.md,
# "Licenses"), by the Hugging Face Hub's id for each (SPDX, lower-cased).
LICENSES = {
    "apache-2.0": "Apache 2.0", "mit": "MIT", "bsd-3-clause": "BSD-3-Clause",
    "cc0-1.0": "CC0: Public Domain",
    "cc-by-3.0": "Attribution 3.0 Unported (CC BY 3.0)",
    "cc-by-4.0": "Attribution 4.0 International (CC BY 4.0)",
    "cc-by-sa-3.0": "CC BY-SA 3.0", "cc-by-sa-4.0": "CC BY-SA 4.0",
    "cc-by-nc-4.0": "Attribution-NonCommercial 4.0 International "
                    "(CC BY-NC 4.0)",
    "cc-by-nd-4.0": "Attribution-NoDerivatives 4.0 International "
                    "(CC BY-ND 4.0)",
    "cc-by-nc-nd-4.0": "Attribution-NonCommercial-NoDerivatives 4.0 "
                       "International (CC BY-NC-ND 4.0)",
    "cc-by-nc-sa-4.0": "CC BY-NC-SA 4.0", "gpl-2.0": "GPL 2",
    "gpl-3.0": "GPL 3", "lgpl-3.0": "GNU Lesser General Public License 3.0",
    "agpl-3.0": "GNU Affero General Public License 3.0",
    "gfdl": "GNU Free Documentation License 1.3",
    "odc-by": "ODC Attribution License (ODC-By)",
    "pddl": "ODC Public Domain Dedication and Licence (PDDL)",
    "cdla-permissive-1.0": "Community Data License Agreement - Permissive - "
                           "Version 1.0",
    "cdla-sharing-1.0": "Community Data License Agreement - Sharing - "
                        "Version 1.0",
}
_LICENSE_ALIASES = {"gpl-2.0-only": "gpl-2.0", "gpl-3.0-only": "gpl-3.0",
                    "lgpl-3.0-only": "lgpl-3.0", "agpl-3.0-only": "agpl-3.0",
                    "gfdl-1.3": "gfdl", "gfdl-1.3-only": "gfdl",
                    "odc-by-1.0": "odc-by", "pddl-1.0": "pddl"}


def license_id(value: str, flag: str = "--license") -> str:
  """`value` (an SPDX id, any case) as the Hub's id, or "unknown"; a
  ValueError of one line for any other."""
  key = value.strip().lower()
  key = _LICENSE_ALIASES.get(key, key)
  if key not in LICENSES and key != UNKNOWN_LICENSE:
    raise ValueError(f"{flag}={value!r} is not a license a hub takes: give "
                     f"an SPDX id among {', '.join(LICENSES)} (or "
                     f"{UNKNOWN_LICENSE!r} to leave it unstated).")
  return key


def default_license(run, stated: str = "") -> str:
  """`stated` (export's `--license`, checked), else the license an import
  recorded from its source (`run.origin`, a `run_record.RunRecord`), else
  "unknown". A run trained further from an import does not inherit its
  license: its weights' terms depend on its own training data too."""
  if stated:
    return stated
  origin = run.origin
  if origin and origin.get("imported_here") and origin.get("license"):
    try:
      return license_id(str(origin["license"]))
    except ValueError:
      pass
  return UNKNOWN_LICENSE


def run_name(run) -> str:
  """The run's name: its directory's."""
  return os.path.basename(os.path.abspath(run.model_dir))


def name_in_run(path: str, model_dir: str) -> str:
  """`path` as the card names it: relative to the run when inside it, else
  its base name (with its folder's name for a glob pattern)."""
  path = path.rstrip("/")
  if "://" not in path:
    run = os.path.abspath(model_dir)
    full = os.path.abspath(path)
    if full.startswith(run + os.sep):
      return os.path.relpath(full, run)
  name = os.path.basename(path)
  if any(c in name for c in "*?["):
    name = f"{os.path.basename(os.path.dirname(path))}/{name}"
  return name or path


def data_name(input_path: str, model_dir: str) -> str:
  """An objective's `input_path` by file names: `a/x.txt,b/y.txt` ->
  `x.txt, y.txt`; `lang=file` prefixes and `source|target` pairs kept."""
  names = []
  for item in filter(None, (i.strip() for i in input_path.split(","))):
    prefix = re.match(r"^[A-Za-z_-]{2,12}=", item)
    files = item[prefix.end():] if prefix else item
    names.append((prefix.group(0) if prefix else "") + "|".join(
        name_in_run(f, model_dir) for f in files.split("|")))
  return ", ".join(names)


def training_data(run, dataset_names: Sequence[str] = ()
                  ) -> Tuple[Dict[str, List[str]], List[str]]:
  """The run's training data by objective ("source" for an import) and the
  names stated for it: export's `--dataset_name` values (`NAME`, or
  `OBJECTIVE=NAME`), else an import's recorded names, else each
  objective's data by file name (`data_name`)."""
  params, origin, model_dir = run.params, run.origin, run.model_dir
  objectives = params.task.active_objectives()
  general, named = [], {}
  for value in dataset_names:
    objective, _, name = value.partition("=")
    if name and objective in objectives:
      named.setdefault(objective, []).append(name.strip())
    elif name and re.fullmatch(r"[a-z][a-z0-9_]*", objective):
      raise ValueError(f"--dataset_name={value!r} names the objective "
                       f"{objective!r}, which the run does not train (it "
                       f"trains {', '.join(objectives)}).")
    else:
      general.append(value)
  stated = general + [n for names in named.values() for n in names]
  if origin and origin.get("imported_here"):
    names = stated or list(origin.get("datasets") or [])
    return {"source": names}, names
  datasets = {}
  for name, objective in objectives.items():
    data = getattr(objective, "train_data", None)
    found = data_name(getattr(data, "input_path", "") or "", model_dir) or (
        getattr(data, "tfds_name", "") or "")
    datasets[name] = named.get(name) or general or [found or "(not recorded)"]
  return datasets, stated


def guess_languages(params, vocabulary_tokens: Sequence[str]) -> List[str]:
  """"multilingual" for a run with bitext retrieval or a vocabulary mostly
  outside ASCII; "en" for a mostly-ASCII (English WordPiece) vocabulary
  (`vocabulary_tokens`: the run's, as read)."""
  for objective in params.task.active_objectives().values():
    if objective.type == "bitext_retrieval" and objective.weight > 0:
      return ["multilingual"]
  tokens = [t.strip() for t in vocabulary_tokens if not t.startswith("[")]
  ascii_share = sum(t.isascii() for t in tokens) / max(1, len(tokens))
  return ["en"] if ascii_share >= 0.8 else ["multilingual"]


def languages(run, stated: Sequence[str] = ()) -> Tuple[List[str], bool]:
  """The run's languages (ISO 639 codes) and whether they were stated:
  `stated` (export's `--language`), else an import's recorded language,
  else `guess_languages` (not stated)."""
  found = list(stated)
  origin = run.origin
  if not found and origin and origin.get("imported_here"):
    found = origin.get("language") or []
    found = [found] if isinstance(found, str) else list(found)
  if found:
    return found, True
  return guess_languages(run.params, run.vocabulary.tokens), False
