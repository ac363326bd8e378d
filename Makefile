# Two commands on a fresh machine: `make demo` and `make test`. Both bootstrap .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
EXTRAS ?= offline,dev
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml Makefile | sha256sum | cut -c1-16)

.PHONY: install demo test lint typecheck unit integration benchmarks clean

$(STAMP): pyproject.toml Makefile
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[$(EXTRAS)]'
	@rm -f $(VENV)/.installed-*
	@touch $@

install: $(STAMP)

demo: install
	$(BIN)/voice-audit scenarios verify
	$(BIN)/voice-audit run campaigns/demo.yaml --out runs --run-id demo-$$(date -u +%Y%m%dT%H%M%SZ)

lint: install
	$(BIN)/ruff check .

typecheck: install
	$(BIN)/mypy

test: install lint typecheck
	$(BIN)/python -m pytest -q

unit: install
	$(BIN)/python -m pytest -q tests/unit

integration: install
	$(BIN)/python -m pytest -q tests/integration

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
