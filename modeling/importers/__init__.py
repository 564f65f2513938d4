"""Pretrained BERT weights into a CMLM model_dir (`python -m cmlm import`).

- `weight_files`: Hugging Face safetensors (NumPy only) and PyTorch files.
- `huggingface`: HF BERT / sentence-transformers names and layouts.
- `model_garden`: Model Garden checkpoints and TF-Hub BERT SavedModels.
- `encoder_weights`: the common form (arrays by Model Garden name) and its
  copy into a `ConditionalMaskedLM`.
- `importer`: `import_model`, which writes params.yaml, vocab.txt and ckpt-0.
"""
