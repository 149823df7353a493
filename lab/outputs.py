"""Where the CLI's commands write: each output path checked before any work is done, so a typo costs no sweep."""

from __future__ import annotations

import os
from pathlib import Path


def writable(path: str | None) -> None:
    """Refuse an output path whose folder is missing or not writable before any work is done."""
    if path is not None:
        folder = Path(path).resolve().parent
        if not folder.is_dir() or not os.access(folder, os.W_OK):
            raise ValueError(f"cannot write {path}: {folder} is not a writable folder")
