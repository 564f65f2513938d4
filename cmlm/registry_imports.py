"""Registers everything the garden offers, from this one module.

Model Garden's `registry_imports.py`: the commands, the Python API and the
scripts import this module by name; nothing in the core does. The core's
experiments come first, then one line per project. A project
(`projects/<name>/`) registers its objectives, experiments, pooling heads,
evaluation tasks and commands in its own `registry_imports.py` (its commands
through its `commands.py`, which the command line imports alone for each
project line below, read rather than run); deleting the project's folder and
its line below leaves the rest of the garden working
(tests/test_projects_removable.py).
"""
import cmlm.experiments.registry_imports  # noqa: F401  (the core: CMLM)
import cmlm.projects.contextual_lensing.registry_imports  # noqa: F401
import cmlm.projects.infoxlm.registry_imports  # noqa: F401
import cmlm.projects.misad.registry_imports  # noqa: F401
import cmlm.projects.simcse_cse.registry_imports  # noqa: F401
