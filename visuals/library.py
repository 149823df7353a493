"""The preset prompts and the example runs shipped in assets/, and the recorded tune maps, read with no model.

`assets/presets.json` lists each preset's prompt, chat flag, suggested W, N, G and max new
tokens, a caption, and the file of its example run (recorded by `python -m lab.examples`).
A visitor's own run comes and goes as JSON through `read_run` and `save_run`.
"""

from __future__ import annotations

import gzip
import io
import json
import re
from functools import cache
from itertools import accumulate
from pathlib import Path

from lookahead_core.records import Run, SchemaError, StepRecord, SuffixRecord, Trace, from_data
from lookahead_core.records.tune import TuneReport, read_tune_report

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


@cache
def example_run(preset_id: str) -> Run:
    """A preset's recorded example run, read once and shared read-only by every session (nothing mutates a run)."""
    return load_run(example_path(preset(load_presets(), preset_id)))


# The tune maps the card shows before a sweep and the lesson quotes: this lab's CPU map and an H200's, each swept
# there (python -m lab tune; the H200's in the captured step, docs/tune.md)
BENCH = ASSETS.parent / "docs" / "bench"
CPU_MAP = BENCH / "cpu-tune-humaneval-float32-2026-11-26.json"
GPU_MAP = BENCH / "h200-tune-humaneval-float32-cuda-graph-widened-2026-11-26.json"


@cache
def recorded_maps() -> tuple[TuneReport, TuneReport | None] | None:
    """The recorded CPU map and its GPU counterpart (None where that is missing); None without a CPU map."""
    if not CPU_MAP.exists():
        return None
    gpu = read_tune_report(GPU_MAP.read_text()) if GPU_MAP.exists() else None
    return read_tune_report(CPU_MAP.read_text()), gpu


# ----------------------------------------------------------------------------------------------
# A visitor's run file: its limits, checked before anything of it is drawn. A run file reaches the
# page from an upload, a `?run=` link (the shelf keeps only runs that passed here or were recorded)
# and `python -m visuals export`; each limit sits well above what the lab itself records (a run of
# 256 new tokens at the widest settings is about 13 MB of JSON) and well below what would let one
# file hold the server for long.

MAX_RUN_BYTES = 8_000_000  # a file as sent (gzipped or not)
MAX_RUN_JSON_BYTES = 32_000_000  # its JSON once unzipped
MAX_DEPTH = 12  # nesting of JSON arrays and objects: the schema's deepest field is 8 levels down
MAX_STEPS = 1_024  # forward passes of one trace: runs are recorded by the app (256 new tokens at most)
MAX_ROWS = 512  # tokens fed to one forward pass: the engine's MAX_TOKENS_PER_STEP, which it never exceeds
MAX_PROMPT_TOKENS = 32_768
MAX_NEW_TOKENS = 1_024
# What one step's panels draw, part by part: about 2,000 tokens each (a chip is about 250 bytes), and 16,384
# cells of the mask (which draws at most 20,000 rectangles). The widest step the engine's budget allows
# (W=32, N=10, G=24: 512 rows) names about 7,000 mask cells, 2,000 candidate tokens and expected tokens, and
# under 1,000 tokens in any other part.
STEP_PARTS = {
    "mask cells": 16_384,
    "window tokens": 2_048,
    "pool tokens": 2_048,
    "candidate tokens": 4_096,  # each candidate token and the token the model expected there
    "sampling draws": 2_048,
    "suffix tokens": 2_048,  # the match, the tree's nodes and the occurrences listed
}
MAX_TOKEN_ID = 1 << 20  # above any vocabulary (Gemma's is 262,144)
MAX_TOKEN_TEXT = 256  # characters of one token's text, decoded alone
MAX_TEXT = 50_000  # characters of any other text: the prompt (40,000 at most in the app), the output
MAX_MESSAGE = 300  # characters of a refusal's message, which may quote the file


def load_run(path: Path) -> Run:
    """A recorded run from a .json or .json.gz file; records.SchemaError if it does not fit the schema."""
    return read_run(Path(path).read_bytes())


