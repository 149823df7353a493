"""Where the engine keeps what it derives on a user's machine: dequantized weights, step-cost curves, the products
and kernels chosen there, datasets. Plain Python, importable without torch (the test session's clean-up reads it)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """$XDG_CACHE_HOME/lookahead-lab, else ~/.cache/lookahead-lab, read at each call (a changed variable is heeded)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lookahead-lab"
