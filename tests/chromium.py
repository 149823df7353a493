"""Skipping the browser tests, saying why, on a machine without playwright or Debian's chromium.

The page-driving helpers themselves are in scripts/serving.py, which the scripts share.
"""

from __future__ import annotations

import pytest

from scripts.serving import CHROMIUM


def needs_chromium() -> None:
    """Skip the calling test module, saying why, where playwright or Debian's chromium is missing."""
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed: make test installs it")
    if not CHROMIUM.exists():
        pytest.skip(
            f"{CHROMIUM} is missing: `make browser` installs Debian's chromium (needs root)", allow_module_level=True
        )
