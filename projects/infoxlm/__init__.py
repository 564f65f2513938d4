"""InfoXLM: MMLM, TLM and XLCo: README.md.

Chi et al. 2021, "InfoXLM: An Information-Theoretic Framework for
Cross-Lingual Language Model Pre-Training", arXiv:2007.07834.
"""
