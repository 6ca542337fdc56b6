# Two commands for a fresh Debian machine: `make setup` and `make test` (see README.md).
VENV    ?= .venv
PYTHON  := $(VENV)/bin/python
STAMP   := $(VENV)/.hivecat-installed
PYTEST_ARGS ?=

.PHONY: setup install system control-plane jars lock test test-unit test-integration test-operator bench demo clean

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

## control-plane: etcd, kube-apiserver, controller-manager, scheduler and kwok for the operator tier, built
## from Go modules into ~/.cache/hivecat/k8s (minutes once, seconds after); not needed by setup or the demo.
## e2e/ builds the real node's kubelet, kube-proxy and CoreDNS the same way, and its images, when it starts.
control-plane:
	@bash scripts/build-control-plane.sh >/dev/null

## jars: from Maven Central into ~/.cache/hivecat/maven (a minute once, then milliseconds): Hadoop 3.4.1 (HDFS
## minicluster, DistCp) and the standalone Hive Metastores 3.1.3 and 4.0.1 the integration tier runs
jars:
	@bash scripts/fetch-maven.sh hadoop >/dev/null
	@bash scripts/fetch-hive-metastores.sh all >/dev/null

## lock: requirements.lock from pyproject.toml, every package the image installs pinned with its hashes, for
## the image's Python (3.11 on Linux); run it after changing a dependency (tests/unit/test_image.py checks it)
lock: install
	$(PYTHON) -m pip install --quiet uv
	$(VENV)/bin/uv pip compile pyproject.toml --extra image-build --generate-hashes --python-version 3.11 \
		--python-platform x86_64-manylinux_2_28 --custom-compile-command "make lock" --quiet -o requirements.lock

## test: every tier plus each benchmark in --small mode, the three tiers side by side (scripts/test-tiers.sh);
## pytest's exit 5 (no tests ran) fails too
test: install control-plane jars
	@bash scripts/test-tiers.sh $(PYTHON) $(PYTEST_ARGS)

test-unit: install
	$(PYTHON) -m pytest tests/unit $(PYTEST_ARGS)

test-integration: install jars
	$(PYTHON) -m pytest tests/integration $(PYTEST_ARGS)

test-operator: install control-plane
	$(PYTHON) -m pytest tests/operator $(PYTEST_ARGS)

## bench: the benchmarks at full size (each prints one JSON line last)
bench: install
	@set -e; for script in benchmarks/*.py; do [ -e "$$script" ] || continue; \
		echo "== $$script"; $(PYTHON) "$$script"; done

demo: install
	$(VENV)/bin/hivecat demo

clean:
	rm -rf $(VENV) build *.egg-info operator/*.egg-info .pytest_cache
