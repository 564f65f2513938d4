"""`python -m cmlm export`: a training checkpoint to the three SavedModels.

    python -m cmlm export --model_dir=runs/tiny --export_dir=exports/tiny

writes

    exports/tiny/encoder/            TF-Hub encoder (export.encoder)
    exports/tiny/preprocessor/       TF-Hub preprocessor (export.preprocessor)
    exports/tiny/serving/<version>/  text -> embedding (export.serving)

from the latest checkpoint of `--model_dir` (or `--checkpoint=.../ckpt-N`);
the version is the checkpoint's step unless `--version` says otherwise.
`--formats=saved_model,tflite,onnx` also writes `tflite/` and `onnx/` into
the same version (`export.artifacts`: the encoder as TFLite and ONNX models,
float32 and int8, with the vocabulary their tokenizer reads and the same
tokenization as `tokenizer.json`); `sentence_transformers` writes
`sentence_transformers/`, the model as a sentence-transformers / Hugging
Face folder (`export.sentence_transformers_folder`). The
checkpoint is read and every model built before anything is written; the
three SavedModels are then written together into one temporary directory,
renamed into `versions/<name>/` when complete, and published as a whole by
switching the `current` symlink (`export.publish`, which describes the
layout: `encoder`, `preprocessor` and `serving/<version>` are symlinks into
the published version). None replaces an existing one without
`--overwrite`. Exporting a later checkpoint into the same `--export_dir`
with `--overwrite` replaces encoder/ and preprocessor/ and adds its serving
version beside the older ones, which TF Serving keeps or retires by its own
version policy; a reader never sees a mix of two exports nor a missing part.
"""
import dataclasses
import os
from typing import Optional, Sequence


from cmlm.export import artifacts as artifacts_lib
from cmlm.export import encoder as encoder_lib
from cmlm.export import preprocessor as preprocessor_lib
from cmlm.export import publish
from cmlm.export import sentence_transformers_folder
from cmlm.export import serving as serving_lib
from cmlm.export.cards import card_facts
from cmlm.export.cards import model_card
from cmlm.export.cards import sentence_transformers_card
from cmlm.inference import layout
from cmlm.inference import run_record
from cmlm.modeling import principal_component_removal as pcr
from cmlm.training import atomic
from cmlm.training import run_dir

ENCODER_DIR = "encoder"
PREPROCESSOR_DIR = "preprocessor"
SERVING_DIR = "serving"


@dataclasses.dataclass
class ExportResult:
  """Where the SavedModels went, and from which checkpoint."""
  export_dir: str
  encoder_dir: str
  preprocessor_dir: str
  serving_dir: str  # <export_dir>/serving/<version>
  checkpoint_path: str
  step: int
  version_dir: str = ""  # <export_dir>/versions/<name>: the three, whole
  artifacts: dict = dataclasses.field(default_factory=dict)  # name -> manifest
  # The sentence-transformers folder's manifest; empty when not written.
  sentence_transformers: dict = dataclasses.field(default_factory=dict)


