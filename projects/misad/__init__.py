"""MiSAD: PMI n-grams and universal representations (../shared/papers/misad_ulr_li2020.txt): README.md."""
