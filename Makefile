# One-command checks. Every target creates .venv and installs the project first.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTEST_ARGS ?=

# pytest-vcr, for the end-to-end tests of migrating a pytest-vcr suite
# (tests/e2e/test_migrate_vcr_e2e.py): it cannot be installed beside pytest-recording, which
# raises RuntimeError when both plugins load, so it goes into a folder of its own
# (VENV/pytest-vcr) that only those tests put on PYTHONPATH, and with --no-deps (vcrpy and
# pytest are the venv's). Pinned: its last release, whose cassette names the tests rely on.
define install_pytest_vcr
	rm -rf $(1)/pytest-vcr
	$(2)/python -m pip install --quiet --disable-pip-version-check --no-deps \
		--target $(1)/pytest-vcr pytest-vcr==1.0.2
endef

# The evals extra (examples/evals_*: pydantic-evals, langwatch-scenario, DeepEval) goes in
# after dev, in a second step: pip settles it in seconds from what dev installed, where
# resolving both in one go was still backtracking after 6 minutes (pyproject.toml's evals).

.PHONY: install lint typecheck docs test test-lowest demo bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,evals]'
	$(call install_pytest_vcr,$(VENV),$(BIN))
	touch $(STAMP)

# A venv made before pytest-vcr was added gets its folder here (its stamp is up to date).
PYTEST_VCR := $(VENV)/pytest-vcr/pytest_vcr.py

$(PYTEST_VCR): | $(STAMP)
	$(call install_pytest_vcr,$(VENV),$(BIN))

install: $(STAMP) $(PYTEST_VCR)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The package strictly (and its runtime __init__.py on its own: checking the package, mypy
# reads the stub __init__.pyi in its place); tests/ and benchmarks/ under the relaxed
# overrides of pyproject.toml.
typecheck: $(STAMP)
	$(BIN)/mypy pytest_agentctx
	$(BIN)/mypy pytest_agentctx/__init__.py
	$(BIN)/mypy tests benchmarks

# The documentation site (mkdocs.yml) into site/, strict: a warning (a broken link, a
# docstring griffe cannot read) fails it. Its own stamp installs only the docs extra, so
# the docs job of CI does not install the SDKs and frameworks (the dev extra includes it).
# `$(BIN)/mkdocs serve` serves the site at http://127.0.0.1:8000 while you edit.
# NO_MKDOCS_2_WARNING drops the Material theme's banner about its end of life (printed on
# every build; it is no warning of the build and strict mode does not count it).
DOCS_STAMP := $(VENV)/.docs-stamp

$(DOCS_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

test: lint typecheck docs $(PYTEST_VCR)
	$(BIN)/python -m pytest -n 2 --agent-integration $(PYTEST_ARGS)

# The lowest versions that pyproject.toml declares (constraints/lowest.txt) in a venv of
# their own, then tests/unit and tests/e2e. The package is installed as a wheel, not
# editable: pytest before 9.2 cannot rewrite the asserts of an editable plugin's modules and
# warns, which filterwarnings = error makes an error; it is reinstalled on every run, so
# the run tests the working tree. The frameworks of examples/ are not installed (they need
# newer SDKs than the lowest; make test runs their docs pages), so their pages are deselected.
# google-genai needs a newer pydantic than the package's floor: the tests run first with
# the floor and without google-genai (the gemini tests and the docs page with a Gemini
# agent, LOWEST_GEMINI, left out), then those with google-genai's floor and the lowest
# pydantic it takes (LOWEST_GEMINI_PYDANTIC). The tests of the ollama SDK (*ollama_sdk*,
# its SDK is in the frameworks extra: it needs pydantic 2.9) and of MCP (*mcp*: the mcp
# SDK needs pydantic 2.11) are left out of both, and so is the page of the evals extra's
# tools (evaluations-tools.md: pydantic-evals, langwatch-scenario, DeepEval need pydantic
# 2.12; their examples, examples/evals_*, and their e2e tests, *evals_tools*, are not run
# here), and so are the statistics' tests against scipy and statsmodels (*_reference*:
# development dependencies, not in the test extra).
LOWEST_VENV := .venv-lowest
LOWEST_BIN := $(LOWEST_VENV)/bin
LOWEST_STAMP := $(LOWEST_VENV)/.installed-stamp
LOWEST_DESELECT := not pydantic-ai.md and not openai-agents.md and not langchain.md and not bedrock.md and not strands and not mcp.md and not evaluations-tools.md
LOWEST_GEMINI := gemini or runtime.md
LOWEST_GEMINI_PYDANTIC := 2.12.5
LOWEST_PIP := $(LOWEST_BIN)/python -m pip --quiet --disable-pip-version-check

$(LOWEST_STAMP): pyproject.toml constraints/lowest.txt
	rm -rf $(LOWEST_VENV)
	$(PYTHON) -m venv $(LOWEST_VENV)
	$(LOWEST_PIP) install --upgrade pip
	$(LOWEST_PIP) install -c constraints/lowest.txt '.[openai,anthropic,tokens,compression,test]'
	touch $(LOWEST_STAMP)

LOWEST_PYTEST_VCR := $(LOWEST_VENV)/pytest-vcr/pytest_vcr.py

$(LOWEST_PYTEST_VCR): | $(LOWEST_STAMP)
	$(call install_pytest_vcr,$(LOWEST_VENV),$(LOWEST_BIN))

test-lowest: $(LOWEST_STAMP) $(LOWEST_PYTEST_VCR)
	$(LOWEST_PIP) install --no-deps --force-reinstall .
	$(LOWEST_PIP) uninstall --yes google-genai
	$(LOWEST_PIP) install -c constraints/lowest.txt pydantic
	$(LOWEST_BIN)/python -m pip freeze --disable-pip-version-check \
		| grep -iE '^(pytest|pytest-asyncio|pydantic|httpx2|freezegun|pyyaml|syrupy|filelock|orjson|openai|anthropic|tiktoken|brotli|zstandard)=='
	$(LOWEST_BIN)/python -m pytest tests/unit tests/e2e -n 2 --ignore-glob='*gemini*' \
		--ignore-glob='*ollama_sdk*' --ignore-glob='*mcp*' --ignore-glob='*evals_tools*' \
		--ignore-glob='*_reference*' -k 'not ($(LOWEST_GEMINI)) and $(LOWEST_DESELECT)' \
		$(PYTEST_ARGS)
	$(LOWEST_PIP) install "pydantic==$(LOWEST_GEMINI_PYDANTIC)" \
		"$$(grep -i '^google-genai==' constraints/lowest.txt)"
	$(LOWEST_BIN)/python -m pip freeze --disable-pip-version-check | grep -iE '^(pydantic|google-genai)=='
	$(LOWEST_BIN)/python -m pytest tests/unit tests/e2e -n 2 --ignore-glob='*ollama_sdk*' --ignore-glob='*mcp*' \
		--ignore-glob='*evals_tools*' --ignore-glob='*_reference*' \
		-k '($(LOWEST_GEMINI)) and $(LOWEST_DESELECT)'

# Runs the example agents' test suites offline and shows their results.
demo: $(STAMP)
	$(BIN)/python -m pytest examples -v -p no:cacheprovider $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) $(LOWEST_VENV) dist site .pytest_cache .mypy_cache .ruff_cache
