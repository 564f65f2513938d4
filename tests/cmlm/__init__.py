"""Tests of cmlm/."""
