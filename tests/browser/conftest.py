"""The browser tests' fixtures: `browser`, Debian's chromium launched headless by Playwright (one for the browser
modules a process runs in a row), and the app served (`classroom` with no model, `served_on_the_model` with the real
one, `served_on_app_model` with its first layers), each once per module.

Taking `browser` marks a test `browser` (tests/conftest.py), and skips it, saying why, where chromium or
playwright is missing. Module scope keeps a module's server and its browser in one worker under `make test`'s
`--dist loadfile`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from scripts.serving import running_app
from tests.browser.chromium import app_without_model, launched_chromium

# The chromium launched for the browser modules a process runs one after another (make test deals them first:
# tests/conftest.py `weight`), closed after the last of them: launching and closing one took a module 2 to 3 s (the
# 2-core AMD EPYC (Zen 3)). Each page still opens in a context of its own (scripts.serving.open_page).
LAUNCHED = contextlib.ExitStack()
CHROMIUM: list = []  # the launched chromium, while there is one


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """The chromium; at the module's end, the pages and contexts its tests left open are closed."""
    if not CHROMIUM:
        CHROMIUM.append(LAUNCHED.enter_context(launched_chromium()))
    chromium = CHROMIUM[0]
    yield chromium
    for context in chromium.contexts:
        context.close()


@pytest.hookimpl(trylast=True)  # after pytest's own teardown has closed the module's pages and servers
def pytest_runtest_teardown(item, nextitem) -> None:
    """Close the chromium once the next test takes none, or no test follows: no other test runs beside Playwright."""
    if CHROMIUM and (nextitem is None or "browser" not in nextitem.fixturenames):
        CHROMIUM.clear()
        LAUNCHED.close()


@pytest.fixture(scope="module")
def classroom() -> Iterator[str]:
    """The app's URL, served with every reach for the model failing the test: the lesson, replays and exports
    need none."""
    with app_without_model() as url:
        yield url


@pytest.fixture(scope="module")
def served_on_the_model(default_model) -> Iterator[str]:
    """The app's URL, served on the real default model."""
    with running_app(default_model) as url:
        yield url


@pytest.fixture(scope="module")
def served_on_app_model(app_model) -> Iterator[str]:
    """The app's URL, served on the default model's first layers (tests.conftest.app_model), for a page whose Run or
    race is there to be read, audited or followed, not for the model's words."""
    with running_app(app_model) as url:
        yield url
