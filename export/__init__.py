"""TF-Hub and TF Serving export of trained CMLM encoders.

  checkpoint    a training run's params.yaml and checkpoint -> the CMLM model
  encoder       the encoder SavedModel (Model Garden's TF-Hub convention)
  preprocessor  the preprocessor SavedModel (TF-Hub's BERT preprocessing API)
  serving       the text-to-embedding SavedModel for TF Serving
  atomic        directories that appear complete or not at all
  exporter      `python -m cmlm export`: all three from a checkpoint
  encode        `python -m cmlm encode`: a file of sentences -> .npy
"""
import legacy_keras  # noqa: F401  (selects Keras 2 before TensorFlow loads)
