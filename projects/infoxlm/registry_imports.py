"""Registers InfoXLM's objectives (MMLM, TLM, XLCo) and experiments."""
from cmlm.projects.infoxlm import experiments  # noqa: F401
from cmlm.projects.infoxlm import masked_lm_objective  # noqa: F401
from cmlm.projects.infoxlm import xlco_objective  # noqa: F401
