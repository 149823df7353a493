"""The browser tests' one fixture, `browser`: Debian's chromium launched headless by Playwright, once per module.

Taking it marks a test `browser` (tests/conftest.py), and skips it, saying why, where chromium or playwright is
missing. Each module serves the app itself (`served`), with the real model or without one, so that under
`make test`'s `--dist loadfile` a module's server and its browser stay in one worker.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.browser.chromium import launched_chromium


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with launched_chromium() as chromium:
        yield chromium
