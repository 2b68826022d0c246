# The two commands in the README: `make run` and `make test`. Everything else is a helper.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: run test check lint openapi lock clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml verifier/pyproject.toml constraints.txt
	$(BIN)/pip install --quiet -c constraints.txt -e ./verifier -e .
	touch $@

NPM_TOOLS := tests/clients/typescript

$(VENV)/.installed-dev: $(BIN)/python pyproject.toml verifier/pyproject.toml constraints.txt constraints-tools.txt $(NPM_TOOLS)/package-lock.json
	$(BIN)/pip install --quiet -c constraints.txt -e ./verifier -e '.[dev]'
	# openapi-python-client pins an older typer than the CLI's: it gets a virtualenv of its own.
	$(PYTHON) -m venv $(VENV)/tools
	$(VENV)/tools/bin/pip install --quiet -c constraints-tools.txt openapi-python-client
	# Spectral, Redocly, openapi-typescript, openapi-fetch and tsc, exactly as locked (node_modules is ignored).
	# No install scripts: none of them needs one (the one it has, @scarf/scarf, only reports downloads).
	npm ci --prefix $(NPM_TOOLS) --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $(VENV)/.installed $@

run: $(VENV)/.installed
	$(BIN)/pokna serve

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: lint
	$(BIN)/pytest -n 2 --dist loadgroup

openapi: $(VENV)/.installed
	$(BIN)/python scripts/export_openapi.py

# Re-pin every dependency after changing pyproject.toml.
lock: $(BIN)/python
	$(BIN)/pip install --quiet -e ./verifier -e '.[dev]'
	$(BIN)/pip freeze --exclude-editable --exclude pip > constraints.txt

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache $(NPM_TOOLS)/node_modules
