"""Registers contextual lensing's lenses (pooling heads), the Ranker
objective and the experiments."""
from cmlm.projects.contextual_lensing import experiments  # noqa: F401
from cmlm.projects.contextual_lensing import lenses  # noqa: F401
from cmlm.projects.contextual_lensing import ranker_objective  # noqa: F401
