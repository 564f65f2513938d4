"""Pretrained BERT weights to a run directory (`python -m cmlm import`).

    python -m cmlm import --source=all-MiniLM-L6-v2/ --model_dir=runs/minilm
    python -m cmlm export --model_dir=runs/minilm --export_dir=exports/minilm
    python -m cmlm train --experiment=cmlm/en_base \
        --config_file=runs/minilm/params.yaml --model_dir=runs/cmlm_minilm \
        --params_override=task.init_checkpoint=runs/minilm,...

`--source` is a Hugging Face BERT directory (`config.json` + weights +
`vocab.txt`, sentence-transformers' files too), a Model Garden checkpoint, or
a TF-Hub BERT-API encoder SavedModel: `ENCODER_DIR,PREPROCESSOR_DIR`, an
export of ours (`encoder/` + `preprocessor/`), or the encoder alone
(`modeling/importers/tf_hub.py`; Google's CMLM encoders, Model Garden's BERT
exports and ours). `--format` picks when the guess is not enough. A TF-Hub
encoder is run on probe inputs, and the imported model must give its
outputs. The model_dir written looks like a training run at step 0:
`params.yaml` (the `cmlm/en_base` recipe, or `experiment`, with the source's
encoder, vocabulary, casing, text normalization, pooling and sequence length),
`vocab.txt`, and `ckpt-0` whose items are the training run's (`encoder`,
`cmlm_head`, `model`, `global_step`; training/task.py): the encoder and, when
the source has one, the MLM head imported; the projection head freshly
initialised. It is written to a temporary directory and renamed into place,
so an error leaves nothing behind.

`import_info.json` records where the weights came from, for the model card
export writes (export/cards/model_card.py): the source's name (`--source_name`, a
Hugging Face cache's `org/name`, the H1 title of its README.md, or the
directory's base name: never a local path), its kind, and what
its README.md's front matter states (license, languages, datasets) and its
BibTeX; `--source_license` states a license the source does not.
"""
import copy
import dataclasses
import json
import os
import re
import shutil
from typing import List, Optional

import tensorflow as tf

from cmlm.data_pipelines import vocabulary
from cmlm.modeling.importers import encoder_weights
from cmlm.modeling.importers import huggingface
from cmlm.modeling.importers import model_garden
from cmlm.modeling.importers import tf_hub
from official.core import config_definitions as cfg
from official.core import exp_factory
from official.modeling import hyperparams
from cmlm.training import atomic
from cmlm.training import run_dir
from cmlm.training import task as task_lib

FORMATS = ("huggingface", "model_garden", "tf_hub")
VOCAB_FILE = "vocab.txt"
DEFAULT_SEQ_LENGTH = 256  # cmlm/en_base's


@dataclasses.dataclass
class ImportResult:
  """What was written, and what came from the source."""
  model_dir: str
  checkpoint_path: str
  source: str
  params: cfg.ExperimentConfig
  imported_mlm_head: bool
  imported_pooler: bool
  unused_weights: List[str]
  origin: Optional[dict] = None  # what import_info.json records
  notes: List[str] = dataclasses.field(default_factory=list)


def _check_source_given(source: str) -> None:
  if not source:
    raise ValueError("--source is required: a Hugging Face model directory, "
                     "a Model Garden checkpoint or a TF-Hub encoder "
                     "(ENCODER_DIR[,PREPROCESSOR_DIR]).")


def read_source(source: str, source_format: Optional[str] = None,
                vocab_file: Optional[str] = None,
                lower_case: Optional[bool] = None
                ) -> encoder_weights.ImportedEncoder:
  """Reads `source` in `source_format` (guessed when None)."""
  _check_source_given(source)
  if source_format not in (None,) + FORMATS:
    raise ValueError(f"--format must be one of {', '.join(FORMATS)}, got "
                     f"{source_format!r}.")
  for path in filter(None, tf_hub.split_source(source)):
    if not (tf.io.gfile.exists(path) or tf.io.gfile.exists(path + ".index")):
      raise FileNotFoundError(f"--source={path} does not exist.")
  if source_format is None:
    source_format = ("huggingface" if huggingface.is_huggingface_dir(source)
                     else "tf_hub" if tf_hub.is_tf_hub(source)
                     else "model_garden")
  if source_format == "huggingface":
    if not huggingface.is_huggingface_dir(source):
      raise FileNotFoundError(f"{source} has no {huggingface.CONFIG}; a "
                              "Hugging Face model directory needs one.")
    return huggingface.read_huggingface(source, vocab_file, lower_case)
  if source_format == "tf_hub":
    return tf_hub.read_tf_hub(source, vocab_file, lower_case)
  return model_garden.read_model_garden(source, vocab_file, lower_case)


