"""MiSAD: PMI n-grams and universal representations: README.md.

Li and Zhao 2020, "Pre-training Universal Language Representation".
"""
