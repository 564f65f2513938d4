"""Tests of the misad project, beside its code."""
