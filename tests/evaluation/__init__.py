"""Tests of evaluation/."""
