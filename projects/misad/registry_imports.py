"""Registers MiSAD's objective, experiments, evaluation tasks and the
`ngrams` and `prepare_ngrams` commands."""
from cmlm.projects.misad import commands  # noqa: F401
from cmlm.projects.misad import eval_tasks  # noqa: F401
from cmlm.projects.misad import experiments  # noqa: F401
from cmlm.projects.misad import misad_objective  # noqa: F401
