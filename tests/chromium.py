"""What the browser tests share beyond scripts/serving.py (which the scripts share too): skipping, saying why,
where playwright or Debian's chromium is missing; the app served with no model; one launched chromium.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from scripts.serving import CHROMIUM, CHROMIUM_ARGS, running_app


def needs_chromium() -> None:
    """Skip the calling test module, saying why, where playwright or Debian's chromium is missing."""
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed: make test installs it")
    if not CHROMIUM.exists():
        pytest.skip(
            f"{CHROMIUM} is missing: `make browser` installs Debian's chromium (needs root)", allow_module_level=True
        )


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
