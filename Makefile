# Kandev Web. `make run` to use it, `make test` to check it. See README.md.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

VENV := .venv
PY := $(VENV)/bin/python
UV_VERSION := 0.13.9
# Re-sync only when the lock or the project file changes: the stamp's name carries their hash
# (and "pyc": a .venv synced before bytecode was compiled at install is synced once more).
LOCK_HASH := $(shell cat uv.lock pyproject.toml 2>/dev/null | sha256sum | cut -c1-16)
STAMP := $(VENV)/.synced-$(LOCK_HASH)-pyc
# The agent CLIs (Claude Code, Codex, Gemini CLI) come from package-lock.json through `npm ci`, into
# node_modules/ here: never a global install, nothing fetched when a turn runs. Same stamp idea.
NPM_LOCK_HASH := $(shell cat package-lock.json package.json 2>/dev/null | sha256sum | cut -c1-16)
NPM_STAMP := node_modules/.installed-$(NPM_LOCK_HASH)
# Embedded services for `make test` / `make bench` live apart from `make run`'s, so a running app
# and a test run never share a database server or a Redis.
TEST_STATE := .kandev/test
WITH_SERVICES := $(PY) -m devtools.devservices --state-dir $(TEST_STATE) exec --
# Daphne serves only collected static files (staticfiles/): what starts one outside pytest (whose
# plugin tests/support/collected_static.py collects for the tests) collects first.
COLLECTSTATIC := $(PY) manage.py collectstatic --noinput -v 0
# Narrow a run: make test PYTEST_ARGS="tests/integration/ops -x"
PYTEST_ARGS ?=

export UV_PROJECT_ENVIRONMENT := $(VENV)
export UV_PYTHON_DOWNLOADS := never


.PHONY: help install system-deps run test test-unit test-browser test-slow test-agents bench lint typecheck shell worker superuser highlight-css screenshots

help:
	@echo "make run           start the app (embedded Postgres/Redis unless DATABASE_URL/REDIS_URL are set)"
	@echo "make test          run the default test suite (PYTEST_ARGS=... to narrow it)"
	@echo "make test-unit     the recovery library's unit tests: no Django, database or Redis"
	@echo "make test-browser  browser tests (Playwright + Debian chromium)"
	@echo "make test-slow     chaos tests (real processes killed) and the OpenAPI fuzz run"
	@echo "make test-agents   end-to-end tests with the real agent CLIs (Claude Code, Codex, Gemini CLI)"
	@echo "make bench         run benchmarks/bench_*.py and print one table"
	@echo "make lint          ruff check, ruff format --check, then make typecheck"
	@echo "make typecheck     mypy (with the Django plugin) over kandev_web, sessions_app, recovery"
	@echo "make shell         Django shell against the running app's services"
	@echo "make worker        an extra Celery worker against the running app's services"
	@echo "make superuser     create an admin (staff) login of your own, asked for interactively"
	@echo "make highlight-css regenerate static/css/highlight.css (code colours) from Pygments"
	@echo "make screenshots   retake the README's screenshots (docs/screenshots/) in a real browser"
	@echo "make system-deps   install the Debian packages agents are confined with (bubblewrap, socat, git)"
	@echo "make install       sync .venv with uv.lock and node_modules with package-lock.json (run by the others)"

install: system-deps $(STAMP) $(NPM_STAMP)

# Debian's bubblewrap and socat confine every agent; installed when missing (as root), else the
# apt-get line to run is printed and make stops.
system-deps:
	@bash scripts/system-deps.sh

