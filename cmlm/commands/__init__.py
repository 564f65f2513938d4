"""The commands of `python -m cmlm`, one module each.

Every module defines only its own flags (`flag_parsing.command_flags()`) and
a `main(argv)` that parses the arguments after the command's name and calls
typed library functions; no library module reads a flags object.

`COMMANDS` holds the core's commands; a project adds its own with
`register_command` from its `registry_imports.py` (e.g. MiSAD's `ngrams`).
"""
from typing import Dict

# command name -> the module that runs it
COMMANDS: Dict[str, str] = {
    "train": "cmlm.commands.train",
    "demo": "cmlm.commands.demo",
    "vocab": "cmlm.commands.vocab",
    "stages": "cmlm.commands.stages",
    "pcr": "cmlm.commands.pcr",
    "export": "cmlm.commands.export",
    "encode": "cmlm.commands.encode",
    "import": "cmlm.commands.import_model",
    "eval": "cmlm.commands.eval",
    "fetch": "cmlm.commands.fetch",
    "prepare": "cmlm.commands.prepare",
    "mine": "cmlm.commands.mine",
}
CORE_COMMANDS = tuple(COMMANDS)


def register_command(name: str, module_name: str) -> None:
  """Makes `python -m cmlm NAME` run `module_name`'s `main(argv)`; the
  module's docstring's first line is its summary in the command list."""
  if COMMANDS.get(name, module_name) != module_name:
    raise ValueError(f"A command is already registered as {name!r}.")
  COMMANDS[name] = module_name
