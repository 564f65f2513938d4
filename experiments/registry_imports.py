"""Registers the core's experiments and schedules (the CMLM paper's).

Model Garden's `registry_imports.py`: importing this module makes
`cmlm/tiny`, `cmlm/en_base`, `cmlm/xnli`, ... and the schedules s1-s3 known
to `exp_factory` and `training.stages`. The garden's own registry,
`cmlm/registry_imports.py`, imports it first and then each project's.
"""
from cmlm.experiments import cmlm_experiments  # noqa: F401
from cmlm.experiments import schedules  # noqa: F401
