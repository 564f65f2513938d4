"""The commands of `python -m cmlm`, one module each.

Every module defines only its own flags (`flag_parsing.command_flags()`) and
a `main(argv)` that parses the arguments after the command's name and calls
typed library functions; no library module reads a flags object.

`COMMANDS` holds the core's commands; a project adds its own with
`register_command` from its `commands.py` (e.g. MiSAD's `ngrams`), which its
`registry_imports.py` imports too. `register_project_commands` imports only
those `commands.py`, so that `python -m cmlm --help` and a project's command
start without the projects' objectives (seconds of TensorFlow); a command
imports what it needs itself, as the core's import `cmlm.registry_imports`.
"""
import ast
import importlib
import importlib.util
from typing import Dict, List

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


def registered_projects() -> List[str]:
  """The projects `cmlm/registry_imports.py` names, in its order, read from
  its `import cmlm.projects.<name>.registry_imports` lines rather than run
  (running them imports every objective)."""
  spec = importlib.util.find_spec("cmlm.registry_imports")
  with open(spec.origin, encoding="utf-8") as f:
    tree = ast.parse(f.read())
  names = []
  for node in tree.body:
    for alias in node.names if isinstance(node, ast.Import) else []:
      parts = alias.name.split(".")
      if len(parts) == 4 and parts[:2] == ["cmlm", "projects"] and (
          parts[3] == "registry_imports"):
        names.append(parts[2])
  return names


def register_project_commands() -> None:
  """Imports `cmlm.projects.<name>.commands` of each registered project that
  has one: its `register_command` calls, and nothing of its objectives."""
  for name in registered_projects():
    module = f"cmlm.projects.{name}.commands"
    if importlib.util.find_spec(module) is not None:
      importlib.import_module(module)