def experiment_config(imported: encoder_weights.ImportedEncoder,
                      vocab_file: str, seq_length: Optional[int] = None,
                      num_projections: int = 15,
                      experiment: str = "cmlm/en_base"
                      ) -> cfg.ExperimentConfig:
  """`experiment` with the imported encoder, tokenizer and pooling."""
  try:
    params = exp_factory.get_exp_config(experiment)
  except (KeyError, LookupError, AssertionError):
    raise ValueError(f"The experiment {experiment!r} is not registered; "
                     "import cmlm.registry_imports first.") from None
  # CMLM appends num_projections vectors to a sequence: they need positions.
  positions = imported.encoder.max_position_embeddings
  longest = positions - num_projections
  if seq_length is not None and not 3 <= seq_length <= longest:
    raise ValueError(f"--seq_length={seq_length} must be between 3 and "
                     f"{longest} (the source's {positions} positions less "
                     f"{num_projections} for the projections).")
  seq_length = min(seq_length or imported.seq_length or DEFAULT_SEQ_LENGTH,
                   longest)
  params.override({
      "task": {"model": {"encoder": imported.encoder.as_dict(),
                         "num_projections": num_projections,
                         "pooling": imported.pooling},
               "tokenization": dict(
                   vocab_file=vocab_file, lower_case=imported.lower_case,
                   text_normalization=imported.text_normalization,
                   seq_length=seq_length)}},
      is_strict=True)
  for name, objective in params.task.active_objectives().items():
    if objective.type == "cmlm":  # the paper's 80 of 256, at this length
      for data in (objective.train_data, objective.validation_data):
        data.max_predictions_per_seq = max(1, round(
            seq_length * data.masking_rate))
  params.validate()
  return params


def import_model(source: str, model_dir: str,
                 source_format: Optional[str] = None,
                 vocab_file: Optional[str] = None,
                 lower_case: Optional[bool] = None,
                 seq_length: Optional[int] = None, num_projections: int = 15,
                 overwrite: bool = False,
                 experiment: str = "cmlm/en_base",
                 source_name: Optional[str] = None,
                 source_license: Optional[str] = None) -> ImportResult:
  """Writes `model_dir` from `source`; see the module docstring.

  Args:
    source: a Hugging Face model directory, a Model Garden checkpoint (prefix
      or directory) or a TF-Hub BERT-API encoder: `ENCODER_DIR,
      PREPROCESSOR_DIR`, an export holding both, or the encoder alone.
    model_dir: the directory to write (must not exist unless `overwrite`).
    source_format: "huggingface", "model_garden" or "tf_hub"; guessed when
      None.
    vocab_file: the vocabulary, when the source does not hold one.
    lower_case: whether the tokenizer lower-cases; default the source's.
    seq_length: the longest sequence, [CLS] and [SEP] included; default
      the source's (sentence-transformers' max_seq_length) or 256.
    num_projections: N of the fresh projection head.
    overwrite: replace an existing `model_dir`.
    experiment: the registered experiment the run's params.yaml starts from.
    source_name: the source's name for the model card (default: see
      `source_info`).
    source_license: the source's license (an SPDX id), when its README.md
      does not state one.
  """
  if not model_dir:
    raise ValueError("--model_dir is required: where the imported model goes.")
  model_dir = os.path.abspath(model_dir)
  if os.path.lexists(model_dir) and not overwrite:
    raise FileExistsError(f"{model_dir} already exists; pass --overwrite to "
                          "replace it, or choose another --model_dir.")
  _check_source_given(source)  # before its name and license are read
  origin = source_info(source, source_name, source_license)
  imported = read_source(source, source_format, vocab_file, lower_case)
  vocabulary.load_vocab(imported.vocab_file)  # one clear error if unusable
  task_lib.check_vocab_matches_encoder(imported.vocab_file,
                                       imported.encoder.vocab_size)
  params = experiment_config(imported, os.path.join(model_dir, VOCAB_FILE),
                             seq_length, num_projections, experiment)
  # The model is built before model_dir (and its vocab.txt) exists: with the
  # source's vocabulary, the same file that is copied there.
  build_config = copy.deepcopy(params.task)
  build_config.tokenization.vocab_file = imported.vocab_file
  task = task_lib.SentenceEncoderTask(build_config)
  model = task.build_model()
  _build_variables(model, task)
  cmlm_head = model.heads.get(run_dir.cmlm_objective_name(params))
  unused = encoder_weights.assign_weights(
      model.encoder, imported.weights,
      masked_lm=cmlm_head.masked_lm if cmlm_head is not None else None)
  if imported.reference is not None:  # the source ran: it must agree
    encoder_weights.check_against_reference(model.encoder, imported.reference,
                                            imported.source)

  with atomic.atomic_directory(model_dir, overwrite) as temporary:
    shutil.copyfile(imported.vocab_file, os.path.join(temporary, VOCAB_FILE))
    hyperparams.save_params_dict_to_yaml(
        params, os.path.join(temporary, run_dir.PARAMS_FILE))
    with open(os.path.join(temporary, run_dir.IMPORT_INFO_FILE), "w",
              encoding="utf-8") as f:
      json.dump(origin, f, indent=1, ensure_ascii=False)
    checkpoint = tf.train.Checkpoint(
        global_step=tf.Variable(0, dtype=tf.int64, trainable=False),
        model=model, **model.checkpoint_items)
    manager = tf.train.CheckpointManager(checkpoint, temporary, max_to_keep=1)
    saved = manager.save(checkpoint_number=0)
  return ImportResult(
      model_dir=model_dir,
      checkpoint_path=os.path.join(model_dir, os.path.basename(saved)),
      source=imported.source, params=params,
      imported_mlm_head=any(k.startswith("cls/predictions/")
                            for k in imported.weights),
      imported_pooler="pooler_transform/kernel" in imported.weights,
      unused_weights=unused, origin=origin, notes=list(imported.notes))


