"""SimCSE and CMLM-CSE: README.md.

Zhang and Chen 2023, "CMLM-CSE: Based on Conditional MLM Contrastive
Learning for Sentence Embeddings", doi:10.5121/csit.2023.130805.
"""
