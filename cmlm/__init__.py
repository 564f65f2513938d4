"""CMLM model garden: universal sentence encoders trained with Conditional MLM.

`python -m cmlm COMMAND` is the command line (`cmlm/__main__.py`, one module
a command in `cmlm/commands/`). `from cmlm import SentenceEncoder` is the
Python API (`cmlm/sentence_encoder.py`), imported on first use so that the
command line starts without TensorFlow. Keras 2 is selected by
`legacy_keras`, which every package of the garden imports first.
"""
import legacy_keras  # noqa: F401  (selects Keras 2 before TensorFlow loads)

__version__ = "0.1.0"
__all__ = ["SentenceEncoder", "__version__"]


def __getattr__(name):
  """`cmlm.SentenceEncoder`, imported when first asked for (PEP 562)."""
  if name == "SentenceEncoder":
    from cmlm.sentence_encoder import SentenceEncoder  # pylint: disable=g-import-not-at-top
    return SentenceEncoder
  raise AttributeError(f"module 'cmlm' has no attribute {name!r}")


def __dir__():
  return sorted(set(globals()) | {"SentenceEncoder"})
