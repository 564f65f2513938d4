"""Registers every experiment and schedule of the garden, explicitly.

The commands (`cmlm/commands/`) import this module by name; nothing below the
command line does. Adding experiments: a module here, imported below.
"""
import legacy_keras  # noqa: F401  (selects Keras 2 before TensorFlow loads)

from experiments import cmlm_experiments  # noqa: F401
from experiments import cse_experiments  # noqa: F401
from experiments import infoxlm_experiments  # noqa: F401
from experiments import lensing_experiments  # noqa: F401
from experiments import misad_experiments  # noqa: F401
from experiments import schedules  # noqa: F401
