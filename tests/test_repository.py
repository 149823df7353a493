"""What the product reads from assets/ is in the repository: a file that git ignores exists only on the machine
that made it, and a clean clone (CI, a Space) would run without it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def ignored_under(folder: str) -> list[str]:
    """The files under `folder` that exist here but that git ignores (never committed, so absent from a clone)."""
    listing = subprocess.run(
        ["git", "ls-files", "--others", "--ignored", "--exclude-standard", "--", folder],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return [line for line in listing.stdout.splitlines() if "__pycache__" not in line]


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout")
def test_no_asset_the_product_reads_is_ignored_by_git():
    assert ignored_under("assets") == []
