"""Selects Keras 2 (`tf_keras`) for TensorFlow; the one place that does it.

Model Garden (`official`) and `hub.KerasLayer` need Keras 2. TensorFlow picks
its Keras when it is first imported, so `TF_USE_LEGACY_KERAS=1` must be set
before that. Every package of the garden imports this module first (in its
`__init__.py`), so any entry point, test or notebook gets Keras 2 without
importing the command line. Code outside the garden that imports TensorFlow
before us must set `TF_USE_LEGACY_KERAS=1` itself.
"""
import os
import sys

if "tensorflow" in sys.modules and os.environ.get("TF_USE_LEGACY_KERAS") != "1":
  raise ImportError(
      "TensorFlow was imported before the cmlm garden with Keras 3 selected; "
      "import the garden (or set TF_USE_LEGACY_KERAS=1) before importing "
      "tensorflow.")
os.environ["TF_USE_LEGACY_KERAS"] = "1"
