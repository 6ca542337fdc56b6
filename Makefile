# Two commands for a fresh Debian machine: `make setup` and `make test` (see README.md).
VENV    ?= .venv
PYTHON  := $(VENV)/bin/python
STAMP   := $(VENV)/.hivecat-installed
PYTEST_ARGS ?=

.PHONY: setup install system test test-unit test-integration test-operator bench demo clean

## setup: install everything, then run the main job (`hivecat demo`) on its embedded default
setup: install
	$(VENV)/bin/hivecat demo

## install: system packages, database users and the venv; idempotent (re-runs when inputs change)
install: system $(STAMP)

# Every time: cheap when all is there, and it starts MariaDB/PostgreSQL if a reboot stopped them.
system:
	@bash scripts/setup-system.sh

$(STAMP): pyproject.toml | system
	test -x $(PYTHON) || python3 -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --upgrade pip
	$(PYTHON) -m pip install --quiet -e '.[test]'
	touch $@

## test: every tier plus each benchmark in --small mode; pytest's exit 5 (no tests ran) fails too
test: install
	$(PYTHON) -m pytest $(PYTEST_ARGS)

test-unit test-integration test-operator: test-%: install
	$(PYTHON) -m pytest tests/$* $(PYTEST_ARGS)

## bench: the benchmarks at full size (each prints one JSON line last)
bench: install
	@set -e; for script in benchmarks/*.py; do [ -e "$$script" ] || continue; \
		echo "== $$script"; $(PYTHON) "$$script"; done

demo: install
	$(VENV)/bin/hivecat demo

clean:
	rm -rf $(VENV) build *.egg-info operator/*.egg-info .pytest_cache
