"""CMLM model garden: universal sentence encoders trained with Conditional MLM.

Everything the garden offers lives under this one import namespace:

  cmlm.data_pipelines  text -> token ids -> (masked) features, as tf.data
  cmlm.modeling        Keras layers and networks; losses as plain functions
  cmlm.objectives      the objective seam, and CMLM's objectives on it
  cmlm.training        the task, the trainer, stages, run directories
  cmlm.inference       reading: any model to embeddings, a run read once
  cmlm.export          writing: TF-Hub / TF Serving SavedModels, artifacts
  cmlm.evaluation      STS, transfer, Tatoeba, mining, language distribution
  cmlm.experiments     the registered experiments (Model Garden configs)
  cmlm.projects        other papers' methods, one folder each
  cmlm.commands        `python -m cmlm COMMAND`, one module a command

`from cmlm import SentenceEncoder` is the Python API
(`cmlm/sentence_encoder.py`), and `cmlm.mteb_model(path)` the same object as
an MTEB 2 model (`cmlm/mteb_encoder.py`); both are imported on first use so
that the command line starts without TensorFlow.

In a checkout the subpackages are the repository's top-level folders beside
`cmlm/` (the design card's layout: `modeling/`, `data_pipelines/`, ...); an
installed wheel holds them inside `cmlm/` (setup.py's `package_dir`, from
`cmlm/layering.py`, the one list of the layers).
Below, a checkout's root joins this package's path, so `cmlm.modeling` is
`<checkout>/modeling` there and `<site-packages>/cmlm/modeling` when installed.

setuptools 81 and later have no `pkg_resources`, which tensorflow-hub 0.16.1
imports (installing torch, for one, upgrades setuptools past it): without
it, importing `tensorflow_hub` after `cmlm` raises `MissingPkgResources`, one
line that says what to run, and the commands print that line. With
setuptools 80, the version requirements.txt keeps, its import instead warns
that `pkg_resources` will go and to pin `setuptools<81`: the pin is already
there, so that warning (and it alone) is not shown.

Keras 2: Model Garden and `hub.KerasLayer` need it, and TensorFlow picks its
Keras when it is first imported. Every module of the garden is inside this
package, so this file, run before any of them, is the one place that sets
`TF_USE_LEGACY_KERAS=1`. Code outside the garden that imports TensorFlow
before us must set it itself.
"""
import importlib.abc
import importlib.util
import os
import sys
import warnings

if "tensorflow" in sys.modules and os.environ.get("TF_USE_LEGACY_KERAS") != "1":
  raise ImportError(
      "TensorFlow was imported before the cmlm garden with Keras 3 selected; "
      "import cmlm (or set TF_USE_LEGACY_KERAS=1) before importing "
      "tensorflow.")
os.environ["TF_USE_LEGACY_KERAS"] = "1"

_CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if (not os.path.isdir(os.path.join(__path__[0], "modeling")) and
    os.path.isfile(os.path.join(_CHECKOUT, "modeling", "__init__.py"))):
  __path__.append(_CHECKOUT)  # a checkout: cmlm.modeling is ../modeling

PKG_RESOURCES_MISSING = (
    "tensorflow-hub 0.16.1 imports pkg_resources, which setuptools 81 and "
    "later no longer have (installing torch, for one, upgrades setuptools): "
    "run  pip install 'setuptools<81'  (or add 'setuptools<81' to the pip "
    "command that upgraded it).")


class MissingPkgResources(ImportError):
  """tensorflow_hub cannot be imported: setuptools has no pkg_resources."""


class _TensorflowHubGuard(importlib.abc.MetaPathFinder):
  """Put first on `sys.meta_path` when `pkg_resources` is missing: the
  import of `tensorflow_hub`, which would fail deep inside with
  `No module named 'pkg_resources'`, fails at once saying what to run."""

  def find_spec(self, name, path=None, target=None):
    del path, target
    if name == "tensorflow_hub":
      raise MissingPkgResources(PKG_RESOURCES_MISSING)
    return None


if importlib.util.find_spec("pkg_resources") is None:
  sys.meta_path.insert(0, _TensorflowHubGuard())

# TensorFlow and the libraries on it load with Python's cycle collector
# paused (cmlm/library_loading.py), and resumed as it was.
from cmlm import library_loading  # noqa: E402  pylint: disable=g-import-not-at-top
library_loading.pause_collector_while_loading()
warnings.filterwarnings(
    "ignore", message="pkg_resources is deprecated as an API",
    category=UserWarning, module="tensorflow_hub")

__version__ = "0.1.0"
__all__ = ["SentenceEncoder", "mteb_model", "__version__"]
# What __getattr__ imports on first use: name -> its module.
_LAZY = {"SentenceEncoder": "cmlm.sentence_encoder",
         "mteb_model": "cmlm.mteb_encoder"}


def __getattr__(name):
  """`cmlm.SentenceEncoder` and `cmlm.mteb_model`, imported when first
  asked for (PEP 562)."""
  if name in _LAZY:
    import importlib  # pylint: disable=g-import-not-at-top
    return getattr(importlib.import_module(_LAZY[name]), name)
  raise AttributeError(f"module 'cmlm' has no attribute {name!r}")


def __dir__():
  return sorted(set(globals()) | set(_LAZY))
