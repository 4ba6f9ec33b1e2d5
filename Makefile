# Entry points. Every target that runs code depends on `setup`, which builds the two
# runtimes from setup.cfg on a fresh machine (README), each where its Python is found on PATH
# or in pyenv's versions folder (scripts/find_python.py): .venv, TensorFlow 2.15.1 on Python
# 3.11 (tf.estimator, TPUEstimator), and .venv-tf2.21, TensorFlow 2.21.0 on the newest of
# Python 3.13/3.12 (numpy 2, Keras 3). `make test` runs both; the other targets run .venv
# (.venv-tf2.21 where it is the only one built).
SHELL := /bin/bash
PYTHON ?= $(shell python3 scripts/find_python.py 3.11 2>/dev/null)
PYTHON_TF221 ?= $(shell python3 scripts/find_python.py 3.13 3.12 2>/dev/null)
VENV ?= .venv
VENV_TF221 ?= .venv-tf2.21
PY = $(shell [ -f $(VENV)/.installed ] || [ ! -f $(VENV_TF221)/.installed ] && echo $(VENV) || echo $(VENV_TF221))/bin/python
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
	@[ -f $(VENV)/.installed ] || [ -f $(VENV_TF221)/.installed ] \
	  || { echo "setup: no environment built: install Python 3.11 or 3.13/3.12 (see above)"; exit 1; }

# $(call build_venv,INTERPRETER,FOLDER,PYTHON VERSIONS): a venv of INTERPRETER (one of the
# versions: setup.cfg's markers pick the runtime by Python) with the package editable and its
# extras; the stamp is written last, so an interrupted install is redone next time.
define build_venv
	@$(1) -c 'import sys; v = "%d.%d" % sys.version_info[:2]; sys.exit(v not in "$(3)".split() and "setup: $(1) is Python " + v + "; $(2) is built with one of Python $(3)")'
	$(1) -m venv $(2)
	$(2)/bin/python -m pip install --quiet --upgrade pip
	$(2)/bin/python -m pip install --quiet -e '$(EXTRAS)'
	@touch $(2)/.installed
	@$(2)/bin/python -c 'import sys, numpy, tensorflow as tf; print("setup: built $(2): Python %s, TensorFlow %s, numpy %s" % (sys.version.split()[0], tf.__version__, numpy.__version__))' 2>/dev/null
endef

# $(call skip_venv,FOLDER,WHAT,VERSIONS,VARIABLE): says why FOLDER is not built; its stamp stays
# absent, so the next `make setup` looks for the interpreter again.
skip_venv = @echo "setup: $(1) ($(2)) not built: no Python $(3) on PATH or in pyenv's versions folder; set $(4)=/path/to/python to build it"

$(VENV)/.installed: $(SETUP_INPUTS)
	$(if $(PYTHON),$(call build_venv,$(PYTHON),$(VENV),3.9 3.10 3.11),$(call skip_venv,$(VENV),TensorFlow 2.15 with tf.estimator,3.11,PYTHON))

$(VENV_TF221)/.installed: $(SETUP_INPUTS)
	$(if $(PYTHON_TF221),$(call build_venv,$(PYTHON_TF221),$(VENV_TF221),3.12 3.13),$(call skip_venv,$(VENV_TF221),TensorFlow 2.21,3.13 or 3.12,PYTHON_TF221))

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
