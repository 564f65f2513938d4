"""SimCSE and CMLM-CSE (../shared/papers/cmlm_cse_2023.txt): README.md."""
