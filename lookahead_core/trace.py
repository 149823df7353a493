"""A trace: every step record of one decoding run, plus what is needed to read it with no model.

A trace is a plain dict (JSON round-trips it unchanged): `meta` (model, hardware, settings,
prompt), `steps` (one record per forward pass, the prefill first), `vocab` (the text of every
token id the steps mention) and `summary` (output, step count, tokens per step, seconds).
"""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import torch
import transformers

from .config import LookaheadConfig
from .decoding import check_request, greedy_steps, lookahead_steps
from .models import LoadedModel

METHODS = ("lookahead", "greedy")


def lookahead_reach(config: LookaheadConfig) -> int:
    """How many positions past the current token a lookahead step's rows can reach.

    The window's deepest row sits W + N - 3 past it (during warm-up and after), a guess's N - 1.
    """
    return max(config.window + config.ngram - 3, config.ngram - 1)


def decode_steps(
    lm: LoadedModel, prompt_ids: list[int], method: str, config: LookaheadConfig, max_new_tokens: int, planner=None
) -> Iterator[dict]:
    """Validate the request, then yield the records of `method` ('lookahead' or 'greedy').

    `planner` (lookahead only) picks what each step feeds; None is the paper's full plan.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}: use one of {', '.join(METHODS)}")
    reach = lookahead_reach(config) if method == "lookahead" else 0
    check_request(prompt_ids, max_new_tokens, lm.context_length, reach)
    if method == "greedy":
        return greedy_steps(lm.model, prompt_ids, max_new_tokens, lm.eos_ids)
    return lookahead_steps(lm.model, prompt_ids, config, max_new_tokens, lm.eos_ids, planner=planner)


def summarize(steps: list[dict]) -> dict:
    """Totals of a run: committed ids, forward passes (prefill included), tokens per step, seconds."""
    new_ids = [t for record in steps for t in record["committed"]]
    seconds = sum(record["step_seconds"] for record in steps)
    return {
        "new_token_ids": new_ids,
        "tokens": len(new_ids),
        "steps": len(steps),
        "tokens_per_step": len(new_ids) / len(steps) if steps else 0.0,
        "seconds": seconds,
        "tokens_per_second": len(new_ids) / seconds if seconds else 0.0,
        "stop": steps[-1]["stop"] if steps else None,
    }


def token_ids_in(value) -> set[int]:
    """Every int inside the token-bearing fields of step records."""
    if isinstance(value, bool):
        return set()
    if isinstance(value, int):
        return {value}
    if isinstance(value, list):
        return set().union(*map(token_ids_in, value)) if value else set()
    return set()


TOKEN_FIELDS = (
    "committed",
    "block",
    "window",
    "jacobi_update",
    "window_predictions",
    "window_next",
    "harvested",
    "pool_entries",
    "pool_added",
    "pool_evicted",
    "guesses",
    "guess_predictions",
    "trajectories",
    "input_ids",
    "current_token",
)


def vocab_for(tokenizer, ids: set[int]) -> dict[str, str]:
    """Text of each token id, keyed by str(id) so the dict survives JSON unchanged."""
    return {str(i): tokenizer.decode([i]) for i in sorted(ids)}


def machine_facts(lm: LoadedModel) -> dict:
    return {
        **lm.describe(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
    }


def record_trace(
    lm: LoadedModel,
    prompt_ids: list[int],
    method: str,
    config: LookaheadConfig,
    max_new_tokens: int,
    prompt_text: str | None = None,
    on_step: Callable[[dict], None] | None = None,
) -> dict:
    """Decode once and keep every step record; `on_step` sees each record as it is produced."""
    steps = []
    started = time.time()
    for record in decode_steps(lm, prompt_ids, method, config, max_new_tokens):
        steps.append(record)
        if on_step is not None:
            on_step(record)
    ids = set(prompt_ids)
    for record in steps:
        for field in TOKEN_FIELDS:
            ids |= token_ids_in(record.get(field))
    summary = summarize(steps)
    summary["text"] = lm.tokenizer.decode(summary["new_token_ids"], skip_special_tokens=True)
    return {
        "meta": {
            "method": method,
            "settings": config.as_dict() if method == "lookahead" else None,
            "max_new_tokens": max_new_tokens,
            "prompt_text": prompt_text,
            "prompt_token_ids": list(prompt_ids),
            "eos_ids": sorted(lm.eos_ids),
            "machine": machine_facts(lm),
            "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
        },
        "steps": steps,
        "vocab": vocab_for(lm.tokenizer, ids),
        "summary": summary,
    }


def save_trace(trace: dict, path: str | Path) -> None:
    Path(path).write_text(json.dumps(trace, separators=(",", ":")))


def load_trace(path: str | Path) -> dict:
    return json.loads(Path(path).read_text())


def record_run(
    lm: LoadedModel,
    prompt_ids: list[int],
    config: LookaheadConfig,
    max_new_tokens: int,
    prompt_text: str | None = None,
) -> dict[str, dict]:
    """Both traces for one prompt, lookahead then greedy: what a replay of the comparison needs."""
    return {
        method: record_trace(lm, prompt_ids, method, config, max_new_tokens, prompt_text)
        for method in ("lookahead", "greedy")
    }
