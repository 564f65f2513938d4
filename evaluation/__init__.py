"""evaluation package of the CMLM garden: the paper's benchmarks, any encoder.

`python -m cmlm eval --model=... --tasks=...` (see `evaluation/runner.py`)
reproduces the evaluation protocols of Yang et al. 2021: STS (table 2),
SentEval transfer (table 1), Tatoeba retrieval (table 5), the language
distribution of retrieved sentences (figure 2) and BUCC-style parallel mining
(Kiros et al. 2020, section 4.4); `--mteb_tasks` adds MTEB 2's tasks by name
(`evaluation/mteb_tasks.py`).
"""
