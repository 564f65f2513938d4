"""Tests of objectives/."""
