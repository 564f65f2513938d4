"""Contextual lensing: lenses over a frozen encoder: README.md.

Kiros 2020, "Contextual Lensing of Universal Sentence Representations",
arXiv:2002.10018.
"""
