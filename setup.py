"""The garden's packages for setuptools (the rest is in pyproject.toml).

The layers are cmlm/layering.py's one list: each top-level folder is
installed as `cmlm.<layer>` (`package_dir`, from that list). The core's
subpackages are fixed; each project is every folder of projects/ holding an
`__init__.py`, found when the wheel is built, so deleting a project folder
(and its line in cmlm/registry_imports.py) leaves the garden installable
(each project's README.md goes in beside its code: pyproject.toml's
package-data).
"""
import os
import runpy

from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))
# Read by path: the garden is not installed yet when this runs.
PACKAGE_DIR = runpy.run_path(
    os.path.join(HERE, "cmlm", "layering.py"))["package_dir"]()
SUBPACKAGES = [
    "cmlm.commands", "cmlm.modeling.importers", "cmlm.export.cards",
    "cmlm.experiments.configs",  # data only: the experiments as YAML
    # data only: the embedded corpus and vocabulary (cmlm/tiny, the demo)
    "cmlm.data.corpus_en", "cmlm.data.corpus_en.inaugural",
    "cmlm.data.sts_b_dev",  # data only: STS-B dev, the demo's STS figure
]
CORE_PACKAGES = list(PACKAGE_DIR) + SUBPACKAGES
PROJECTS = sorted(
    name for name in os.listdir(os.path.join(HERE, "projects"))
    if os.path.isfile(os.path.join(HERE, "projects", name, "__init__.py")))

setup(
    package_dir=PACKAGE_DIR,
    packages=CORE_PACKAGES + [f"cmlm.projects.{name}" for name in PROJECTS])
