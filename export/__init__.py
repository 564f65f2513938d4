"""TF-Hub and TF Serving export of trained CMLM encoders.

  checkpoint    a training run's params.yaml and checkpoint -> the CMLM model
  encoder       the encoder SavedModel (Model Garden's TF-Hub convention)
  preprocessor  the preprocessor SavedModel (TF-Hub's BERT preprocessing API)
  serving       the text-to-embedding SavedModel for TF Serving
  atomic        directories that appear complete or not at all
  exporter      `python -m cmlm export`: all three from a checkpoint
  model_card    the README.md an export carries (TF-Hub / Kaggle metadata)
  packaging     an export as .tar.gz archives for TF-Hub and Kaggle Models
  encode        `python -m cmlm encode`: sentences -> embeddings
  embedders     every model kind as one Embedder: encode, eval, pcr, the demo
                and cmlm.SentenceEncoder load through it
  text_inputs   encode's readers: .txt, .jsonl, .csv, .tsv, stdin
  postprocess   truncate, L2-normalise, quantize (`quantization`)
  embedding_outputs  encode's writers: .npy, .jsonl, .parquet
  artifacts     `export --formats=...,tflite,onnx`: the encoder as TFLite and
                ONNX models, float32 and int8 (`artifact_card`: the card's part)
  artifact_runtime  those artifacts run without TensorFlow (ai-edge-litert,
                onnxruntime), tokenized by data_pipelines.plain_tokenizer
"""
