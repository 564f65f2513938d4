"""Tests of the simcse_cse project, beside its code."""
