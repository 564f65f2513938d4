"""The user's config inputs, `--config_file` and `--params_override`, read
with one sentence for each fault.

Model Garden's `hyperparams.override_params_dict` takes either input as a
YAML file, a YAML or JSON string, or `a.b=c,...` pairs; what it cannot read
it raises as TensorFlow's or PyYAML's own error, pages long: a file that
is not there (or a word it took for one), a directory, YAML it cannot
parse, a list where keys were expected. And it sets any value on any key:
`trainer.train_steps=abc` is accepted, and fails as a TypeError once the
run starts. `read_config_file` and `read_params_override` return the
mapping each input holds, or raise ValueError naming the flag, the file,
and the line; `check_values` then refuses what the built config would
only fail on later, or silently ignore:

  * a word where the experiment has a number or a boolean;
  * `task.train_data` / `task.validation_data` changed: Model Garden's
    experiments read their data there, but here each objective reads its
    own, under `task.objectives.<name>.train_data`; the task's two only say
    which split is which, so what a user sets there would be ignored.
"""
import dataclasses
import difflib
import re
from typing import Any, Dict, Iterator, Optional, Tuple

import tensorflow as tf
import yaml

from official.modeling.hyperparams import params_dict

# Model Garden's YAML loader: PyYAML's FullLoader, with `1e-4` read as a
# float (params_dict adds the resolver to it when imported).
_LOADER = yaml.FullLoader
_PLACEHOLDER_DATA = ("train_data", "validation_data")
# Model Garden's `override(..., is_strict=True)` on a key the config lacks.
_UNKNOWN_KEY = re.compile(r"The key '([^']+)' does not exist in ")


def read_config_file(path: str, flag: str = "--config_file") -> Dict:
  """The mapping the YAML file `path` holds ({} for an empty file); any
  fault (not there, a directory, not UTF-8, not YAML, not a mapping) is
  ValueError, one sentence naming `flag`."""
  return _mapping(read_yaml(path, f"{flag}={path}"), f"{flag}={path}")


def read_yaml(path: str, what: str) -> Any:
  """What the YAML file `path` holds (None for an empty file), read as
  Model Garden reads a config; a file that is not there, a directory, not
  UTF-8 or not YAML is ValueError, one sentence naming `what` (the flag
  and the path, `--schedule=s.yaml`, or the path of a file no flag names):
  "--schedule=s.yaml is not valid YAML at line 2, column 4: expected ','
  or ']', but got ':'."
  """
  if not tf.io.gfile.exists(path):
    raise ValueError(f"{what} does not exist.")
  if tf.io.gfile.isdir(path):
    raise ValueError(f"{what} is a directory; give a YAML file.")
  try:
    with tf.io.gfile.GFile(path, "r") as f:
      return yaml.load(f, Loader=_LOADER)
  except UnicodeDecodeError:
    raise ValueError(f"{what} is not a UTF-8 text file.") from None
  except yaml.YAMLError as error:
    raise ValueError(f"{what} is not valid YAML{_where(error)}.") from None


def read_params_override(text: str) -> Dict:
  """The mapping `--params_override` gives: `a.b=c,...` pairs, a YAML or
  JSON mapping, or the path of a YAML file (Model Garden's three forms,
  tried in its order); what is none of them is ValueError, one sentence.

  Examples:
    >>> read_params_override("trainer.train_steps=20,task.seed=3")
    {'trainer': {'train_steps': 20}, 'task': {'seed': 3}}
  """
  if not text:
    return {}
  try:
    text_or_json = params_dict.nested_csv_str_to_json_str(text)
  except ValueError:
    text_or_json = text
  try:
    value = yaml.load(text_or_json, Loader=_LOADER)
  except yaml.YAMLError as error:
    value = error
  if isinstance(value, dict):
    return value
  if tf.io.gfile.exists(text):
    return read_config_file(text, "--params_override")
  forms = ("key=value pairs (trainer.train_steps=20,task.seed=3), a YAML or "
           "JSON mapping, or a YAML file that exists")
  if isinstance(value, yaml.YAMLError):
    raise ValueError(f"--params_override={text} is not valid YAML"
                     f"{_where(value)}; give {forms}.")
  raise ValueError(f"--params_override={text} is not {forms}.")


