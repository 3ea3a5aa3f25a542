# The two set-up commands of the README: `make serve` and `make test`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: serve test lint install lock

# The runtime dependencies exactly as requirements.lock has them (the container image installs the
# same file), then the project and its dev tools on top of them.
$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --require-hashes -r requirements.lock
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

# Runs the whole service on the embedded default (SQLite under var/, a private Redis), or on
# DATABASE_URL / REDIS_URL when they are set. A SECRET_KEY is made once and kept in var/.
# `make serve PORT=8001` serves on another port; logs are readable lines here (LOG_FORMAT=text),
# JSON lines stay the default everywhere else.
PORT ?= 8000
serve: $(STAMP)
	mkdir -p var
	test -s var/secret_key || $(BIN)/python -c "import secrets; print(secrets.token_urlsafe(50))" > var/secret_key
	LOG_FORMAT=$${LOG_FORMAT:-text} $(BIN)/python manage.py serve --port $(PORT)

# After a change to pyproject.toml's dependencies: pins them and everything they need, for every
# platform, with each file's hash. Versions already locked are kept where they still fit.
lock: $(STAMP)
	$(BIN)/uv pip compile pyproject.toml --universal --python-version 3.11 --generate-hashes \
		--quiet --custom-compile-command "make lock" --output-file requirements.lock

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy .
	PYTHONPATH=. $(BIN)/lint-imports

# Lint, types, then the whole suite (on DATABASE_URL when set, else SQLite; a private Redis unless
# REDIS_URL is set).
test: lint
	$(BIN)/pytest -n 2 --dist loadgroup
