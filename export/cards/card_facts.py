"""What a model card says about a run, gathered and checked: `CardFacts`.

    options = check_options(CardOptions(model_name="cmlm-en-base",
                                        license="apache-2.0"))
    run = inference.run_record.read_run(model_dir)  # the run, read once
    facts = card_facts(run, version, embedding_dim, normalize,
                       options=options)

The user's statements (`CardOptions`: `--model_name`, `--dataset_name`,
`--license`, `--language`) are checked in one line each before any work;
the rest comes from the run as `inference.run_record` read it once: its
config, vocabulary, an import's `import_info.json` (origin, license,
citation), the `cmlm eval` report, and what the run says of itself
(`inference.run_facts`: license, languages, training data). This module
reads no file of the run. Nothing here keeps a local path: the
checkpoint and the vocabulary go by their names relative to the run,
training data by `--dataset_name` or by file name.
`export.cards.model_card` renders the facts; `export.publish` records them in
`export_info.json`.
"""
import dataclasses
import re
from typing import Dict, List, Optional, Tuple

from cmlm.inference import run_facts

PAPER = ("Yang et al. 2021, *Universal Sentence Representation Learning with "
         "Conditional Masked Language Model* (CMLM)")
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
                       "not a local path.")
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
                     run_facts.license_id(options.license)
                     if options.license else "",
                     tuple(languages))


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
  license: str = run_facts.UNKNOWN_LICENSE
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
  name_in_run = run_facts.name_in_run
  datasets, stated = run_facts.training_data(run, options.dataset_names)
  languages, languages_stated = run_facts.languages(run, options.languages)
  name = options.model_name or run_facts.run_name(run)
  return CardFacts(
      title=title or options.model_name or (
          f"Sentence encoder `{name}`" if origin and origin.get(
              "imported_here") else f"CMLM sentence encoder `{name}`"),
      model_name=name, checkpoint=name_in_run(run.checkpoint_path, model_dir),
      step=run.step, version=version, params=params,
      embedding_dim=embedding_dim, normalize=normalize,
      license=run_facts.default_license(run, options.license),
      languages=languages, languages_stated=languages_stated,
      datasets=datasets, stated_datasets=stated,
      vocabulary=name_in_run(params.task.tokenization.vocab_file, model_dir),
      origin=origin, has_pcr=has_pcr, has_mlm=has_mlm,
      eval_report=run.eval_report,
      eval_report_name=(name_in_run(run.eval_report_path, model_dir)
                        if run.eval_report_path else ""))


def export_info(facts: CardFacts) -> dict:
  """What `export_info.json` records of the card (no local path)."""
  return dict(model_name=facts.model_name, license=facts.license,
              language=facts.languages,
              datasets=sorted({n for names in facts.datasets.values()
                               for n in names}),
              origin=(facts.origin or {}).get("source_name", ""),
              origin_url=(facts.origin or {}).get("url", ""))