# npm ci starts from an empty node_modules, so an old stamp never survives a re-install.
$(NPM_STAMP): package-lock.json package.json
	@command -v npm >/dev/null || { echo "npm not found: install Node.js 20 or newer and retry." >&2; exit 1; }
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# --compile-bytecode: with PYTHONDONTWRITEBYTECODE set (as on our machines and in the image)
# nothing else writes .pyc files, and every process start compiled its imports again: seconds of
# Daphne's first send_task went to compiling kombu's Redis transport.
$(STAMP): uv.lock pyproject.toml
	@if ! $(PY) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then \
	  python=""; \
	  for candidate in "$${PYTHON:-}" python3.12 \
	      "$${PYENV_ROOT:-$$HOME/.pyenv}"/versions/3.12*/bin/python3.12 \
	      /root/.pyenv/versions/3.12*/bin/python3.12 /usr/local/bin/python3.12 /usr/bin/python3.12; do \
	    if [ -n "$$candidate" ] && "$$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then \
	      python="$$candidate"; break; \
	    fi; \
	  done; \
	  if [ -z "$$python" ]; then \
	    echo "No Python 3.12 found. Install it (or set PYTHON=/path/to/python3.12) and retry." >&2; \
	    exit 1; \
	  fi; \
	  echo "Creating $(VENV) with $$python"; \
	  rm -rf $(VENV); "$$python" -m venv $(VENV); \
	fi
	@if [ "$$($(VENV)/bin/uv --version 2>/dev/null)" != "uv $(UV_VERSION)" ]; then \
	  $(PY) -m pip --version >/dev/null 2>&1 || $(PY) -m ensurepip --upgrade >/dev/null; \
	  $(PY) -m pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"; \
	fi
	$(VENV)/bin/uv sync --frozen --compile-bytecode --python $(PY)
	@rm -f $(VENV)/.synced-*
	@touch $@

# The supervisor runs collectstatic (into staticfiles/) before Daphne starts, then migrates.
run: install
	$(PY) -m devtools.supervisor

test: install
	$(WITH_SERVICES) $(PY) -m pytest $(PYTEST_ARGS)

# No services started: these tests must not need any (-p no:django keeps them honest).
test-unit: install
	$(PY) -m pytest -p no:django tests/unit/recovery tests/unit/acp $(PYTEST_ARGS)

test-browser: install
	$(WITH_SERVICES) $(PY) -m pytest -m browser $(PYTEST_ARGS)

test-agents: install
	$(WITH_SERVICES) $(PY) -m pytest -m agents $(PYTEST_ARGS)

# ALLOW_EMPTY=1: pytest's exit 5 ("no tests collected") counts as success (.ci/run sets it).
test-slow: install
	$(WITH_SERVICES) $(PY) -m pytest -m "chaos or fuzz" $(PYTEST_ARGS) || { \
	  code=$$?; \
	  if [ "$$code" = 5 ] && [ -n "$(ALLOW_EMPTY)" ]; then echo "no chaos or fuzz tests collected"; \
	  else exit "$$code"; fi; }

bench: install
	$(WITH_SERVICES) bash -c '$(COLLECTSTATIC) && $(PY) -m benchmarks $(BENCH)'

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(MAKE) --no-print-directory typecheck

# mypy's Django plugin imports kandev_web.settings, which refuses to load without the two URLs;
# placeholders suffice, since the check never connects (and no real URL leaks into a cache).
typecheck: install
	DATABASE_URL=postgresql://typecheck@127.0.0.1:1/typecheck REDIS_URL=redis://127.0.0.1:1/0 \
	  $(VENV)/bin/mypy

# Committed, so `make run` needs no build step; a test fails when the file and the styles drift.
highlight-css: install
	$(PY) -c 'from sessions_app.templatetags.answers import highlight_css; print(highlight_css(), end="")' > static/css/highlight.css

# The README's pictures, taken from the real page by the browser-test stack (scripts/screenshots.py).
screenshots: install
	$(WITH_SERVICES) bash -c '$(COLLECTSTATIC) && $(PY) scripts/screenshots.py'

shell: install
	$(PY) manage.py shell

superuser: install
	$(PY) manage.py createsuperuser

worker: install
	$(PY) -m celery -A kandev_web worker --loglevel INFO
