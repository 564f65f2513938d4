"""A run's experiment config, as Model Garden's flags make it.

`build_params` takes the registered experiment, YAML files, `a.b=c`
overrides and our `strategy` / `tpu`; what the user leaves unset comes from
their files and machine: the encoder's vocabulary size from the vocabulary
file (`take_vocab_size_from_file`), the strategy from the hardware
(`settle_strategy`). A run that `task.init_checkpoint` names gives its
encoder (`adopt_init_checkpoint_encoder`). What building the config reads,
the vocabulary file and `task.init_checkpoint` resolved
(`run_dir.resolve_init_checkpoint`), is read once: `build_config` returns it
beside the config (`BuiltConfig`) for the run's one check
(`prepared_run.prepare`) to take, and `train.run` trains it.
"""
import dataclasses
import os
from typing import Optional, Sequence

import tensorflow as tf

from official.core import config_definitions as cfg
from official.core import exp_factory
from cmlm.data_pipelines import vocabulary
from cmlm.modeling import model_builder
from cmlm.training import config_inputs
from cmlm.training import run_dir
from cmlm.training import strategies
from cmlm.training.strategies import STRATEGIES


@dataclasses.dataclass
class BuiltConfig:
  """A run's config (`params`) and what building it read, so that the run
  reads nothing twice: `init_checkpoint`, `task.init_checkpoint` resolved
  (`run_dir.resolve_init_checkpoint`; None without one), and `vocab`, the
  vocabulary file as read for its size (None when it was not read).
  `prepared_run.prepare` and `train.run` take it as they take a config."""
  params: cfg.ExperimentConfig
  init_checkpoint: Optional[run_dir.InitCheckpoint] = None
  vocab: Optional[vocabulary.VocabularyFile] = None


def build_params(experiment: str, config_files: Sequence[str] = (),
                 params_override: str = "", strategy: Optional[str] = None,
                 tpu: Optional[str] = None, lock: bool = True,
                 quiet: bool = False) -> cfg.ExperimentConfig:
  """The config of `build_config`, alone: what building it read is dropped
  (a run given it reads its vocabulary and resolves `task.init_checkpoint`
  again; train `build_config`'s `BuiltConfig` to read them once).

  Examples:
    >>> params = build_params("cmlm/tiny", quiet=True)
    >>> params.task.model.encoder.vocab_size
    8520
  """
  return build_config(experiment, config_files, params_override, strategy,
                      tpu, lock, quiet).params


def build_config(experiment: str, config_files: Sequence[str] = (),
                 params_override: str = "", strategy: Optional[str] = None,
                 tpu: Optional[str] = None, lock: bool = True,
                 quiet: bool = False) -> BuiltConfig:
  """An experiment's config, as Model Garden's flags would make it.

  The registered `experiment`, then each YAML of `config_files`, then
  `params_override` (`a.b=c,...` or YAML), then `strategy`
  (runtime.distribution_strategy) and `tpu` (runtime.tpu). What these leave
  unset comes from the user's files and machine:

  - `task.model.encoder.vocab_size`: the experiment's number is a default;
    unless the YAML or overrides give one (0 counts as none), it is the size
    of `task.tokenization.vocab_file` (`take_vocab_size_from_file`). A size
    given that disagrees with the file is one error, when the run is checked.
  - `runtime.distribution_strategy` and `runtime.num_gpus`: the
    experiment's are defaults too; unless given (`--strategy`, the YAML or
    overrides), they come from the hardware (`settle_strategy`,
    `strategies.choose`), said in one printed line.

  A run that `task.init_checkpoint` names gives its encoder config (see
  `adopt_init_checkpoint_encoder`). Locked unless `lock` is False; `quiet`
  prints nothing (a schedule's later stages). The config is checked once,
  by `prepared_run.prepare`, when the run starts; the `BuiltConfig` returned
  carries what was read here (the vocabulary, `task.init_checkpoint`
  resolved) to that check and the run.

  Examples:
    >>> built = build_config(
    ...     "cmlm/en_base", params_override="task.tokenization.vocab_file="
    ...     "data/vocab_en_uncased.txt")
    Strategy: one_device on the CPU (no TPU configured, no GPU found); --strategy chooses another.
    task.model.encoder.vocab_size is 8520, the size of data/vocab_en_uncased.txt.
    >>> built.params.task.model.encoder.vocab_size, len(built.vocab.tokens)
    (8520, 8520)
  """
  if not experiment:
    raise ValueError("--experiment is required, e.g. --experiment=cmlm/tiny.")
  if strategy and strategy not in STRATEGIES:
    raise ValueError(f"--strategy must be one of {', '.join(STRATEGIES)}, "
                     f"got {strategy!r}.")
  if tpu and strategy and strategy != "tpu":
    raise ValueError(f"--tpu={tpu} is read by the tpu strategy only; with "
                     f"--strategy={strategy} it would be ignored: drop "
                     "--tpu, or give --strategy=tpu.")
  try:
    params = exp_factory.get_exp_config(experiment)
  except (KeyError, LookupError, AssertionError):
    raise ValueError(f"Unknown --experiment={experiment!r}; the registered "
                     f"ones are {', '.join(registered_experiments())}."
                     ) from None
  # The experiment's vocabulary size, strategy and GPU count are defaults:
  # unset here, they stay unset unless the user's inputs below give them.
  default_vocab_size = params.task.model.encoder.vocab_size
  params.override({
      "task": {"model": {"encoder": {"vocab_size": 0}}},
      "runtime": {"distribution_strategy": strategies.FROM_HARDWARE,
                  "num_gpus": _UNSET_GPUS}})
  for config_file in config_files or ():
    config_inputs.override(params, config_inputs.read_config_file(config_file),
                           f"--config_file={config_file}")
  config_inputs.override(params,
                         config_inputs.read_params_override(params_override),
                         "--params_override")
  config_inputs.check_values(params, exp_factory.get_exp_config(experiment))
  if strategy:
    params.override({"runtime": {"distribution_strategy": strategy}})
  if tpu:
    params.override({"runtime": {"tpu": tpu}})
  choice = settle_strategy(params.runtime)
  if not quiet:
    print(choice.line(), flush=True)
  vocab = take_vocab_size_from_file(params, default_vocab_size, quiet=quiet)
  init_checkpoint = adopt_init_checkpoint_encoder(params)
  params.validate()
  if lock:
    params.lock()
  return BuiltConfig(params, init_checkpoint, vocab)


