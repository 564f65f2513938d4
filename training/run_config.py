"""A run's experiment config, as Model Garden's flags make it.

`build_params` takes the registered experiment, YAML files, `a.b=c`
overrides and our `strategy` / `tpu`; a run that `task.init_checkpoint`
names gives its encoder (`adopt_init_checkpoint_encoder`). The config is
checked once, when the run starts (`prepared_run.prepare`), and trained by
`train.run`.
"""
import os
from typing import Optional, Sequence

from official.core import config_definitions as cfg
from official.core import exp_factory
from official.modeling import hyperparams
from cmlm.modeling import model_builder
from cmlm.training import checkpoints
from cmlm.training import run_dir
from cmlm.training.strategies import STRATEGIES


def build_params(experiment: str, config_files: Sequence[str] = (),
                 params_override: str = "", strategy: Optional[str] = None,
                 tpu: Optional[str] = None,
                 lock: bool = True) -> cfg.ExperimentConfig:
  """An experiment's config, as Model Garden's flags would make it.

  The registered `experiment`, then each YAML of `config_files`, then
  `params_override` (`a.b=c,...` or YAML), then `strategy`
  (runtime.distribution_strategy) and `tpu` (runtime.tpu). A run that
  `task.init_checkpoint` names gives its encoder config (see
  `adopt_init_checkpoint_encoder`). Locked unless `lock` is False. The
  config is checked once, by `prepared_run.prepare`, when the run starts.
  """
  if not experiment:
    raise ValueError("--experiment is required, e.g. --experiment=cmlm/tiny.")
  if strategy and strategy not in STRATEGIES:
    raise ValueError(f"--strategy must be one of {', '.join(STRATEGIES)}, "
                     f"got {strategy!r}.")
  try:
    params = exp_factory.get_exp_config(experiment)
  except (KeyError, LookupError, AssertionError):
    raise ValueError(f"Unknown --experiment={experiment!r}; the registered "
                     f"ones are {', '.join(registered_experiments())}."
                     ) from None
  for config_file in config_files or ():
    params = hyperparams.override_params_dict(params, config_file,
                                              is_strict=True)
  if params_override:
    params = hyperparams.override_params_dict(params, params_override,
                                              is_strict=True)
  if strategy:
    params.override({"runtime": {"distribution_strategy": strategy}})
  if tpu:
    params.override({"runtime": {"tpu": tpu}})
  adopt_init_checkpoint_encoder(params)
  params.validate()
  if lock:
    params.lock()
  return params


def registered_experiments() -> list:
  """The names of Model Garden's registered experiments, e.g. cmlm/tiny.

  Model Garden keeps them as a tree keyed by the parts of the name
  (`{"cmlm": {"tiny": factory}}`); this lists the paths to its leaves.
  """
  def leaves(tree, prefix):
    for key, value in tree.items():
      name = f"{prefix}/{key}" if prefix else key
      if isinstance(value, dict):
        yield from leaves(value, name)
      else:
        yield name
  return sorted(leaves(exp_factory._REGISTERED_CONFIGS, ""))  # pylint: disable=protected-access


def adopt_init_checkpoint_encoder(params) -> None:
  """A run starts with the encoder of the run it starts from.

  When `task.init_checkpoint` is a run of ours (params.yaml beside the
  checkpoint), its `task.model` replaces the experiment's: the transformer
  must be that run's to be restored. What the experiment trains on top
  stays the experiment's: its dropout rates, its pooling head and frozen
  core when it sets them, its pooling when it sets one other than the
  default mean (SimCSE's recipe reads [CLS] from a mean-pooled import),
  and its CMLM projection head (`num_projections`;
  0 for a method that trains none), unless the source's embedding reads its
  projections ("proj"). A part the source lacks starts fresh
  (`checkpoints.encoder_view`); one the experiment lacks is not read. An unset
  `task.tokenization.vocab_file` takes that run's vocabulary, casing and
  text normalization (the sequence length stays the experiment's). NLI
  fine-tuning (cmlm/xnli) thus needs only the run and the data.
  """
  task = params.task
  if not getattr(task, "init_checkpoint", ""):
    return
  try:
    source_dir = os.path.dirname(checkpoints.resolve(task.init_checkpoint))
  except FileNotFoundError:
    return  # `prepare` says so, in one line, when the run starts
  if not run_dir.is_run_dir(source_dir):
    return
  source = run_dir.load_params(source_dir).task
  if task.model.as_dict() == source.model.as_dict() and (
      task.tokenization.vocab_file):
    return
  own = task.model.as_dict()
  kept = {"encoder": {key: own["encoder"][key] for key in
                      ("dropout_rate", "attention_dropout_rate")}}
  kept_names = ["its dropout rates"]
  if own["pooling_head"]["type"] != "none" or not own["trainable_core"]:
    kept.update(pooling_head=own["pooling_head"],
                trainable_core=own["trainable_core"])
    kept_names.append("pooling head and trainable_core")
  if own["pooling"] != model_builder.SiameseEncoderConfig().pooling:
    kept["pooling"] = own["pooling"]
    kept_names.append(f"{own['pooling']} pooling")
  if source.model.sentence_representation != "proj":
    kept["num_projections"] = own["num_projections"]
    kept_names.append("num_projections")
  task.model.override(source.model.as_dict(), is_strict=True)
  task.model.override(kept, is_strict=True)
  taken = f"task.model (but {', '.join(kept_names)})"
  if not task.tokenization.vocab_file:
    task.tokenization.override(
        {key: getattr(source.tokenization, key) for key in
         ("vocab_file", "lower_case", "text_normalization")}, is_strict=True)
    taken += " and the vocabulary"
  print(f"{taken} taken from {source_dir}, the run task.init_checkpoint "
        "starts from.", flush=True)
