"""experiments package of the CMLM garden."""
import legacy_keras  # noqa: F401  (selects Keras 2 before TensorFlow loads)
