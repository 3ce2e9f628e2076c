# Every target installs what it needs into a local .venv first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test bench lint clean browser docs

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/memlane demo

# Debian's chromium (and a CJK font for its screenshots) for the web UI's browser tests,
# driven by the playwright package: never `playwright install`. Without apt the tests skip.
browser:
	@command -v chromium >/dev/null 2>&1 || { command -v apt-get >/dev/null 2>&1 \
		&& (apt-get update -qq && apt-get install -y -qq chromium fonts-wqy-zenhei >/dev/null) \
		|| echo "chromium could not be installed with apt-get: the web UI's browser tests will skip"; }

# two workers, a file's tests on one (its module fixtures built once): the suite waits on
# subprocesses and servers as much as it computes. memlane is compiled to bytecode first: the
# tests start hundreds of CLI and server processes, and where the environment sets
# PYTHONDONTWRITEBYTECODE each would compile the source again (~0.8 s of a 2.3 s CLI call)
test: $(STAMP) browser
	$(BIN)/python -m compileall -q src
	$(BIN)/python -m pytest -n 2 --dist loadfile

bench: $(STAMP)
	$(BIN)/python bench/retrieval.py --passage-study 4
	$(BIN)/python bench/history.py
	$(BIN)/python bench/throughput.py
	$(BIN)/python bench/embed_rate.py
	$(BIN)/python bench/coldstart.py
	$(BIN)/python bench/query_length.py
	$(BIN)/python bench/locomo.py --no-key-study
	$(BIN)/python bench/scale.py --backend sqlite,postgres --sizes 10k,100k-multi,100k,1m --ingest
	$(BIN)/python bench/lifecycle.py
	$(BIN)/python bench/llm_cost.py
	$(BIN)/python bench/extraction.py
	$(BIN)/python bench/topics.py
	$(BIN)/python bench/reliability.py
	$(BIN)/python bench/server_attack.py
	$(BIN)/python bench/server.py
	$(BIN)/python bench/server.py --backend postgres --servers 4 --seconds 20 --writer-seconds 20 --no-e5

# the documentation site (mkdocs.yml, docs/) into site/; strict: a broken link or a missing page fails
DOCS_STAMP := $(VENV)/.installed-docs
$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e '.[docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	$(BIN)/mkdocs build --strict

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy

clean:
	rm -rf $(VENV) build site *.egg-info src/*.egg-info
