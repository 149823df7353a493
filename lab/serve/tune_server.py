"""The tune map on this server: a visitor's sweep request checked in words, and the sweep run on the held model
within the time a request may hold it.

The operator sets how large a sweep may be (LOOKAHEAD_TUNE_CELLS, cells; LOOKAHEAD_TUNE_SECONDS, the time one
sweep may hold the model: docs/deploy.md). A sweep that reaches its time stops before its next piece of work
and shows the cells it measured. Model work yields a TuneProgress before each piece and the report last, as
server.record does (on ZeroGPU only what is yielded comes back).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass

from lab.measure.datasets import load_prompts
from lab.measure.tune import SWEPT, TuneGrid, TuneOptions, TuneProgress, check_grid, tuning
from lab.serve import server
from lab.serve.budget import Deadline
from lab.serve.requests import InputError, check_prompt, model_of, new_tokens_of, short, whole_number
from lab.serve.threads import running_on
from lookahead_core.models import encode_prompt
from lookahead_core.records import Method
from lookahead_core.records.tune import TuneReport
from lookahead_core.request import DecodeRequest
from lookahead_core.tuning import regime_settings

SETS = ("humaneval", "mtbench", "gsm8k")  # the shipped prompt sets a visitor may sweep on
OWN = "your prompts"
SEPARATOR = "---"  # a line of its own between two of a visitor's prompts
MOST_PROMPTS = 10
MOST_TOKENS = 64  # new tokens per prompt in a sweep: its cells decode every prompt
TUNE_CELLS = int(os.environ.get("LOOKAHEAD_TUNE_CELLS", 12))
TUNE_SECONDS = float(os.environ.get("LOOKAHEAD_TUNE_SECONDS", 120))
ROUNDS = 2  # interleaved rounds of each timed cell in the app (the CLI: 3 by default)


@dataclass(frozen=True, kw_only=True)
class TuneRequest:
    """A checked sweep: the prompts (id, text, chat), the grid, the new tokens per prompt, the model and dtype."""

    prompts: list[tuple[str, str, bool]]
    grid: TuneGrid
    max_new_tokens: int
    model: str
    dtype: str


def prompts_of(source, text, count) -> list[tuple[str, str, bool]]:
    """The prompts to sweep on: the first `count` of a shipped set, or a visitor's own, separated by lines of
    `---`; InputError saying what to change."""
    count = whole_number(count, "The number of prompts")
    if not 1 <= count <= MOST_PROMPTS:
        raise InputError(f"Sweep on 1 to {MOST_PROMPTS} prompts, got {count}.")
    if source == OWN:
        texts = [part.strip("\n") for part in str(text or "").split(f"\n{SEPARATOR}\n")]
        texts = [check_prompt(part) for part in texts if part.strip()]
        if not texts:
            raise InputError(f"Paste at least one prompt (a line of {SEPARATOR} between two).")
        return [(f"prompt {i + 1}", t, False) for i, t in enumerate(texts[:count])]
    if source not in SETS:
        raise InputError(f"Choose a prompt set: {', '.join(SETS)}, or {OWN}; got {short(source)}.")
    return [(p["id"], p["prompt"], p["chat"]) for p in load_prompts(source, count)]


def settings_of(text, name: str, low: int, high: int) -> tuple[int, ...]:
    """A visitor's list of settings ("2, 4, 8") as whole numbers from `low` to `high`; InputError in words."""
    parts = [part.strip() for part in str(text or "").split(",") if part.strip()]
    if not all(part.isdigit() for part in parts):
        raise InputError(f"{name}: whole numbers separated by commas, such as 2, 4, 8; got {short(text)}.")
    values = tuple(int(part) for part in parts)
    wrong = [v for v in values if not low <= v <= high]
    if wrong:
        raise InputError(f"{name} must each be from {low} to {high}; {wrong[0]} is not.")
    return values


def grid_of(methods, windows, ngrams) -> TuneGrid:
    """The grid: lookahead's W and N lists, and the other methods' default settings, for the methods ticked;
    SettingsError when it has no cell or more than this server's TUNE_CELLS."""
    names = methods if isinstance(methods, list | tuple) else []
    known = {m.value for m in SWEPT}
    if not names or not set(names) <= known:
        raise InputError(f"Tick at least one method to sweep: {', '.join(sorted(known))}.")
    whole = TuneGrid()
    grid = TuneGrid(
        windows=settings_of(windows, "The windows W", 1, 16) if Method.LOOKAHEAD.value in names else (),
        ngrams=settings_of(ngrams, "The n-gram sizes N", 2, 10),
        lookups=whole.lookups if Method.PROMPT_LOOKUP.value in names else (),
        draft_tokens=whole.draft_tokens if Method.SPECULATIVE.value in names else (),
        tree_sizes=whole.tree_sizes if Method.MEDUSA.value in names else (),
        suffixes=whole.suffixes if Method.SUFFIX.value in names else (),
        named=tuple(names),
    )
    check_grid(grid, most=TUNE_CELLS)
    return grid


def tune_request(*, source, text, count, max_new_tokens, methods, windows, ngrams, choice, dtype) -> TuneRequest:
    """Every value of the tune card checked in the card's order; InputError, SettingsError or AccessError for
    the first bad one, in words."""
    prompts = prompts_of(source, text, count)
    tokens = new_tokens_of(max_new_tokens, server.CAP)
    if tokens > MOST_TOKENS:
        raise InputError(f"A sweep decodes every prompt once per cell: at most {MOST_TOKENS} new tokens, got {tokens}.")
    grid = grid_of(methods, windows, ngrams)
    name, dtype = model_of(choice, dtype, access=server.ACCESS)
    return TuneRequest(prompts=prompts, grid=grid, max_new_tokens=tokens, model=name, dtype=dtype)


@server.on_gpu(lambda request: int(TUNE_SECONDS) + 30)
def mapping(request: TuneRequest) -> Iterator[TuneProgress | tuple[TuneReport, float]]:
    """A sweep on the model the request names, stopped by TUNE_SECONDS: a TuneProgress before each piece of work,
    and last the report with the seconds it took. Medusa is swept only where heads ship for the model."""
    held = server.MODEL.get(request.model, request.dtype)
    lm = held.lm
    auto = regime_settings(held.settled)
    prompts = [(name, encode_prompt(lm.tokenizer, text, chat)) for name, text, chat in request.prompts]
    threads = held.admit(max(len(ids) for _, ids in prompts), decodings=1, seconds=TUNE_SECONDS)
    started, deadline = time.perf_counter(), Deadline(TUNE_SECONDS)
    decode = DecodeRequest(max_new_tokens=request.max_new_tokens)
    swept = [method for method in SWEPT if SWEPT[method].settings(request.grid)]
    runtime = held.runtime(swept, deadline=deadline)  # a draft, heads: made only for a method swept
    options = TuneOptions(
        dataset=", ".join(p[0] for p in request.prompts), rounds=ROUNDS, sample=2, stop=deadline.passed
    )
    report = yield from running_on(threads, tuning(lm, prompts, request.grid, decode, runtime, auto, options))
    yield report, time.perf_counter() - started
