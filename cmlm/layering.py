"""The garden's layers: the one list of them, bottom to top.

Each layer but the top one is a top-level folder of the checkout, imported
as `cmlm.<layer>`; `cmlm` itself (the command line, the API, the registry)
is the top. setup.py installs each folder as its package (`package_dir`,
read from here, not written again), tests/test_layering.py checks every
import against the layers, and the tests that copy or import the core take
their folders from here. Plain data, no import: setup.py reads this file
before the garden is installed.
"""

LAYERS = ("data_pipelines", "modeling", "objectives", "training",
          "inference", "export", "evaluation", "experiments", "projects",
          "cmlm")
# Not a layer: the embedded corpus and vocabulary, installed as cmlm.data.
DATA_FOLDER = "data"


def package_dir() -> dict:
  """setuptools' `package_dir`: `cmlm.<layer>` is the folder `<layer>`, and
  `cmlm.data` the folder `data`."""
  packages = {"cmlm": "cmlm"}
  packages.update({f"cmlm.{layer}": layer for layer in LAYERS[:-1]})
  packages[f"cmlm.{DATA_FOLDER}"] = DATA_FOLDER
  return packages


def folders() -> tuple:
  """The folders the wheel is built from: every layer's and data/."""
  return tuple(package_dir().values())
