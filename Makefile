# Entry points. Every target that runs code depends on `setup`, which builds the two
# runtimes from setup.cfg on a fresh machine (README): .venv, TensorFlow 2.15.1 on Python 3.11
# (tf.estimator, TPUEstimator), which every target below runs; and .venv-tf2.21, TensorFlow
# 2.21.0 on the newest of Python 3.13/3.12 (numpy 2, Keras 3), built when such a Python is
# on PATH or in pyenv's versions folder (scripts/find_python.py), which `make test` runs too.
SHELL := /bin/bash
PYTHON ?= $(shell python3 scripts/find_python.py 3.11)
PYTHON_TF221 ?= $(shell python3 scripts/find_python.py 3.13 3.12 2>/dev/null)
VENV ?= .venv
VENV_TF221 ?= .venv-tf2.21
PY := $(VENV)/bin/python
EXTRAS := .[cpu,dev,plots,beam,spm,dask]
SETUP_INPUTS := setup.cfg setup.py pyproject.toml $(wildcard data_gen/native/*.[ch])

# Settings of data / pretrain / finetune / lcqmc-finetune are the scripts' own (see
# `bash scripts/<name>.sh --help`; one name per setting across the scripts):
# give them as `make lcqmc-finetune EPOCHS=2 ...` or
# `make finetune TASK=classification DATA_DIR=... AFTER=... SEEDS=1,2,3 OUT=...`;
# make passes command-line variables to the scripts' environment, so no default
# is repeated here.

.PHONY: setup test test-fast demo data pretrain finetune lcqmc-finetune bench bench-google clean

setup: $(VENV)/.installed $(VENV_TF221)/.installed

# $(call build_venv,INTERPRETER,FOLDER): a venv of INTERPRETER with the package editable and
# its extras; the stamp is written last, so an interrupted install is redone next time.
define build_venv
	$(1) -m venv $(2)
	$(2)/bin/python -m pip install --quiet --upgrade pip
	$(2)/bin/python -m pip install --quiet -e '$(EXTRAS)'
	@touch $(2)/.installed
	@$(2)/bin/python -c 'import sys, numpy, tensorflow as tf; print("setup: built $(2): Python %s, TensorFlow %s, numpy %s" % (sys.version.split()[0], tf.__version__, numpy.__version__))' 2>/dev/null
endef

$(VENV)/.installed: $(SETUP_INPUTS)
	@[ -n "$(PYTHON)" ] || { echo "setup: no Python 3.11 found for $(VENV) (TensorFlow 2.15): set PYTHON=/path/to/python3.11"; exit 1; }
	$(call build_venv,$(PYTHON),$(VENV))

# Optional: without Python 3.13/3.12 it says so and builds nothing (the stamp stays absent).
$(VENV_TF221)/.installed: $(SETUP_INPUTS)
	$(if $(PYTHON_TF221),$(call build_venv,$(PYTHON_TF221),$(VENV_TF221)),@echo "setup: $(VENV_TF221) (TensorFlow 2.21) not built: no Python 3.13 or 3.12 on PATH or in pyenv's versions folder; set PYTHON_TF221=/path/to/python3.13 to build it")

# $(call run_tests,PYTEST ARGUMENTS): pytest in each runtime that setup built, .venv first;
# both run even when the first fails, and the exit status is the worse of the two.
define run_tests
	@status=0; \
	for venv in $(VENV) $(VENV_TF221); do \
	  if [ ! -f $$venv/.installed ]; then echo "test: $$venv not built (see make setup): its runtime is not tested"; continue; fi; \
	  echo "test: $$venv ($$($$venv/bin/python -c 'import sys; print("Python", sys.version.split()[0])'))"; \
	  $$venv/bin/python -m pytest $(1) || status=1; \
	done; \
	exit $$status
endef

test: setup
	# one test file per worker (module fixtures run once); the 25 slowest listed: the budget is
	# 10 minutes a runtime (tests/conftest.py skips what needs tf.estimator on TensorFlow 2.21)
	$(call run_tests,-q -n 2 --dist loadfile --durations=25 tests)

test-fast: setup
	# the fast tier while editing (tests/conftest.py: not slow, not live); CI runs make test
	$(call run_tests,-q -n 2 --dist loadfile -m "not slow and not live" tests)

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
