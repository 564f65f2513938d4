"""Every script's `--help`, one after another in this one process, as each
runs as `__main__` (tests/test_scripts.py runs it in a fresh interpreter):

    python tests/scripts_help.py benchmarks/train_step.py experiments/...

A JSON line per script: its exit status, whether it printed its usage, its
output's tail, and the order of its imports that matters: TensorFlow picks
its Keras when it is first imported, so every script must import `cmlm`
(which selects Keras 2) before anything that loads TensorFlow. That order
is read from the import statements the script runs, its own and those of
the modules it loads first (an import hook on `builtins.__import__`), so it
holds as in a fresh interpreter although TensorFlow stays loaded from one
script to the next. Between scripts, `sys.path`, `os.environ` and the
modules of the repository outside `cmlm` and of the script's folder (a
script's own helpers) are put back,
so a script finds its own folder's modules as when run alone.

Nothing is imported here but the standard library before the first script.
"""
import builtins
import contextlib
import io
import json
import os
import runpy
import sys
import traceback

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Top-level packages that load TensorFlow when imported.
LOADS_TENSORFLOW = frozenset({
    "tensorflow", "tf_keras", "keras", "official", "orbit", "tensorflow_hub",
    "tensorflow_text", "tensorflow_datasets", "tensorflow_serving", "tf2onnx",
    "transformers", "sentence_transformers", "mteb"})
TAIL = 1500
# Where the libraries are, and the repository: a module under the first
# stays loaded between scripts (a `.venv` inside the checkout included).
_INSTALLED = tuple({os.path.realpath(prefix) + os.sep
                    for prefix in (sys.prefix, sys.base_prefix,
                                   sys.exec_prefix)})
_REPOSITORY = os.path.realpath(REPO_ROOT) + os.sep


def import_order(names):
  """(the first import that loads TensorFlow, whether `cmlm` came before
  it) among absolute import names in the order they ran; (None, True)
  when nothing loads TensorFlow."""
  cmlm_seen = False
  for name in names:
    root = name.split(".")[0]
    if root == "cmlm":
      cmlm_seen = True
    elif root in LOADS_TENSORFLOW:
      return name, cmlm_seen
  return None, True


def _put_back(name, module, folder):
  """Whether a module a script loaded goes when it ends: the repository's
  (outside `cmlm`) and its own folder's, as a next script run alone would
  load them afresh; not the libraries', wherever the environment is (a
  `.venv` inside the checkout is under the repository too)."""
  path = os.path.realpath(getattr(module, "__file__", None) or os.sep)
  return (path.startswith((_REPOSITORY, os.path.realpath(folder) + os.sep))
          and not path.startswith(_INSTALLED)
          and "site-packages" not in path.split(os.sep)
          and name != "cmlm" and not name.startswith("cmlm."))


def run_help(script):
  """`python SCRIPT --help` in this process: a dict of what it did."""
  names = []
  real_import = builtins.__import__

  def recording_import(name, globals_=None, locals_=None, fromlist=(),
                       level=0):
    if level == 0:
      names.append(name)
    return real_import(name, globals_, locals_, fromlist, level)

  path, argv, environ = list(sys.path), list(sys.argv), dict(os.environ)
  modules = set(sys.modules)
  folder = os.path.dirname(os.path.abspath(script))
  sys.argv = [script, "--help"]
  sys.path.insert(0, folder)
  out, status, error = io.StringIO(), 0, ""
  builtins.__import__ = recording_import
  try:
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
      runpy.run_path(script, run_name="__main__")
  except SystemExit as exited:
    status = exited.code if isinstance(exited.code, int) else (
        0 if exited.code is None else 1)
  except BaseException:  # pylint: disable=broad-except
    status, error = 1, traceback.format_exc()
  finally:
    builtins.__import__ = real_import
    sys.path[:], sys.argv = path, argv
    os.environ.clear()
    os.environ.update(environ)
    for name in set(sys.modules) - modules:
      if _put_back(name, sys.modules[name], folder):
        del sys.modules[name]
  first, cmlm_before = import_order(names)
  output = out.getvalue() + error
  return {"script": script, "status": status,
          "usage": "usage" in output.lower(),
          "loads_tensorflow_first": None if cmlm_before else first,
          "output": output[-TAIL:]}


def main(scripts):
  # As `python SCRIPT` has it: the script's folder first, not this one's.
  if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(
      os.path.abspath(__file__)):
    del sys.path[0]
  for script in scripts:
    print(json.dumps(run_help(script)), flush=True)


if __name__ == "__main__":
  main(sys.argv[1:])
