"""Tests of the contextual_lensing project, beside its code."""
