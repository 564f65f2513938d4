"""`python -m cmlm import`: pretrained BERT weights to a CMLM model_dir.

    python -m cmlm import --source=all-MiniLM-L6-v2/ --model_dir=runs/minilm
    python -m cmlm export --model_dir=runs/minilm --export_dir=exports/minilm
    python -m cmlm train --experiment=cmlm/en_base \
        --config_file=runs/minilm/params.yaml --model_dir=runs/cmlm_minilm \
        --params_override=task.init_checkpoint=runs/minilm,...

`--source` is a Hugging Face BERT directory (`config.json` + weights +
`vocab.txt`, sentence-transformers' files too) or a Model Garden checkpoint /
TF-Hub BERT SavedModel (`--format` picks when the guess is not enough). The
model_dir written looks like a training run at step 0: `params.yaml` (the
`cmlm/en_base` recipe with the source's encoder, vocabulary, casing, text
normalization, pooling and sequence length), `vocab.txt`, and `ckpt-0` holding
the whole CMLM model (`model=`, `encoder=`, `projection_head=`,
`global_step=`): the encoder and, when the source has one, the MLM head
imported; the projection head freshly initialised. It is written to a
temporary directory and renamed into place, so an error leaves nothing behind.
"""
import dataclasses
import os
import shutil
from typing import List, Optional

import tensorflow as tf

from cmlm import cmlm_task
from data_pipelines import vocabulary
from experiments import cmlm_experiments
from export import atomic
from export import checkpoint as checkpoint_lib
from modeling import model_builder
from modeling.importers import encoder_weights
from modeling.importers import huggingface
from modeling.importers import model_garden
from official.core import config_definitions as cfg
from official.modeling import hyperparams

FORMATS = ("huggingface", "model_garden")
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


def read_source(source: str, source_format: Optional[str] = None,
                vocab_file: Optional[str] = None,
                lower_case: Optional[bool] = None
                ) -> encoder_weights.ImportedEncoder:
  """Reads `source` in `source_format` (guessed when None)."""
  if not source:
    raise ValueError("--source is required: a Hugging Face model directory, "
                     "a Model Garden checkpoint or a TF-Hub SavedModel.")
  if source_format not in (None,) + FORMATS:
    raise ValueError(f"--format must be one of {', '.join(FORMATS)}, got "
                     f"{source_format!r}.")
  if not (tf.io.gfile.exists(source) or tf.io.gfile.exists(source + ".index")):
    raise FileNotFoundError(f"--source={source} does not exist.")
  if source_format is None:
    source_format = ("huggingface" if huggingface.is_huggingface_dir(source)
                     else "model_garden")
  if source_format == "huggingface":
    if not huggingface.is_huggingface_dir(source):
      raise FileNotFoundError(f"{source} has no {huggingface.CONFIG}; a "
                              "Hugging Face model directory needs one.")
    return huggingface.read_huggingface(source, vocab_file, lower_case)
  return model_garden.read_model_garden(source, vocab_file, lower_case)


def experiment_config(imported: encoder_weights.ImportedEncoder,
                      vocab_file: str, seq_length: Optional[int] = None,
                      num_projections: int = 15) -> cfg.ExperimentConfig:
  """`cmlm/en_base` with the imported encoder, tokenizer and pooling."""
  params = cmlm_experiments.cmlm_en_base()
  # CMLM appends num_projections vectors to a sequence: they need positions.
  positions = imported.encoder.max_position_embeddings
  longest = positions - num_projections
  if seq_length is not None and not 3 <= seq_length <= longest:
    raise ValueError(f"--seq_length={seq_length} must be between 3 and "
                     f"{longest} (the source's {positions} positions less "
                     f"{num_projections} for the projections).")
  seq_length = min(seq_length or imported.seq_length or DEFAULT_SEQ_LENGTH,
                   longest)
  data = dict(vocab_file=vocab_file, lower_case=imported.lower_case,
              text_normalization=imported.text_normalization,
              seq_length=seq_length,
              max_predictions_per_seq=max(1, round(
                  seq_length * params.task.train_data.masking_rate)))
  params.override({
      "task": {"model": {"encoder": imported.encoder.as_dict(),
                         "num_projections": num_projections,
                         "pooling": imported.pooling},
               "train_data": data, "validation_data": data}},
      is_strict=True)
  params.validate()
  return params