def export_run(model_dir: str, export_dir: str,
               checkpoint: Optional[str] = None,
               version: Optional[int] = None, overwrite: bool = False,
               normalize: bool = True, export_mlm: bool = False,
               eval_report: Optional[str] = None,
               write_card: bool = True,
               card_options: Optional[card_facts.CardOptions] = None,
               formats: Sequence[str] = ("saved_model",),
               run: Optional[run_record.RunRecord] = None) -> ExportResult:
  """Exports a training run's checkpoint; see the module docstring.

  Args:
    model_dir: the `--model_dir` of `python -m cmlm train`.
    export_dir: where the SavedModels go.
    checkpoint: a checkpoint prefix (or directory) instead of the latest one.
    version: the serving version; default the checkpoint's global step.
    overwrite: replace SavedModels already there.
    normalize: L2-normalise the serving model's embeddings.
    export_mlm: give the encoder the `.mlm` subobject.
    eval_report: the run's `cmlm eval` report.json (or its directory) for
      the model card; default `<model_dir>/eval/report.json` if present.
    write_card: write the model card `README.md` (`export.cards.model_card`)
      beside the three SavedModels.
    card_options: what the user states for the card and `export_info.json`
      (model name, datasets, license, language; `card_facts.CardOptions`).
    formats: `saved_model` (always written) and any of `tflite`, `onnx`
      (`export.artifacts`) and `sentence_transformers`
      (`export.sentence_transformers_folder`).
    run: the run as `inference.run_record.read_run` read it (with
      `checkpoint` and `eval_report`), when the caller already has it;
      read here otherwise.

  Examples:
    >>> result = export_run("runs/tiny", "exports/tiny",
    ...                     formats=("saved_model", "tflite"))
    >>> result.serving_dir
    '.../exports/tiny/serving/20'
  """
  if not export_dir:
    raise ValueError("--export_dir is required: where the SavedModels go.")
  if version is not None and version < 0:
    raise ValueError(f"--version must be a non-negative integer (a TF Serving "
                     f"version), got {version}.")
  if os.path.exists(export_dir) and not os.path.isdir(export_dir):
    raise FileExistsError(f"--export_dir={export_dir} is a file, not a "
                          "directory; name a directory (new or an earlier "
                          "export).")
  if not model_dir and checkpoint:
    model_dir = os.path.dirname(checkpoint.rstrip("/"))
  if not model_dir:
    raise ValueError("--model_dir is required: the directory of the "
                     "training run to export.")
  card_options = card_facts.check_options(card_options or
                                          card_facts.CardOptions())
  formats = artifacts_lib.parse_formats(formats)
  # The run, read once: params, checkpoint, vocabulary, origin and (for the
  # card) the evaluation report; a missing or unreadable --eval_report fails
  # here. Everything below takes what it read.
  run = run or run_record.read_run(
      model_dir, checkpoint, eval_report=eval_report if write_card else None,
      find_report=write_card)
  params, checkpoint_path, step = run.params, run.checkpoint_path, run.step
  if export_mlm and run_dir.cmlm_objective_name(params) is None:
    objectives = ", ".join(params.task.active_objectives())
    raise ValueError(f"{model_dir} trained {objectives}, not CMLM: it has no "
                     "trained MLM head to export; drop --mlm.")
  with_folder = artifacts_lib.SENTENCE_TRANSFORMERS in formats
  if with_folder:  # a head it cannot express is refused before any work
    sentence_transformers_folder.check_exportable(params.task.model)
  if version is None and step is None:
    raise ValueError(f"{checkpoint_path} stores no global step to version "
                     "the export by; give --version=N.")
  version = step if version is None else version
  export_dir = os.path.abspath(export_dir)
  result = ExportResult(
      export_dir, os.path.join(export_dir, ENCODER_DIR),
      os.path.join(export_dir, PREPROCESSOR_DIR),
      os.path.join(export_dir, SERVING_DIR, str(version)),
      checkpoint_path, step)
  targets = (result.encoder_dir, result.preprocessor_dir, result.serving_dir)
  atomic.check_writable(targets, overwrite)

  # Build everything first: a bad checkpoint, vocabulary or config fails
  # before anything is written.
  tokenization, vocab = run.tokenization, run.vocabulary
  # The encoder alone (and CMLM's head for --mlm): no other objective's head
  # or state, nor the optimizer, is read or exported.
  restored = run.restore_encoder(with_mlm_head=export_mlm)
  encoder, mlm_head = restored if export_mlm else (restored, None)
  encoder_model = encoder_lib.build_export_encoder(encoder, mlm_head)
  preprocessor = preprocessor_lib.Preprocessor(tokenization.vocab_file,
                                               tokenization.lower_case,
                                               tokenization.seq_length,
                                               tokenization.text_normalization,
                                               vocab)
  # The serving model gets its own functional model over the same layers,
  # without the MLM head.
  serving_encoder = encoder_lib.build_export_encoder(encoder)
  components = None
  if os.path.exists(os.path.join(model_dir, pcr.FILE_NAME)):
    components = pcr.LanguageComponents.load(model_dir)
  # The card's facts also go into export_info.json; a bad card option fails
  # here.
  facts = card_facts.card_facts(
      run, version, int(serving_encoder.output["default"].shape[-1]),
      normalize, has_pcr=components is not None, has_mlm=export_mlm,
      options=card_options)
  # A pooling head's own signatures (a lens's binary codes) stay in serving/.
  extra_signatures = (sorted(encoder.pooling_head.serving_signatures(
      serving_lib.TextEmbedding(preprocessor, serving_encoder)))
                      if encoder.pooling_head is not None and len(formats) > 1
                      else [])
  def write(directory):
    # All three go into one temporary directory, published only when whole.
    encoder_lib.export_encoder(encoder_model,
                               os.path.join(directory, "encoder"),
                               tokenization.vocab_file,
                               tokenization.lower_case)
    preprocessor_lib.save_preprocessor(
        preprocessor, os.path.join(directory, "preprocessor"))
    # (a pooling head may add signatures of its own)
    serving_lib.export_text_embedding(os.path.join(directory, "serving"),
                                      preprocessor, serving_encoder,
                                      normalize, components,
                                      encoder.pooling_head)
    result.artifacts = artifacts_lib.write_artifacts(
        directory, formats, serving_encoder, tokenization, vocab=vocab)
    if result.artifacts and extra_signatures:
      print(f"export: {', '.join(result.artifacts)} carry the `default` "
            f"embedding only; {', '.join(extra_signatures)} (the pooling "
            "head's) is in serving/ alone.")
    if with_folder:
      print("Writing the sentence-transformers folder...", flush=True)
      result.sentence_transformers = sentence_transformers_folder.write_folder(
          os.path.join(directory, sentence_transformers_folder.DIRECTORY),
          encoder, serving_encoder, tokenization, params.task.model,
          normalize, lambda manifest: sentence_transformers_card.folder_card(
              facts, manifest), vocab=vocab)
    if write_card:  # rendered once, with the artifacts written above
      with open(os.path.join(directory, layout.CARD_FILE), "w",
                encoding="utf-8") as f:
        f.write(model_card.model_card(facts, result.artifacts,
                                      result.sentence_transformers))
  # The sequence length and the parameters the embedding uses (the serving
  # encoder's: no MLM or projection head) go into export_info.json for
  # readers such as `cmlm.mteb_model` (MTEB's max_tokens, n_parameters).
  result.version_dir = publish.publish_export(
      export_dir, version, overwrite, write,
      publish.new_info(checkpoint_path, step,
                       seq_length=tokenization.seq_length,
                       n_parameters=serving_encoder.count_params(),
                       **card_facts.export_info(facts)), targets)
  return result
