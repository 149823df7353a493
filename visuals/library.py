"""The preset prompts and the example runs shipped in assets/, read with no model.

`assets/presets.json` lists each preset's prompt, chat flag, suggested W, N, G and max new
tokens, a caption, and the file of its example run (recorded by scripts/record_examples.py).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from lookahead_core.records import Run

ASSETS = Path(__file__).resolve().parent.parent / "assets"
PRESETS_FILE = ASSETS / "presets.json"


def load_presets(path: Path = PRESETS_FILE) -> list[dict]:
    return json.loads(Path(path).read_text())


def preset(presets: list[dict], preset_id: str) -> dict:
    for item in presets:
        if item["id"] == preset_id:
            return item
    raise KeyError(f"no preset {preset_id!r}: choose one of {', '.join(p['id'] for p in presets)}")


def example_path(item: dict) -> Path:
    return ASSETS / item["example"]


def load_run(path: Path) -> Run:
    """A recorded run from a .json or .json.gz file; records.SchemaError if it does not fit the schema."""
    data = Path(path).read_bytes()
    if str(path).endswith(".gz"):
        data = gzip.decompress(data)
    return Run.from_json(data)


def save_run(run: Run, path: Path) -> None:
    """Write a run compactly, gzipped when the name ends in .gz (mtime 0, so reruns give identical bytes)."""
    data = run.to_json().encode()
    if str(path).endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    Path(path).write_bytes(data)