# runtime.num_gpus before the user's inputs: not given (Model Garden's
# strategies refuse a negative count, so none is left so).
_UNSET_GPUS = -1


def find_hardware() -> strategies.Hardware:
  """The local GPUs and TPU cores, and the tasks of `TF_CONFIG` (listing
  physical devices leaves TensorFlow unstarted: a multi-worker strategy can
  still be made after it)."""
  return strategies.Hardware(
      gpus=len(tf.config.list_physical_devices("GPU")),
      tpus=len(tf.config.list_physical_devices("TPU")),
      workers=strategies.workers_of(os.environ.get("TF_CONFIG", "")))


def settle_strategy(runtime, hardware: Optional[strategies.Hardware] = None
                    ) -> strategies.Choice:
  """Sets `runtime.distribution_strategy`, `num_gpus` and `tpu` where they
  are unset (`FROM_HARDWARE`, a negative `num_gpus`) from `hardware`
  (default: `find_hardware()`), by `strategies.choose_for_runtime`; returns
  the choice, with its line."""
  choice = strategies.choose_for_runtime(
      runtime, find_hardware if hardware is None else lambda: hardware)
  runtime.distribution_strategy = choice.strategy
  runtime.num_gpus = choice.num_gpus
  runtime.tpu = choice.tpu
  return choice


def take_vocab_size_from_file(params, default: int, quiet: bool = False
                              ) -> Optional[vocabulary.VocabularyFile]:
  """`task.model.encoder.vocab_size`, when unset (0), becomes the size of
  `task.tokenization.vocab_file`, read as training reads it; `default` (the
  experiment's) without a readable file (`prepared_run.prepare` then says
  what is wrong with it). Prints the size taken when it is not `default`.
  Returns the vocabulary file read (None when none was), for the run to
  take rather than read again.
  """
  encoder = params.task.model.encoder
  if encoder.vocab_size:
    return None
  encoder.vocab_size = default
  vocab_file = params.task.tokenization.vocab_file
  if not vocab_file:
    return None
  try:
    vocab = vocabulary.read_vocabulary(vocab_file)
  except (vocabulary.VocabularyError, tf.errors.OpError):
    return None
  size = len(vocab.tokens)
  encoder.vocab_size = size
  if size != default and not quiet:
    print(f"task.model.encoder.vocab_size is {size}, the size of "
          f"{vocab_file}.", flush=True)
  return vocab


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


def adopt_init_checkpoint_encoder(
    params, init_checkpoint: Optional[run_dir.InitCheckpoint] = None
) -> Optional[run_dir.InitCheckpoint]:
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

  `init_checkpoint`: `task.init_checkpoint` already resolved; resolved here
  (`run_dir.resolve_init_checkpoint`) when not given. Returns the record
  (None without a `task.init_checkpoint`), for the run to take: a path that
  names no checkpoint is said, in one line, when the run is checked.
  """
  task = params.task
  if not getattr(task, "init_checkpoint", ""):
    return None
  if init_checkpoint is None or init_checkpoint.path != task.init_checkpoint:
    init_checkpoint = run_dir.resolve_init_checkpoint(task.init_checkpoint)
  if init_checkpoint.params is None:
    return init_checkpoint
  source_dir, source = init_checkpoint.run_dir, init_checkpoint.params.task
  if task.model.as_dict() == source.model.as_dict() and (
      task.tokenization.vocab_file):
    return init_checkpoint
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
  return init_checkpoint
