"""What the browser tests share beyond scripts/serving.py (which the scripts share too): why they cannot run
here, if they cannot (playwright or Debian's chromium missing); the app served with no model; one launched
chromium.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager

from scripts.serving import CHROMIUM, CHROMIUM_ARGS, running_app


def chromium_missing() -> str | None:
    """Why the browser tests cannot run here, or None where they can."""
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed: make test installs it"
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing: `make browser` installs Debian's chromium (needs root)"
    return None


@contextmanager
def app_without_model() -> Iterator[str]:
    """The app served (its URL), every reach for the model failing the test: the lesson, replays and exports
    need none."""
    from lab import server

    def no_model(*args, **kwargs):
        raise AssertionError("the classroom must not need the model")

    saved = server.MODEL.get
    server.MODEL.get = no_model
    try:
        with running_app() as url:
            yield url
    finally:
        server.MODEL.get = saved


@contextmanager
def launched_chromium() -> Iterator[object]:
    """Debian's chromium, launched headless by Playwright, for several pages."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()
