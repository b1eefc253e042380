# One-command checks. Every target creates .venv and installs the project first.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTEST_ARGS ?=

.PHONY: install lint typecheck test demo bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The package strictly; tests/ and benchmarks/ under the relaxed overrides of pyproject.toml.
typecheck: $(STAMP)
	$(BIN)/mypy pytest_agentctx
	$(BIN)/mypy tests benchmarks

test: lint typecheck
	$(BIN)/python -m pytest -n 2 --agent-integration $(PYTEST_ARGS)

# Runs the example agents' test suites offline and shows their results.
demo: $(STAMP)
	$(BIN)/python -m pytest examples -v -p no:cacheprovider $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
