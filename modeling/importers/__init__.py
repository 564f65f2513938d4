"""Pretrained BERT weights into a CMLM model_dir (`python -m cmlm import`).

- `weight_files`: Hugging Face safetensors (NumPy only) and PyTorch files.
- `huggingface`: HF BERT / sentence-transformers names and layouts.
- `model_garden`: Model Garden checkpoints.
- `tf_hub`: TF-Hub BERT-API encoder SavedModels and their preprocessors.
- `encoder_weights`: the common form (arrays by Model Garden name), its
  copy into a `ConditionalMaskedLM` and the check against the source's
  outputs.

`training/import_run.py` `import_model` writes params.yaml, vocab.txt and
ckpt-0 from them.
"""
