# Every target installs what it needs into a local .venv first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test bench lint clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/memlane demo

test: $(STAMP)
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python bench/locomo.py
	$(BIN)/python bench/scale.py
	$(BIN)/python bench/lifecycle.py
	$(BIN)/python bench/llm_cost.py
	$(BIN)/python bench/reliability.py
	$(BIN)/python bench/server.py

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
