# `make run` starts the app on the built-in demo data; `make test` runs lint and the whole suite.
# Both create or refresh the virtual environment in .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

CHROMIUM := /usr/bin/chromium

.PHONY: run test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test]"
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/streamlit run app.py $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The browser tests drive Debian's Chromium; Playwright never downloads a browser of its own.
$(CHROMIUM):
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium

# Two workers, each taking whole test files, so a module's fixture is built once. Most tests
# use one core: on a fresh clone on the two-core machine CI runs on, the 733 tests took 1,296 s
# in one process and 898 s in two.
test: lint $(CHROMIUM)
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

bench: $(STAMP)
	$(BIN)/python benchmarks/speed.py

clean:
	rm -rf $(VENV)