def _read_model_card(directory: str):
  """(front matter, text) of `directory`'s README.md; ({}, "") if none."""
  import yaml  # pylint: disable=g-import-not-at-top
  try:
    with open(os.path.join(directory, "README.md"), encoding="utf-8") as f:
      text = f.read()
  except (OSError, UnicodeDecodeError):
    return {}, ""
  match = re.match(r"---[ \t]*\n(.*?)\n---[ \t]*\n", text, re.S)
  try:
    front = yaml.safe_load(match.group(1)) if match else {}
  except yaml.YAMLError:
    front = {}
  return (front if isinstance(front, dict) else {}), text


def _source_name(path: str, directory: str, readme: str) -> str:
  """A Hugging Face cache's `org/name`, else the README's `# name` title,
  else the directory's base name (and the checkpoint prefix's)."""
  cached = re.search(r"models--([^/]+)--([^/]+)/snapshots/", path + "/")
  if cached:
    return f"{cached.group(1)}/{cached.group(2)}"
  readme = re.sub(r"^---.*?\n---", "", readme, flags=re.S)
  title = re.search(r"^# +([\w.-]+(?:/[\w.-]+)?)[ \t]*$", readme, re.M)
  if title:
    return title.group(1)
  name = os.path.basename(os.path.abspath(directory))
  return name if directory == path else f"{name}/{os.path.basename(path)}"


def source_info(source: str, source_name: Optional[str] = None,
                source_license: Optional[str] = None) -> dict:
  """What import_info.json records of `source`: its name, kind, URL when
  known, and what its README.md states; no local path."""
  if source_name and (os.path.isabs(source_name) or
                      source_name.startswith(("~", "."))):
    raise ValueError(f"--source_name={source_name} must be the source's "
                     "name (e.g. sentence-transformers/all-MiniLM-L6-v2), "
                     "not a local path.")
  path = tf_hub.split_source(source)[0].rstrip("/")
  directory = path if tf.io.gfile.isdir(path) else os.path.dirname(path)
  if tf_hub.is_saved_model(path) and os.path.basename(
      os.path.abspath(path)) == tf_hub.ENCODER_DIR:
    # An export's encoder/: the export, with its model card, speaks for it.
    path = directory = os.path.dirname(os.path.abspath(path))
  front, text = _read_model_card(directory)
  if os.path.isfile(os.path.join(directory, "modules.json")):
    kind = "sentence-transformers"
  elif huggingface.is_huggingface_dir(directory):
    kind = "huggingface"
  elif tf_hub.is_tf_hub(source):
    kind = "tf-hub"
  else:
    kind = "model_garden"
  name = source_name or _source_name(path, directory, text)
  as_list = lambda v: [str(x) for x in (v if isinstance(v, list) else [v])
                       if x]
  return {
      "source_name": name, "source_format": kind,
      "url": (f"https://huggingface.co/{name}" if kind in (
          "huggingface", "sentence-transformers") and "/" in name else ""),
      "license": (source_license or str(front.get("license") or "")).lower(),
      "language": as_list(front.get("language")),
      "datasets": as_list(front.get("datasets")),
      "citation": [c.strip() for c in re.findall(
          r"```bibtex\s*\n(.*?)```", text, re.S | re.I)][:3],
  }


def _build_variables(model, task) -> None:
  """Calls `model` on each objective's dummy features: every variable of the
  encoder, the projection head and the heads exists before weights are
  assigned."""
  features = {name: objective.dummy_features()
              for name, objective in task.objectives.items()
              if objective.dummy_features() is not None}
  model(features)
  model.encoder(run_dir.dummy_encoder_inputs(
      task.task_config.tokenization.seq_length))


def describe(result: ImportResult) -> str:
  """What `python -m cmlm import` prints: where the run went, and what it is."""
  model = result.params.task.model
  tokenization, encoder = result.params.task.tokenization, model.encoder
  return (f"Imported {result.source}\n"
          f"  into          {result.checkpoint_path}\n"
          f"  encoder       {encoder.num_layers} layers, hidden "
          f"{encoder.hidden_size}, {encoder.num_attention_heads} heads, vocab "
          f"{encoder.vocab_size}\n"
          f"  tokenizer     "
          f"{'uncased' if tokenization.lower_case else 'cased'}, "
          f"seq_length {tokenization.seq_length}; pooling {model.pooling}\n"
          f"  origin        {result.origin['source_name']} "
          f"({result.origin['source_format']}), license "
          f"{result.origin['license'] or 'not stated'}\n"
          f"  MLM head      "
          f"{'imported' if result.imported_mlm_head else 'new'};"
          f" projection head new ({model.num_projections} projections)"
          + "".join(f"\n  note          {note}" for note in result.notes))
