# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
# The first interpreter that runs and is 3.11 or 3.12 (durable-rules does not build on 3.13).
PYTHON ?= $(shell for p in python3.12 python3.11 python3; do \
	$$p -c 'import sys; assert (3, 11) <= sys.version_info[:2] < (3, 13)' 2>/dev/null \
	&& { command -v $$p; break; }; done)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test check lint typecheck bench soak screenshots clean

$(STAMP): pyproject.toml
	@test -n "$(PYTHON)" || { echo "need Python 3.11 or 3.12 on PATH" >&2; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/demo.py
	$(BIN)/python examples/decide.py

test: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check engine tests examples benchmarks
	$(BIN)/ruff format --check engine

typecheck: $(STAMP)
	$(BIN)/mypy

# the long hypothesis profile: property tests and the memory state machine run many more examples
check: lint typecheck $(STAMP)
	MEMKG_HYPOTHESIS_PROFILE=long $(BIN)/python -m pytest
	MEMKG_FUZZ=check $(BIN)/python -m pytest -q tests/property/test_compat_fuzz.py

# The durability battery in its long form: 600 SIGKILLs on each backend, 200 simulation seeds,
# 20 residue sequences, thousands of hostile inputs (most of an hour; not part of `make test`).
soak: $(STAMP)
	MEMKG_KILLS=600 MEMKG_SIM_SEEDS=200 MEMKG_RESIDUE_SEEDS=20 MEMKG_SOAK=1 $(BIN)/python -m pytest tests/durability -q

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py $(BENCH)
	$(BIN)/python benchmarks/recall_bench.py $(filter --quick,$(BENCH))
	$(BIN)/python benchmarks/scale_bench.py $(filter --quick,$(BENCH))
	$(BIN)/python benchmarks/trace_bench.py $(filter --quick,$(BENCH))
	$(BIN)/python benchmarks/service_bench.py $(filter --quick,$(BENCH))

# Photograph every view of the memory inspector into docs/inspector/ (headless Chromium).
screenshots: $(STAMP)
	MEMKG_SCREENSHOTS=docs/inspector $(BIN)/python -m pytest -q tests/integration/test_inspector_browser.py

clean:
	rm -rf $(VENV) build engine/*.egg-info
