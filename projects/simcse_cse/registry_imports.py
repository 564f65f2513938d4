"""Registers the SimCSE and CMLM-CSE objectives and experiments."""
from cmlm.projects.simcse_cse import cmlm_cse_objective  # noqa: F401
from cmlm.projects.simcse_cse import experiments  # noqa: F401
from cmlm.projects.simcse_cse import simcse_objective  # noqa: F401
