"""The preset prompts and the example runs shipped in assets/, read with no model.

`assets/presets.json` lists each preset's prompt, chat flag, suggested W, N, G and max new
tokens, a caption, and the file of its example run (recorded by `python -m lab.examples`).
A visitor's own run comes and goes as JSON through `read_run` and `save_run`.
"""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

from lookahead_core.records import Run, SchemaError

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


# A run of 256 new tokens at the widest settings is a few MB of JSON; anything far larger is not one.
MAX_RUN_BYTES = 8_000_000  # a file as sent (gzipped or not)
MAX_RUN_JSON_BYTES = 64_000_000  # its JSON once unzipped


def load_run(path: Path) -> Run:
    """A recorded run from a .json or .json.gz file; records.SchemaError if it does not fit the schema."""
    return read_run(Path(path).read_bytes())


def read_run(data: bytes) -> Run:
    """A recorded run from a file's bytes, JSON or gzipped JSON (told apart by gzip's magic number).

    records.SchemaError, with a message for the person who chose the file, when it is too large, not
    JSON, another kind of record (one trace, a race), another schema version, or off the schema.
    """
    if len(data) > MAX_RUN_BYTES:
        raise SchemaError(f"the file has {len(data):,} bytes; a recorded run has at most {MAX_RUN_BYTES:,}")
    if data[:2] == b"\x1f\x8b":
        data = unzipped(data)
    try:
        parsed = json.loads(data)
    except (ValueError, UnicodeDecodeError) as error:
        raise SchemaError(f"the file is not JSON ({error}): choose a run saved by Lookahead Lab") from None
    if isinstance(parsed, dict) and {"meta", "steps"} <= parsed.keys():
        raise SchemaError("the file holds one trace, not a run (a method's trace beside greedy's): export it again")
    if isinstance(parsed, dict) and "lanes" in parsed:
        raise SchemaError("the file holds a race, not a run: download a Run's JSON from the app")
    if not isinstance(parsed, dict) or not {"trace", "greedy"} <= parsed.keys():
        raise SchemaError("the file is JSON but not a run saved by Lookahead Lab (no trace and greedy in it)")
    run = Run.from_json(data)
    if not run.trace.steps or not run.greedy.steps:
        raise SchemaError("the run has no steps: record it again")
    return run


def unzipped(data: bytes) -> bytes:
    """Gzipped bytes unzipped, refusing to grow them past MAX_RUN_JSON_BYTES (a zip bomb stops there)."""
    reader = gzip.GzipFile(fileobj=io.BytesIO(data))
    try:
        out = reader.read(MAX_RUN_JSON_BYTES + 1)
    except (OSError, EOFError) as error:
        raise SchemaError(f"the file starts like gzip but does not unzip ({error})") from None
    if len(out) > MAX_RUN_JSON_BYTES:
        raise SchemaError(f"the file unzips to more than {MAX_RUN_JSON_BYTES:,} bytes; a recorded run is smaller")
    return out


def save_run(run: Run, path: Path) -> None:
    """Write a run compactly, gzipped when the name ends in .gz (mtime 0, so reruns give identical bytes)."""
    data = run.to_json().encode()
    if str(path).endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    Path(path).write_bytes(data)