def read_run(data: bytes) -> Run:
    """A recorded run from a file's bytes, JSON or gzipped JSON (told apart by gzip's magic number).

    records.SchemaError, with a message for the person who chose the file (naming the limit, when one
    was passed), when it is too large or too deeply nested, not JSON, another kind of record (one
    trace, a race), another schema version, off the schema, past a limit above, or when its records
    do not hold together (a row, candidate or token that is not there).
    """
    try:
        return checked_run(data)
    except SchemaError as error:
        message = str(error)
        raise SchemaError(message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 1] + "…") from None


def checked_run(data: bytes) -> Run:
    if len(data) > MAX_RUN_BYTES:
        raise SchemaError(f"the file has {len(data):,} bytes; a recorded run has at most {MAX_RUN_BYTES:,}")
    if data[:2] == b"\x1f\x8b":
        data = unzipped(data)
    if len(data) > MAX_RUN_JSON_BYTES:
        raise SchemaError(
            f"the file has {len(data):,} bytes of JSON; a recorded run has at most {MAX_RUN_JSON_BYTES:,}"
        )
    check_depth(data)
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
    run = from_data(Run, parsed)
    if not run.trace.steps or not run.greedy.steps:
        raise SchemaError("the run has no steps: record it again")
    for trace in (run.trace, run.greedy):
        check_trace(trace)
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


STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"')
BRACKETS = re.compile(rb"[^\[\]{}]")


def check_depth(data: bytes) -> None:
    """Refuse JSON nested deeper than MAX_DEPTH, counted on its brackets outside strings, before it is parsed
    (Python's parser recurses once per level)."""
    brackets = BRACKETS.sub(b"", STRINGS.sub(b"", data))
    depth = max(accumulate(1 if b in b"[{" else -1 for b in brackets), default=0)
    if depth > MAX_DEPTH:
        raise SchemaError(f"the file nests arrays or objects {depth} deep; a recorded run nests at most {MAX_DEPTH}")


def at_most(count: int, limit: int, what: str) -> None:
    if count > limit:
        raise SchemaError(f"{what}: {count:,}, over this lab's limit of {limit:,}")


def check_trace(trace: Trace) -> None:
    """Refuse a trace past the limits above, or whose records point at rows, candidates or tokens it lacks."""
    name = f"the {trace.meta.method.value} trace"
    at_most(len(trace.steps), MAX_STEPS, f"{name}'s forward passes")
    at_most(len(trace.meta.prompt_token_ids), MAX_PROMPT_TOKENS, f"{name}'s prompt tokens")
    at_most(len(trace.summary.new_token_ids), MAX_NEW_TOKENS, f"{name}'s new tokens")
    at_most(sum(len(step.committed) for step in trace.steps), MAX_NEW_TOKENS, f"{name}'s committed tokens")
    at_most(len(trace.vocab), MAX_STEPS * MAX_ROWS, f"{name}'s vocabulary entries")
    at_most(max(map(len, trace.vocab.values()), default=0), MAX_TOKEN_TEXT, f"characters of a token in {name}")
    texts = [trace.meta.prompt_text or "", trace.meta.prompt_shown, trace.summary.text, *trace.pieces]
    at_most(max(map(len, texts)), MAX_TEXT, f"characters of a text in {name}")
    if len(trace.pieces) != sum(len(step.committed) for step in trace.steps):
        raise SchemaError(f"{name} does not have one text piece for each token it commits")
    at_most(max(map(len, strings(trace.meta.machine)), default=0), MAX_TOKEN_TEXT, f"characters of {name}'s machine")
    if trace.meta.settings.suffix is not None:  # the names of the earlier runs its store held
        store = trace.meta.settings.suffix.store
        at_most(len(store), MAX_STEPS, f"{name}'s earlier outputs")
        at_most(max(map(len, store), default=0), MAX_TOKEN_TEXT, f"characters of an earlier run's name in {name}")
    ids = [*trace.meta.prompt_token_ids, *trace.meta.eos_ids, *trace.summary.new_token_ids]
    for step in trace.steps:
        at_most(len(step.rows), MAX_ROWS, f"rows fed in step {step.step} of {name}")
        check_step(step, f"step {step.step} of {name}")
        ids.extend(step.token_ids())
    bad = next((t for t in ids if not 0 <= t < MAX_TOKEN_ID), None)
    if bad is not None:
        raise SchemaError(f"{name} holds token id {bad}, outside 0 to {MAX_TOKEN_ID - 1:,}")
    missing = next((t for t in ids if str(t) not in trace.vocab and t not in trace.meta.prompt_token_ids), None)
    if missing is not None:
        raise SchemaError(f"{name} holds token id {missing}, which its vocabulary does not have")


