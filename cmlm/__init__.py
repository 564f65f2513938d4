"""CMLM model garden: universal sentence encoders trained with Conditional MLM.

`python -m cmlm COMMAND` is the command line (`cmlm/__main__.py`, one module
a command in `cmlm/commands/`). Keras 2 is selected by `legacy_keras`, which
every package of the garden imports first.
"""
import legacy_keras  # noqa: F401  (selects Keras 2 before TensorFlow loads)

__version__ = "0.1.0"
