"""The browser tests' fixtures: `browser`, Debian's chromium launched headless by Playwright, and the app served
(`classroom` with no model, `served_on_the_model` with the real one, `served_on_app_model` with its first
layers), each once per module.

Taking `browser` marks a test `browser` (tests/conftest.py), and skips it, saying why, where chromium or
playwright is missing. Module scope keeps a module's server and its browser in one worker under `make test`'s
`--dist loadfile`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from scripts.serving import running_app
from tests.browser.chromium import app_without_model, launched_chromium


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with launched_chromium() as chromium:
        yield chromium


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