def strings(record) -> list[str]:
    return [value for value in vars(record).values() if isinstance(value, str)]


def check_step(step: StepRecord, where: str) -> None:
    """Refuse a step whose rows, candidates or sampled positions point past what it holds, or whose parallel
    lists (each committed token's source, each candidate token's row) differ in length."""
    rows = len(step.rows)
    if not step.committed or len(step.sources) != len(step.committed):
        raise SchemaError(f"{where}: it must commit a token, and name one source for each token it commits")
    for i, row in enumerate(step.rows):
        if not -1 <= row.parent < i or any(not 0 <= seen <= i for seen in row.sees):
            raise SchemaError(f"{where}: row {i} points at a row that is not before it")
    if step.sliding is not None:
        s = step.sliding
        if len(s.prefix_from) != rows or len(s.sees) != rows or any(not 0 <= c < rows for r in s.sees for c in r):
            raise SchemaError(f"{where}: its sliding-window mask does not have one row per row fed")
    v = step.verification
    if v is not None:
        at_most(len(v.candidates), MAX_ROWS, f"candidates in {where}")
        if v.winner is not None and not 0 <= v.winner < len(v.candidates):
            raise SchemaError(f"{where}: its winner is not one of its candidates")
        if any(not 0 <= r < rows for c in v.candidates for r in c.rows) or any(
            not 0 <= p.row < rows for p in v.positions
        ):
            raise SchemaError(f"{where}: a candidate or sampled position points at a row that was not fed")
        for c in v.candidates:
            if (
                len(c.rows) != len(c.tokens)
                or not 0 <= c.matched <= len(c.tokens)
                or c.draft_probabilities
                and len(c.draft_probabilities) != len(c.tokens)
            ):
                raise SchemaError(f"{where}: a candidate does not have one row and one match for each of its tokens")
    for part, count in parts(step).items():
        at_most(count, STEP_PARTS[part], f"{part} in {where}")
    if (suffix := step.report(SuffixRecord)) is not None:
        check_suffix(suffix, where)
    if step.window is not None and (len(step.window.origins) != len(step.window.levels) or not step.window.levels):
        raise SchemaError(f"{where}: its window does not name the step each level came from")


def check_suffix(suffix: SuffixRecord, where: str) -> None:
    """Refuse a suffix tree whose node points at a node not before it (its panel nests each under its parent), or
    an occurrence whose earlier run's name is longer than a token's text may be."""
    if any(not -1 <= node.parent < i for i, node in enumerate(suffix.nodes)):
        raise SchemaError(f"{where}: a node of its suffix tree points at a node that is not before it")
    names = [len(o.text) for o in suffix.occurrences]
    at_most(max(names, default=0), MAX_TOKEN_TEXT, f"characters of an earlier run's name in {where}")


def parts(step: StepRecord) -> dict[str, int]:
    """How much each of a step's panels has to draw (STEP_PARTS names the parts)."""
    w, pool, v = step.window, step.pool, step.verification
    return {
        "mask cells": sum(len(row.sees) for row in step.rows)
        + sum(map(len, step.sliding.sees) if step.sliding else []),
        "window tokens": sum(map(len, w.levels)) + len(w.update) + sum(map(len, w.harvested)) if w else 0,
        "pool tokens": sum(1 + len(e.continuation) for e in pool.entries + pool.added + pool.evicted) if pool else 0,
        "candidate tokens": len(v.block) + sum(len(c.tokens) + len(c.expected) for c in v.candidates) if v else 0,
        "sampling draws": sum(len(p.draws) for p in v.positions) if v else 0,
        "suffix tokens": len(s.match) + len(s.nodes) + len(s.occurrences) if (s := step.report(SuffixRecord)) else 0,
    }


def save_run(run: Run, path: Path) -> None:
    """Write a run compactly, gzipped when the name ends in .gz (mtime 0, so reruns give identical bytes)."""
    data = run.to_json().encode()
    if str(path).endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    Path(path).write_bytes(data)
