# The README's two quick-start commands live here: `make plan` and `make test`.
PYTHON ?= python3
VENV ?= .venv
STACK ?= dev
BIN := $(VENV)/bin

.PHONY: setup plan test lint budget docs clean upstream mutation

$(BIN)/.installed: requirements.txt requirements-dev.txt pyproject.toml
	@echo "==> $(VENV): a virtualenv for this checkout"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "==> installing requirements (a fresh clone installs about 400 MB, a few minutes; pip lists each package)"
	$(BIN)/python -m pip install --upgrade --progress-bar off pip
	$(BIN)/python -m pip install --progress-bar off -r requirements-dev.txt
	@echo "==> the hubctl command ($(BIN)/hubctl, this checkout in editable mode)"
	$(BIN)/python -m pip install --quiet --no-deps -e .
	@touch $@

setup: $(BIN)/.installed

plan: setup  ## offline plan of $(STACK) into build/plan/$(STACK) (no Pulumi CLI, no credentials)
	@echo "==> hubctl plan $(STACK) --policy"
	$(BIN)/hubctl plan $(STACK) --policy

budget: setup
	$(BIN)/hubctl budget $(STACK)

docs: setup  ## regenerate docs/configuration.md and docs/stack.schema.json from components/config.py
	$(BIN)/hubctl docs

upstream: setup  ## build the upstream binaries the tests run (Go module proxy; cold ~45-60 min, then a check)
	$(BIN)/python -m upstream.build

test: setup upstream  ## the whole suite (set KARMADA_HUB_REQUIRE_TOOLS=1 to turn missing-tool skips into failures)
	$(BIN)/python -m pytest -q
	$(BIN)/ruff check .

mutation: setup  ## mutation run over the safety-critical modules (docs/testing.md; not part of test; hours on 2 cores)
	nice -n 15 $(BIN)/python -m bench.mutation $(TARGETS)

lint: setup
	$(BIN)/ruff check .

clean:
	rm -rf build .pytest_cache
