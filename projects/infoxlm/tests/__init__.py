"""Tests of the infoxlm project, beside its code."""
