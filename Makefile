# Set-up and the two everyday commands.  `make demo` and `make test` create .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The benchmark corpora for the tests and the benchmark: the checkout's shared copy unless set.
# (The package itself never guesses a folder: users pass --corpora, set NNC_CORPORA, or use the
# cache that `nncompress bench fetch` fills.)
NNC_CORPORA ?= $(CURDIR)/../shared/corpora
export NNC_CORPORA

.PHONY: demo test bench install install-bench clean

$(BIN)/nncompress: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,bench]'
	touch $@

install: $(BIN)/nncompress

demo: install
	$(BIN)/nncompress demo

test: install
	$(BIN)/python -m pytest -q

# paq9a's PyPI sdist needs Cython at build time without declaring it.
install-bench: install
	$(BIN)/pip install --quiet cython setuptools wheel
	$(BIN)/pip install --quiet --no-build-isolation paq

bench: install-bench
	$(BIN)/python bench/run_bench.py

clean:
	rm -rf $(VENV) build *.egg-info
