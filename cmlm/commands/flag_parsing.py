"""What every command shares: its own FlagValues, --help, --verbosity.

Each command module owns a `flags.FlagValues()` (`command_flags()`), defines
only its flags into it and parses `argv` with `parse`: `--help` prints that
command's flags, an unknown flag or a stray argument raises `UsageError`
(one line, exit status 2 in `cmlm/__main__.py`).
"""
import copy
import sys
from typing import List, Sequence

from absl import flags
from absl import logging

from cmlm.inference import input_paths

HELP_ARGUMENTS = ("-h", "-help", "--help", "--helpshort", "--helpfull")
MODEL_GARDEN_MODULE = "official.common.flags"


class UsageError(ValueError):
  """A flag the command does not take, or a value it cannot parse."""


def command_flags(module_name: str) -> flags.FlagValues:
  """The FlagValues of the command defined in `module_name`, holding
  `--verbosity` (every command's)."""
  flag_values = flags.FlagValues()
  flags.DEFINE_integer(
      "verbosity", None, "absl logging verbosity: 0 shows INFO logs, 1 DEBUG "
      "(default: warnings and errors only; training prints its progress "
      "itself).", flag_values=flag_values, module_name=module_name)
  return flag_values


def define_model_garden_flags(flag_values: flags.FlagValues,
                              names: Sequence[str]) -> None:
  """Model Garden's flags `names`, exactly as `official.common.flags`
  defines them (name, help, default, type), into `flag_values`.

  `define_flags()` defines into absl's global FLAGS only, so it runs once,
  its flags are moved out of the global FLAGS into a private FlagValues,
  and each command copies the ones it takes; the global FLAGS is left as it
  was.
  """
  from official.common import flags as tfm_flags  # pylint: disable=g-import-not-at-top
  scratch = _model_garden_flag_values(tfm_flags)
  for name in names:
    flag = copy.deepcopy(scratch[name])
    flag_values[name] = flag
    flag_values.register_flag_by_module(MODEL_GARDEN_MODULE, flag)


_MODEL_GARDEN_FLAGS = []


def define_backend_flags(flag_values: flags.FlagValues, module_name: str,
                         quantized_help: str) -> None:
  """`--backend` and `--quantized`, as `encode` and `eval` take them: what
  computes the embeddings of an export (`inference.embedders.load_embedder`)."""
  flags.DEFINE_enum("backend", "auto", ["auto", "saved_model", "tflite",
                                        "onnx"],
                    "What computes the embeddings of an export: its "
                    "SavedModels, or its TFLite or ONNX artifact (export "
                    "--formats). auto: the fastest float32 one it holds "
                    "(with --quantized, the fastest int8 one).",
                    flag_values=flag_values, module_name=module_name)
  flags.DEFINE_bool("quantized", False, "Use the artifact's int8 model "
                    f"(tflite or onnx backend){quantized_help}",
                    flag_values=flag_values, module_name=module_name)


def _model_garden_flag_values(tfm_flags) -> flags.FlagValues:
  """`tfm_flags.define_flags()`'s flags, defined once into absl's global
  FLAGS and moved from there into a FlagValues of their own."""
  global_flags = flags.FLAGS
  if "experiment" in global_flags:  # someone defined them globally already
    return global_flags
  if not _MODEL_GARDEN_FLAGS:
    saved = dict(global_flags._flags())  # pylint: disable=protected-access
    tfm_flags.define_flags()
    defined = flags.FlagValues()
    for name, flag in list(global_flags._flags().items()):  # pylint: disable=protected-access
      if name not in saved and name == flag.name:
        defined[name] = copy.deepcopy(flag)
        delattr(global_flags, name)
    _MODEL_GARDEN_FLAGS.append(defined)
  return _MODEL_GARDEN_FLAGS[0]


def require(flag_values: flags.FlagValues, name: str, what: str) -> None:
  """`--name` was given; UsageError "--name is required: `what`." otherwise.
  Called before TensorFlow loads, so that a command missing what it needs
  says so at once rather than seconds later.

  Examples:
    >>> require(FLAGS, "model_dir", "where the imported run goes")
    # UsageError: --model_dir is required: where the imported run goes.
  """
  if not flag_values[name].value:
    raise UsageError(f"--{name} is required: {what}.")


# The modes of Model Garden's `--mode` its `OrbitExperimentRunner` runs (it
# raises NotImplementedError on the others it lists).
RUNNABLE_MODES = ("train", "eval", "train_and_eval", "continuous_eval",
                  "train_and_post_eval")


def check_training_flags(flag_values: flags.FlagValues,
                         experiment: bool = True) -> None:
  """What `train` (and `stages`, `experiment=False`: its schedule names
  the experiment) cannot run without, said before TensorFlow loads:
  --experiment, --model_dir, a --mode the trainer runs, and each
  --config_file a file (a remote one is left to its reader)."""
  if experiment:
    require(flag_values, "experiment",
            "a registered experiment, e.g. --experiment=cmlm/tiny")
  require(flag_values, "model_dir",
          "checkpoints and summaries go there, and a run resumes from it")
  mode = flag_values["mode"].value if "mode" in flag_values else None
  if mode and mode not in RUNNABLE_MODES:
    raise UsageError(f"--mode={mode} is not implemented by Model Garden's "
                     f"open-source trainer; give {', '.join(RUNNABLE_MODES)}.")
  for path in flag_values.config_file or ():
    input_paths.check_file(path, "--config_file", remote=True)


def help_text(command: str, doc: str, flag_values: flags.FlagValues) -> str:
  """`python -m cmlm COMMAND --help`: the command's summary and its flags."""
  listing = flag_values.get_help(prefix="  ", include_special_flags=False)
  return (f"usage: python -m cmlm {command} [--flag=value ...]\n\n"
          f"{doc.strip()}\n\nflags of {command}:{listing}\n")


def parse(command: str, doc: str, flag_values: flags.FlagValues,
          argv: List[str]) -> None:
  """Parses `argv` (the arguments after COMMAND) into `flag_values`.

  `--help` prints the command's flags and exits with status 0. Sets absl's
  logging verbosity from `--verbosity` (warnings only when absent).

  Raises:
    UsageError: a flag the command does not define, a value its flag does
      not accept, or an argument that is not a flag.
  """
  for argument in argv:
    if argument == "--":
      break
    if argument in HELP_ARGUMENTS:
      print(help_text(command, doc, flag_values), end="")
      sys.exit(0)
  for name in flag_values:  # a second parse starts from the defaults
    flag_values[name].unparse()
  try:
    rest = flag_values([f"cmlm {command}"] + list(argv))[1:]
  except flags.Error as error:
    raise UsageError(f"{error}; see `python -m cmlm {command} --help`."
                     ) from None
  if rest:
    raise UsageError(f"{command} takes only --flags; got "
                     f"{' '.join(rest)!r}.")
  verbosity = flag_values.verbosity
  logging.set_verbosity(logging.WARNING if verbosity is None else verbosity)
