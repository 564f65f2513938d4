"""The cards an export carries, written together from one set of facts.

  card_facts                  what a card says of a run (`CardFacts`), from
                              the run record and what the user states
  model_card                  the export's README.md (Hugging Face Hub,
                              TF-Hub, Kaggle Models)
  sentence_transformers_card  the sentence-transformers folder's README.md
  artifact_card               the TFLite and ONNX artifacts' section of both
"""
