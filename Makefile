# kbatch-conformance: two entry points.
#   make conformance   cluster up, pinned components installed, suites run, report written
#   make test          the harness's own checks and tests
# Both create what they need: uv (in ~/.cache), the virtualenv (.venv) from uv.lock,
# and the pinned binaries (built from the Go module proxy into ~/.cache/kbatch-conformance).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON   ?= python3
PROVIDER ?= auto
PYTEST_ARGS ?=
CACHE    ?= $(or $(KBC_CACHE_DIR),$(HOME)/.cache/kbatch-conformance)
UV_VERSION := 0.13.9
UV_HOME  := $(CACHE)/uv-$(UV_VERSION)
UV       := $(UV_HOME)/bin/uv
RUN      := $(UV) run --frozen --no-sync
# Bytecode is written, under .pycache (ignored by git; `make clean` removes it), even where the environment
# sets PYTHONDONTWRITEBYTECODE: make test starts a Python process for every inner pytest run and CLI call,
# and without cached bytecode each compiled the kubernetes client again (5.0 s to collect one suite, 1.8 s
# with it). Not under .venv: the Python that installs uv runs before uv makes .venv, and uv refuses a .venv
# folder that holds no Python.
export PYTHONPYCACHEPREFIX := $(CURDIR)/.pycache
unexport PYTHONDONTWRITEBYTECODE

.PHONY: node-deps help conformance test test-e2e unit tiers report browser lint typecheck toolchain clean

help:
	@echo "make conformance   run the conformance suites (PROVIDER=$(PROVIDER)); report in allure-results/ and reports/"
	@echo "make test          the gate: lint, type-check, unit tests, every scenario and sabotage on a local cluster"
	@echo "make test-e2e      the heavy tier (nightly): kind, the canaries at scale and under load, the twins"
	@echo "make unit          the unit tests alone"
	@echo "make report        the Allure HTML report of allure-results/ in allure-report/"

$(UV):
	@echo "[make] installing uv $(UV_VERSION) into $(UV_HOME)"
	$(PYTHON) -m venv "$(UV_HOME)"
	"$(UV_HOME)/bin/pip" install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"

.venv/.synced: pyproject.toml uv.lock | $(UV)
	$(UV) sync --frozen --quiet
	@touch $@

toolchain: .venv/.synced
	$(RUN) kbc toolchain

lint: .venv/.synced
	$(RUN) ruff check fixtures tests suites conftest.py
	$(RUN) ruff format --check fixtures tests suites conftest.py
	$(RUN) lint-imports

typecheck: .venv/.synced
	$(RUN) mypy

# The harness's own tests come in two tiers (tests/tiers.py says which test is in which, and
# tests/unit/test_tiers.py checks that every test runs in exactly one):
#   make test      the gate CI runs: lint, types, import contracts, unit tests, every conformance scenario
#                  and every sabotage once on the local provider (but those tests/tiers.py names), the local
#                  upgrade canary once
#   make test-e2e  the heavy tier, nightly: kind and the first run's digests, the kind canary, the canaries
#                  at scale and under load, the platforms' twins
#   make unit      the unit tests alone
# The gate runs every suite on the same cluster, whose kwok nodes carry the names kind gives its workers (a
# scenario that depends on node names fails here), with one real node (kubelet + containerd on this host)
# where the real-node suite's pods really run. --durations lists the slowest tests (docs/performance.md).
# Two pytest-xdist workers: most of the time is waiting on clusters. Tests that share a cluster of the
# session (one group per profile), the Docker engine or a module go to one worker together, the longest
# group first (tests/xdist_groups.py, docs/contributing.md#two-workers); TEST_WORKERS=0: one at a time.
TEST_WORKERS ?= 2
GATE := tests suites -m "not e2e"
E2E  := tests -m e2e
SELFTEST := --cluster-name kbc-selftest --node-naming kind --durations=30 -n $(TEST_WORKERS) --dist loadgroup
test: lint typecheck toolchain browser node-deps
	$(RUN) pytest $(GATE) --real-nodes 1 $(SELFTEST) $(PYTEST_ARGS)

test-e2e: toolchain node-deps
	$(RUN) pytest $(E2E) $(SELFTEST) $(PYTEST_ARGS)

unit: .venv/.synced
	$(RUN) pytest tests/unit -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

# The two tiers' selections, one a line, for tests/unit/test_tiers.py.
tiers:
	@echo '$(GATE)'
	@echo '$(E2E)'

# What building and running a real node (--real-nodes) needs from Debian: libseccomp's headers for runc
# (cgo), a static busybox for the toolbox image, iproute2 for the pod bridge.
node-deps:
	@if [ ! -f /usr/include/seccomp.h ] || [ ! -x /bin/busybox ] || ! command -v ip >/dev/null; then \
	  if ! command -v apt-get >/dev/null; then \
	    echo "[make] install libseccomp's headers, a static busybox and iproute2: real nodes need them"; exit 1; \
	  fi; \
	  echo "[make] installing libseccomp-dev, busybox-static and iproute2 from Debian"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends \
	    libseccomp-dev busybox-static iproute2; \
	fi

# Debian's headless chromium and its driver: the Allure report test opens the report in them.
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
browser:
	@if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then \
	  if ! command -v apt-get >/dev/null; then \
	    echo "[make] install chromium and chromedriver: the Allure report test opens the report in them"; exit 1; \
	  fi; \
	  echo "[make] installing chromium and chromium-driver from Debian"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends chromium chromium-driver; \
	fi

# KUBERNETES=1.35 runs on another Kubernetes minor the lock carries (kubernetes.lanes): kbc toolchain builds it
# and the run uses it (--kubernetes, through its variable).
KUBERNETES ?=
ifneq ($(KUBERNETES),)
export KBC_KUBERNETES := $(KUBERNETES)
endif

# WORKERS=auto runs each cluster configuration's scenarios side by side with the others' on two workers on the
# local provider, in one process elsewhere (a kind cluster's start takes a small machine's cores); 0: one
# process everywhere (kbc.plugins.workers, docs/reading-results.md).
WORKERS ?= auto
# What the chosen provider needs of this host is installed first, as make test does: kind builds its node
# image's runc (cgo: libseccomp's headers) and its toolbox (a static busybox) where no registry answers. What
# is still missing (PROVIDER=auto that resolves to kind, a machine without apt-get) the run reports once,
# before any cluster or image work, and ends there.
conformance: .venv/.synced $(if $(filter kind,$(PROVIDER)),node-deps)
	$(RUN) kbc toolchain
	mkdir -p reports
	$(RUN) pytest suites --provider $(PROVIDER) -n $(WORKERS) --dist loadgroup --alluredir allure-results \
		--clean-alluredir --junitxml reports/junit.xml --report-dir reports $(PYTEST_ARGS)

# The Allure HTML report of allure-results/ in allure-report/, with the previous report's history.
report: .venv/.synced
	$(RUN) kbc report

clean:
	rm -rf .venv .pycache .mypy_cache .ruff_cache .pytest_cache allure-results allure-report reports
