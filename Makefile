# Two commands on a fresh machine (Python 3.11 with venv):
#   make demo   installs what is missing, then runs the main job
#   make test   installs what is missing, then runs the tests
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-requirements

.PHONY: demo test test-fast bench install clean

install: $(STAMP)

$(STAMP): requirements.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	@touch $(STAMP)

demo: $(STAMP)
	$(PY) -m cmlm demo

test: $(STAMP)
	$(PY) -m pytest -q tests

# Everything but the end-to-end tests marked slow.
test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not slow" tests

bench: $(STAMP)
	$(PY) benchmarks/train_step.py

clean:
	rm -rf runs .pytest_cache
