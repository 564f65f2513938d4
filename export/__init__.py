"""export package of the CMLM garden."""
import cmlm  # noqa: F401  (selects Keras 2 before TensorFlow loads; see cmlm/__init__.py)