def import_model(source: str, model_dir: str,
                 source_format: Optional[str] = None,
                 vocab_file: Optional[str] = None,
                 lower_case: Optional[bool] = None,
                 seq_length: Optional[int] = None, num_projections: int = 15,
                 overwrite: bool = False) -> ImportResult:
  """Writes `model_dir` from `source`; see the module docstring.

  Args:
    source: a Hugging Face model directory, a Model Garden checkpoint (prefix
      or directory) or a TF-Hub BERT SavedModel.
    model_dir: the directory to write (must not exist unless `overwrite`).
    source_format: "huggingface" or "model_garden"; guessed when None.
    vocab_file: the vocabulary, when the source does not hold one.
    lower_case: whether the tokenizer lower-cases; default the source's.
    seq_length: the longest sequence, [CLS] and [SEP] included; default
      the source's (sentence-transformers' max_seq_length) or 256.
    num_projections: N of the fresh projection head.
    overwrite: replace an existing `model_dir`.
  """
  if not model_dir:
    raise ValueError("--model_dir is required: where the imported model goes.")
  model_dir = os.path.abspath(model_dir)
  if os.path.lexists(model_dir) and not overwrite:
    raise FileExistsError(f"{model_dir} already exists; pass --overwrite to "
                          "replace it, or choose another --model_dir.")
  imported = read_source(source, source_format, vocab_file, lower_case)
  vocabulary.load_vocab(imported.vocab_file)  # one clear error if unusable
  cmlm_task.check_vocab_matches_encoder(imported.vocab_file,
                                        imported.encoder.vocab_size)
  params = experiment_config(imported, os.path.join(model_dir, VOCAB_FILE),
                             seq_length, num_projections)
  model = model_builder.build_cmlm_model(
      params.task.model, seq_length=params.task.train_data.seq_length)
  model(checkpoint_lib.dummy_features(params))  # creates every variable
  unused = encoder_weights.assign_weights(model, imported.weights)

  with atomic.atomic_directory(model_dir, overwrite) as temporary:
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(temporary, 0o777 & ~umask)  # mkdtemp's is 0o700
    shutil.copyfile(imported.vocab_file, os.path.join(temporary, VOCAB_FILE))
    hyperparams.save_params_dict_to_yaml(
        params, os.path.join(temporary, checkpoint_lib.PARAMS_FILE))
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
      unused_weights=unused)


def main(flags_obj) -> ImportResult:
  """`python -m cmlm import` from its flags; prints what was written."""
  lower_case = (flags_obj.lower_case if flags_obj["lower_case"].present
                else None)
  result = import_model(
      flags_obj.source, flags_obj.model_dir, source_format=flags_obj.format,
      vocab_file=flags_obj.vocab_file, lower_case=lower_case,
      seq_length=flags_obj.seq_length, overwrite=flags_obj.overwrite)
  model, data = result.params.task.model, result.params.task.train_data
  encoder = model.encoder
  print(f"Imported {result.source}\n"
        f"  into          {result.checkpoint_path}\n"
        f"  encoder       {encoder.num_layers} layers, hidden "
        f"{encoder.hidden_size}, {encoder.num_attention_heads} heads, vocab "
        f"{encoder.vocab_size}\n"
        f"  tokenizer     {'uncased' if data.lower_case else 'cased'}, "
        f"seq_length {data.seq_length}; pooling {model.pooling}\n"
        f"  MLM head      {'imported' if result.imported_mlm_head else 'new'};"
        f" projection head new ({model.num_projections} projections)")
  return result
