"""Tests of inference/: loading models, encoding files, the artifacts' runtime."""
