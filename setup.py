"""The garden's packages for setuptools (the rest is in pyproject.toml).

The core's packages are fixed; each project is every folder of projects/
holding an `__init__.py`, found when the wheel is built, so deleting a
project folder (and its line in cmlm/registry_imports.py) leaves the
garden installable (each project's README.md goes in beside its code:
pyproject.toml's package-data).
"""
import os

from setuptools import setup

CORE_PACKAGES = [
    "cmlm", "cmlm.commands",
    "cmlm.data_pipelines", "cmlm.modeling", "cmlm.modeling.importers",
    "cmlm.objectives", "cmlm.training", "cmlm.inference", "cmlm.export",
    "cmlm.evaluation",
    "cmlm.experiments",
    "cmlm.experiments.configs",  # data only: the experiments as YAML
    "cmlm.projects",
    # data only: the embedded corpus and vocabulary (cmlm/tiny, the demo)
    "cmlm.data", "cmlm.data.corpus_en", "cmlm.data.corpus_en.inaugural",
]
HERE = os.path.dirname(os.path.abspath(__file__))
PROJECTS = sorted(
    name for name in os.listdir(os.path.join(HERE, "projects"))
    if os.path.isfile(os.path.join(HERE, "projects", name, "__init__.py")))

setup(
    packages=CORE_PACKAGES + [f"cmlm.projects.{name}" for name in PROJECTS])
