"""What a model card says about a run, gathered and checked: `CardFacts`.

    options = check_options(CardOptions(model_name="cmlm-en-base",
                                        license="apache-2.0"))
    run = inference.run_record.read_run(model_dir)  # the run, read once
    facts = card_facts(run, version, embedding_dim, normalize,
                       options=options)

The user's statements (`CardOptions`: `--model_name`, `--dataset_name`,
`--license`, `--language`) are checked in one line each before any work;
the rest comes from the run as `inference.run_record` read it once: its
config, an import's `import_info.json` (origin, license, citation), the
`cmlm eval` report. This module reads no file of the run. Nothing here keeps a
path of this machine: the checkpoint and the vocabulary go by their names
relative to the run, training data by `--dataset_name` or by file name.
`export.model_card` renders the facts; `export.publish` records them in
`export_info.json`.
"""
import dataclasses
import os
import re
from typing import Dict, List, Optional, Tuple

from cmlm.inference.layout import CARD_FILE  # noqa: F401  (export's name)

PAPER = ("Yang et al. 2021, *Universal Sentence Representation Learning with "
         "Conditional Masked Language Model* (CMLM)")
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
_MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}"
                         r"(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?$")
_LANGUAGE = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$")
_MACHINE_PATH = re.compile(r"^(/|~|\.\.?/|[A-Za-z]:[\\/])|\\")
OBJECTIVE_WORDS = {"cmlm": "Conditional Masked Language Modeling",
                    "bitext_retrieval": "bitext retrieval (section 4.2)",
                    "nli": "cross-lingual NLI (section 4.3)"}


@dataclasses.dataclass(frozen=True)
class CardOptions:
  """What the user states about the model: export's `--model_name`,
  `--dataset_name` (each `NAME`, or `OBJECTIVE=NAME` for one objective),
  `--license` (an SPDX id) and `--language` (ISO 639 codes)."""
  model_name: str = ""
  dataset_names: Tuple[str, ...] = ()
  license: str = ""
  languages: Tuple[str, ...] = ()


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


def check_options(options: CardOptions) -> CardOptions:
  """`options` checked (one ValueError line per bad value) and normalised:
  license as the Hub's id, languages lower-cased and split at commas."""
  name = options.model_name.strip()
  if name and not _MODEL_NAME.match(name):
    raise ValueError(f"--model_name={options.model_name!r} must be a hub "
                     "model name: letters, digits, '.', '_' and '-', with "
                     "at most one 'owner/' in front (e.g. cmlm-en-base).")
  datasets = []
  for value in options.dataset_names:
    dataset = value.strip().partition("=")[2] if "=" in value else value
    if not dataset.strip() or _MACHINE_PATH.search(dataset.strip()):
      raise ValueError(f"--dataset_name={value!r} must name a dataset (e.g. "
                       "wikipedia, or cmlm=wikipedia for one objective), "
                       "not a path on this machine.")
    datasets.append(value.strip())
  languages = []
  for value in options.languages:
    for code in value.split(","):
      code = code.strip().lower()
      if code != "multilingual" and not _LANGUAGE.match(code):
        raise ValueError(f"--language={value!r} must be ISO 639 language "
                         "codes separated by commas (e.g. en, or en,de,fr), "
                         "or 'multilingual'.")
      languages.append(code)
  return CardOptions(name, tuple(datasets),
                     license_id(options.license) if options.license else "",
                     tuple(languages))


def default_license(run, options: CardOptions) -> str:
  """`--license`, else the license an import recorded from its source
  (`run.origin`, an `inference.run_record.RunRecord`), else "unknown". A run
  trained further from an import does not inherit its license: its
  weights' terms depend on its own training data too."""
  if options.license:
    return options.license
  origin = run.origin
  if origin and origin.get("imported_here") and origin.get("license"):
    try:
      return license_id(str(origin["license"]))
    except ValueError:
      pass
  return UNKNOWN_LICENSE


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


