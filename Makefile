# Entry points. Every target that runs code depends on `setup`, which builds
# .venv from setup.cfg on a fresh machine (CPU TensorFlow 2.15.1).
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

# Settings of data / pretrain / finetune / lcqmc-finetune are the scripts' own (see
# `bash scripts/<name>.sh --help`; one name per setting across the scripts):
# give them as `make lcqmc-finetune EPOCHS=2 ...` or
# `make finetune TASK=classification DATA_DIR=... AFTER=... SEEDS=1,2,3 OUT=...`;
# make passes command-line variables to the scripts' environment, so no default
# is repeated here.

.PHONY: setup test test-fast demo data pretrain finetune lcqmc-finetune bench bench-google clean

setup: $(STAMP)

$(STAMP): setup.cfg setup.py pyproject.toml $(wildcard data_gen/native/*.c) $(wildcard data_gen/native/*.h)
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), "Python 3.11 is required (TensorFlow 2.15); found " + sys.version.split()[0]' \
	  || { echo "set PYTHON=/path/to/python3.11"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[cpu,dev,plots,beam,spm,dask]'
	@touch $(STAMP)

test: setup
	# one test file per worker (module fixtures run once); the 25 slowest listed: the suite's budget is 10 minutes
	$(PY) -m pytest -q -n 2 --dist loadfile --durations=25 tests

test-fast: setup
	# the fast tier while editing (tests/conftest.py: not slow, not live); CI runs make test
	$(PY) -m pytest -q -n 2 --dist loadfile -m "not slow and not live" tests

demo: setup
	PYTHON=$(abspath $(PY)) bash scripts/demo.sh

data: setup
	PYTHON=$(abspath $(PY)) bash scripts/create_pretrain_data.sh

pretrain: setup
	PYTHON=$(abspath $(PY)) bash scripts/pretrain.sh

finetune: setup
	PYTHON=$(abspath $(PY)) bash scripts/finetune.sh

lcqmc-finetune: setup
	PYTHON=$(abspath $(PY)) bash scripts/lcqmc_finetune.sh

bench: setup
	$(PY) bench/data_gen_bench.py
	$(PY) bench/pretrain_bench.py
	$(PY) bench/finetune_bench.py

# The same benchmarks run on google-research/bert's own scripts (downloaded into .cache/).
bench-google: setup
	$(PY) bench/google_baseline.py --paired

clean:
	rm -rf output results .pytest_cache .cache
