"""A training run read once: the one record every reader of a run takes.

    run = read_run("runs/tiny")                # latest checkpoint
    run.params, run.checkpoint_path, run.step  # params.yaml, ckpt-N, its step
    run.vocabulary                             # its vocabulary file, as read
    run.origin                                 # the import it is or starts from
    run.eval_report                            # its `cmlm eval` report, if any
    run.tokenizer(), run.restore_encoder()     # made from what was read

`read_run` reads the run's `params.yaml` (through `training.run_dir`, the
one reader of it) and its vocabulary file once each, finds the checkpoint
and its step, the `import_info.json` of the run or of its
`task.init_checkpoint`'s run, and the evaluation report; every error is
one line, raised before anything is written. The command builds the record
and passes it on: `export.exporter.export_run` hands it (or what it read)
to the preprocessor, the card, every artifact writer and agreement check
and the sentence-transformers folder; `inference.embedders.load_embedder`
and `cmlm.mteb_model` take it too, so neither reads the run again.
"""
import dataclasses
import json
import os
from typing import Optional

from cmlm.data_pipelines import tokenization as tokenization_lib
from cmlm.data_pipelines import vocabulary as vocabulary_lib
from official.core import config_definitions as cfg
from cmlm.inference import layout
from cmlm.training import run_dir
from cmlm.training.run_dir import IMPORT_INFO_FILE

# Where a run's `cmlm eval` report is looked for by default.
EVAL_REPORT_PLACES = (os.path.join("eval", "report.json"), "report.json")


@dataclasses.dataclass(frozen=True)
class RunRecord:
  """A run directory as read once by `read_run`.

  Examples:
    >>> run = read_run("runs/tiny")
    >>> run.params.task.tokenization.vocab_file, run.step
  """
  model_dir: str
  params: cfg.ExperimentConfig
  checkpoint_path: str
  step: Optional[int]  # None: the checkpoint stores no global step
  # `task.tokenization.vocab_file`, read and checked once.
  vocabulary: vocabulary_lib.VocabularyFile
  # The import_info.json of the run (`imported_here` True) or of the run its
  # task.init_checkpoint names (False); None for a run trained from scratch.
  origin: Optional[dict] = None
  eval_report_path: Optional[str] = None
  eval_report: Optional[dict] = None

  @property
  def tokenization(self) -> tokenization_lib.TokenizationConfig:
    """The run's `task.tokenization`."""
    return self.params.task.tokenization

  def tokenizer(self, seq_length: Optional[int] = None
                ) -> tokenization_lib.WordPieceTokenizer:
    """The run's tokenizer, as its training data had it (`seq_length`
    replaces the run's), made from the vocabulary as read."""
    return tokenization_lib.build_wordpiece_tokenizer(
         self.tokenization, seq_length, self.vocabulary)

  def restore_encoder(self, with_mlm_head: bool = False,
                      pooling: Optional[str] = None):
    """The run's encoder restored from the record's checkpoint (and CMLM's
    head with `with_mlm_head`; `training.run_dir.restore_encoder`), read
    through `pooling` instead of its own when given
    (`training.run_dir.with_pooling`)."""
    return run_dir.restore_encoder(
        run_dir.with_pooling(self.params, pooling), self.checkpoint_path,
        with_mlm_head, self.vocabulary)


def is_run(model: str) -> bool:
  """Whether `model` names a training run (not a pair of SavedModels)."""
  return "," not in model and run_dir.is_run_dir(model)


def read_run(model_dir: str, checkpoint: Optional[str] = None,
             eval_report: Optional[str] = None, find_report: bool = True,
             checkpoint_name: str = "--checkpoint") -> RunRecord:
  """Reads `model_dir` once (see the module docstring).

  Args:
    model_dir: a run directory of `python -m cmlm train`, `stages` or
      `import`.
    checkpoint: a checkpoint prefix instead of the latest one.
    eval_report: a report.json of `cmlm eval` (or its directory); default,
      when `find_report`, the run's `eval/report.json` or `report.json`.
    find_report: look for the run's own report when `eval_report` is not
      given.
    checkpoint_name: how errors name `checkpoint`.

  Examples:
    >>> run = read_run("runs/tiny", eval_report="runs/tiny/eval")
    >>> sorted(run.eval_report["tasks"])
  """
  params = run_dir.load_params(model_dir)
  checkpoint_path = run_dir.find_checkpoint(model_dir, checkpoint,
                                            checkpoint_name)
  report_path = (find_eval_report(model_dir, eval_report)
                 if find_report or eval_report else None)
  return RunRecord(
      model_dir=model_dir, params=params, checkpoint_path=checkpoint_path,
      step=run_dir.checkpoint_step(checkpoint_path),
      vocabulary=vocabulary_lib.read_vocabulary(
          params.task.tokenization.vocab_file),
      origin=find_origin(model_dir, params), eval_report_path=report_path,
      eval_report=read_eval_report(report_path) if report_path else None)


def find_origin(model_dir: str, params: cfg.ExperimentConfig
                ) -> Optional[dict]:
  """The import a run is, or starts from: the `import_info.json` of
  `model_dir` (`imported_here` True) or of its `task.init_checkpoint`'s run
  (False); None for a run trained from scratch."""
  info = layout.read_json_object(os.path.join(model_dir, IMPORT_INFO_FILE))
  if info is not None:
    return dict(info, imported_here=True)
  init = params.task.init_checkpoint or ""
  if not init:
    return None
  directory = init if os.path.isdir(init) else os.path.dirname(init)
  info = layout.read_json_object(os.path.join(directory, IMPORT_INFO_FILE))
  return dict(info, imported_here=False) if info is not None else None


def find_eval_report(model_dir: str, path: Optional[str] = None
                     ) -> Optional[str]:
  """`path` (a report.json or the directory holding one), else the run's
  `eval/report.json` or `report.json` when present; None when none."""
  if path:
    candidate = (os.path.join(path, "report.json") if os.path.isdir(path)
                 else path)
    if not os.path.isfile(candidate):
      raise FileNotFoundError(f"--eval_report={path} is not a report.json of "
                              "`python -m cmlm eval` (nor a directory "
                              "holding one).")
    return candidate
  for place in EVAL_REPORT_PLACES:
    candidate = os.path.join(model_dir, place)
    if os.path.isfile(candidate):
      return candidate
  return None


def read_eval_report(path: str) -> dict:
  """The report of `cmlm eval` at `path`; a ValueError of one line when it
  is not one."""
  try:
    with open(path, encoding="utf-8") as f:
      report = json.load(f)
  except (OSError, ValueError) as error:
    raise ValueError(f"{path} is not a readable JSON report ({error})."
                     ) from None
  if not isinstance(report, dict) or not isinstance(report.get("tasks"), dict):
    raise ValueError(f"{path} is not a report of `python -m cmlm eval` (no "
                     "'tasks').")
  return report
