"""Contextual lensing: lenses over a frozen encoder (../shared/papers/contextual_lensing_kiros2020.txt): README.md."""
