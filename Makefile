# The two set-up commands of the README: `make serve` and `make test`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: serve test lint install

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

# Runs the whole service on the embedded default (SQLite under var/, a private Redis), or on
# DATABASE_URL / REDIS_URL when they are set. A SECRET_KEY is made once and kept in var/.
serve: $(STAMP)
	mkdir -p var
	test -s var/secret_key || $(BIN)/python -c "import secrets; print(secrets.token_urlsafe(50))" > var/secret_key
	$(BIN)/python manage.py serve

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy .
	PYTHONPATH=. $(BIN)/lint-imports

# Lint, types, then the whole suite (on DATABASE_URL when set, else SQLite; a private Redis unless
# REDIS_URL is set).
test: lint
	$(BIN)/pytest -n 2 --dist loadgroup
