"""Writing a trained run out: TF-Hub and TF Serving SavedModels, artifacts.

Export only writes; reading models back (any kind, any backend) is
`cmlm.inference`'s, and a run is read once into `inference.run_record`.

  encoder       the encoder SavedModel (Model Garden's TF-Hub convention)
  preprocessor  the preprocessor SavedModel (TF-Hub's BERT preprocessing API)
  serving       the text-to-embedding SavedModel for TF Serving
  warmup        the serving model's warm-up requests (assets.extra)
  exporter      `python -m cmlm export`: all three from a checkpoint
  publish       versions written whole, published by one `current` pointer
  cards         the cards, together: `card_facts` (what a card says of a
                run, checked), `model_card` (the README.md an export
                carries), `sentence_transformers_card`, `artifact_card`
  packaging     an export as .tar.gz archives for TF-Hub and Kaggle Models
  artifacts     `export --formats=...,tflite,onnx`: the encoder as TFLite and
                ONNX models, float32 and int8
  sentence_transformers_folder  the model as a sentence-transformers folder
"""