def override(params, mapping: Dict, flag: str) -> None:
  """`params.override(mapping, is_strict=True)`, where a key the config does
  not have is ValueError, one sentence naming `flag`, the key's full path
  and the keys beside it (Model Garden says only the key and its config's
  class, and suggests an option of its Python API).

  Examples:
    >>> from cmlm.experiments import registry_imports
    >>> from official.core import exp_factory
    >>> override(exp_factory.get_exp_config("cmlm/tiny"),
    ...          {"trainer": {"train_step": 5}}, "--params_override")
    Traceback (most recent call last):
    ...
    ValueError: --params_override sets trainer.train_step, a key the config does not have; did you mean trainer.train_steps?
  """
  try:
    params.override(mapping, is_strict=True)
  except KeyError as error:
    unknown = _UNKNOWN_KEY.match(str(error.args[0]) if error.args else "")
    paths = {path[:path.index(unknown.group(1)) + 1]
             for path, _ in _leaves(mapping)
             if unknown.group(1) in path} if unknown else ()
    if len(paths) != 1:
      raise
    raise ValueError(_unknown_key_line(params, paths.pop(), flag)) from None


def _unknown_key_line(params, path: Tuple[str, ...], flag: str) -> str:
  owner = _owner(params, path)
  keys = sorted(owner.as_dict()) if hasattr(owner, "as_dict") else []
  parent = ".".join(path[:-1]) or "the config"
  line = f"{flag} sets {'.'.join(path)}, a key the config does not have"
  close = difflib.get_close_matches(path[-1], keys, n=1)
  if close:
    return f"{line}; did you mean {'.'.join(path[:-1] + (close[0],))}?"
  return f"{line}; {parent} has {', '.join(keys)}." if keys else f"{line}."


def check_values(params, defaults) -> None:
  """Raises ValueError, one sentence, for a value of `params` that the run
  would fail on or ignore: a word where `defaults` (the experiment as
  registered) has a number or a boolean, and a change to the task's
  placeholder `train_data` / `validation_data` (see the module's text)."""
  given, registered = params.as_dict(), defaults.as_dict()
  for path, value in _leaves(given):
    default = lookup(registered, path)
    if isinstance(default, (bool, int, float)) and isinstance(value, str):
      kind = "true or false" if isinstance(default, bool) else "a number"
      shown = str(default).lower() if isinstance(default, bool) else default
      raise ValueError(f"{'.'.join(path)} must be {kind}, like the "
                       f"experiment's {shown}; got {value!r}.")
    if isinstance(default, dict) and value is not None:
      fields = ", ".join(list(default)[:3])
      raise ValueError(f"{'.'.join(path)} must be a mapping of its fields "
                       f"({fields}, ...), not a single value; got "
                       f"{value!r}.")
    if isinstance(value, float) and _declared_int(params, path):
      like = "" if default is None else f", like the experiment's {default}"
      raise ValueError(f"{'.'.join(path)} must be a whole number{like}; "
                       f"got {value!r}.")
  active = getattr(params.task, "active_objectives", dict)
  for name in _PLACEHOLDER_DATA:
    for path, value in _leaves(given["task"].get(name) or {}, ("task", name)):
      if value != lookup(registered, path):
        objectives = ", ".join(sorted(active())) or "none"
        raise ValueError(
            f"{'.'.join(path)} is not read: each objective reads its own "
            f"data under task.objectives.<name>.{name} (this run's "
            f"objectives: {objectives}); set {path[-1]} there.")


def _declared_int(params, path: Tuple[str, ...]) -> bool:
  """Whether the config field at `path` is declared `int` (or
  `Optional[int]`): Model Garden sets a float there as given, and a run
  with `train_steps` 1.5 loops forever waiting for step 1.5."""
  owner = _owner(params, path)
  if not dataclasses.is_dataclass(owner):
    return False
  declared = {field.name: field.type for field in dataclasses.fields(owner)}
  kind = declared.get(path[-1])
  return kind in (int, "int") or kind in (Optional[int], "Optional[int]")


def _owner(params, path: Tuple[str, ...]):
  """The config holding the field at `path` (None where a key is missing)."""
  for key in path[:-1]:
    params = getattr(params, key, None)
  return params


def _mapping(value: Any, what: str) -> Dict:
  if value is None:
    return {}
  if not isinstance(value, dict):
    raise ValueError(f"{what} must hold config keys (task:, trainer:, "
                     f"runtime:); it holds a {type(value).__name__}.")
  return value


def _where(error: yaml.YAMLError) -> str:
  mark = getattr(error, "problem_mark", None)
  problem = getattr(error, "problem", None)
  at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
  return f"{at}: {problem}" if problem else at


def _leaves(tree: Dict, prefix: Tuple[str, ...] = ()
            ) -> Iterator[Tuple[Tuple[str, ...], Any]]:
  for key, value in tree.items():
    if isinstance(value, dict):
      yield from _leaves(value, prefix + (key,))
    else:
      yield prefix + (key,), value


def lookup(tree: Dict, path: Tuple[str, ...]) -> Any:
  """The value at `path` of nested dicts `tree`, or None where it has none."""
  for key in path:
    if not isinstance(tree, dict) or key not in tree:
      return None
    tree = tree[key]
  return tree