@dataclasses.dataclass
class CardFacts:
  """What the card says, gathered by `card_facts` from the run."""
  title: str
  model_name: str
  checkpoint: str  # relative to the run: ckpt-N
  step: int
  version: int
  params: object  # the run's cfg.ExperimentConfig
  embedding_dim: int
  normalize: bool
  license: str = UNKNOWN_LICENSE
  languages: List[str] = dataclasses.field(default_factory=list)
  languages_stated: bool = False  # by --language or the source, not guessed
  # Training data by objective (by "source" for an import), and the names
  # stated by --dataset_name or the source's card (for the front matter).
  datasets: Dict[str, List[str]] = dataclasses.field(default_factory=dict)
  stated_datasets: List[str] = dataclasses.field(default_factory=list)
  vocabulary: str = ""
  origin: Optional[dict] = None  # the RunRecord's
  has_pcr: bool = False
  has_mlm: bool = False
  eval_report: Optional[dict] = None
  eval_report_name: str = ""

  @property
  def imported(self) -> bool:
    """The run is an import at step 0, not trained by the garden."""
    return bool(self.origin and self.origin.get("imported_here"))


def _datasets(params, options: CardOptions, origin: Optional[dict],
              model_dir: str) -> Tuple[Dict[str, List[str]], List[str]]:
  objectives = params.task.active_objectives()
  general, named = [], {}
  for value in options.dataset_names:
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


def _guess_languages(params) -> List[str]:
  """"multilingual" for a run with bitext retrieval or a vocabulary mostly
  outside ASCII; "en" for a mostly-ASCII (English WordPiece) vocabulary."""
  for objective in params.task.active_objectives().values():
    if objective.type == "bitext_retrieval" and objective.weight > 0:
      return ["multilingual"]
  try:
    with open(params.task.tokenization.vocab_file, encoding="utf-8") as f:
      tokens = [t.strip() for t in f if not t.startswith("[")]
  except (OSError, UnicodeDecodeError):
    return []
  ascii_share = sum(t.isascii() for t in tokens) / max(1, len(tokens))
  return ["en"] if ascii_share >= 0.8 else ["multilingual"]


def card_facts(run, version: int, embedding_dim: int, normalize: bool,
               has_pcr: bool = False, has_mlm: bool = False,
               title: Optional[str] = None,
               options: Optional[CardOptions] = None) -> CardFacts:
  """A card's facts from `run` (an `inference.run_record.RunRecord`: its
  params, checkpoint, origin and evaluation report, read once); `options`
  as `check_options`.

  Examples:
    >>> run = inference.run_record.read_run("runs/tiny")
    >>> facts = card_facts(run, version=run.step, embedding_dim=384,
    ...                    normalize=True)
    >>> facts.checkpoint, facts.license
    ('ckpt-20', 'unknown')
  """
  options = check_options(options or CardOptions())
  model_dir, params, origin = run.model_dir, run.params, run.origin
  datasets, stated = _datasets(params, options, origin, model_dir)
  languages, languages_stated = list(options.languages), True
  if not languages and origin and origin.get("imported_here"):
    languages = origin.get("language") or []
    languages = [languages] if isinstance(languages, str) else list(languages)
  if not languages:
    languages, languages_stated = _guess_languages(params), False
  name = (options.model_name or
          os.path.basename(os.path.abspath(model_dir)))
  return CardFacts(
      title=title or options.model_name or (
          f"Sentence encoder `{name}`" if origin and origin.get(
              "imported_here") else f"CMLM sentence encoder `{name}`"),
      model_name=name, checkpoint=name_in_run(run.checkpoint_path, model_dir),
      step=run.step, version=version, params=params,
      embedding_dim=embedding_dim, normalize=normalize,
      license=default_license(run, options),
      languages=languages, languages_stated=languages_stated,
      datasets=datasets, stated_datasets=stated,
      vocabulary=name_in_run(params.task.tokenization.vocab_file, model_dir),
      origin=origin, has_pcr=has_pcr, has_mlm=has_mlm,
      eval_report=run.eval_report,
      eval_report_name=(name_in_run(run.eval_report_path, model_dir)
                        if run.eval_report_path else ""))


def export_info(facts: CardFacts) -> dict:
  """What `export_info.json` records of the card (no path of this machine)."""
  return dict(model_name=facts.model_name, license=facts.license,
              language=facts.languages,
              datasets=sorted({n for names in facts.datasets.values()
                               for n in names}),
              origin=(facts.origin or {}).get("source_name", ""),
              origin_url=(facts.origin or {}).get("url", ""))
