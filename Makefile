# The README's two quick-start commands live here: `make plan` and `make test`.
PYTHON ?= python3
VENV ?= .venv
STACK ?= dev
BIN := $(VENV)/bin

.PHONY: setup plan test lint budget clean

$(BIN)/.installed: requirements.txt requirements-dev.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $@

setup: $(BIN)/.installed

plan: setup  ## offline plan of $(STACK) into build/plan/$(STACK) (no Pulumi CLI, no credentials)
	$(BIN)/python -m hubctl plan $(STACK) --policy

budget: setup
	$(BIN)/python -m hubctl budget $(STACK)

test: setup  ## the whole suite (set KARMADA_HUB_REQUIRE_TOOLS=1 to turn missing-tool skips into failures)
	$(BIN)/python -m pytest -q
	$(BIN)/ruff check .

lint: setup
	$(BIN)/ruff check .

clean:
	rm -rf build .pytest_cache
