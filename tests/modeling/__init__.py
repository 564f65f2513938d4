"""Tests of modeling/."""
