"""Tests of data_pipelines/."""
