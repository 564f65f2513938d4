"""CMLM model garden: universal sentence encoders trained with Conditional MLM.

Model Garden (``official``) and ``hub.KerasLayer`` need Keras 2 (``tf_keras``).
TensorFlow picks its Keras when it is first imported, so ``TF_USE_LEGACY_KERAS``
must be set before that. This module is the one place it is set; every package
of the garden (``modeling``, ``data_pipelines``, ``export``, ``experiments``)
imports ``cmlm`` first, so any entry point gets Keras 2.
"""
import os
import sys

if "tensorflow" in sys.modules and os.environ.get("TF_USE_LEGACY_KERAS") != "1":
  raise ImportError(
      "TensorFlow was imported before the cmlm garden with Keras 3 selected; "
      "import cmlm (or set TF_USE_LEGACY_KERAS=1) before importing tensorflow.")
os.environ["TF_USE_LEGACY_KERAS"] = "1"

__version__ = "0.1.0"
