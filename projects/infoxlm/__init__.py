"""InfoXLM: MMLM, TLM and XLCo (../shared/papers/infoxlm_chi2021.txt): README.md."""
