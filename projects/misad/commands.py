"""Registers MiSAD's commands, `ngrams` and `prepare_ngrams`, without its
objective: `python -m cmlm --help` and the commands themselves import this
module alone (`cmlm.commands.register_project_commands`)."""
from cmlm.projects.misad import ngrams_command  # noqa: F401
from cmlm.projects.misad import prepare_ngrams_command  # noqa: F401
