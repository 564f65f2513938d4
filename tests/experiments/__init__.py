"""Tests of experiments/."""
