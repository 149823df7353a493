"""Live records, never saved in a document: how far a recording has come (Progress, yielded after every
forward pass), what a timed step counts (StepTally) and what fits in a request's time at the latest prices (Fit).
"""

from __future__ import annotations

from dataclasses import dataclass

from .names import Method, StepKind, StopReason


@dataclass(frozen=True, kw_only=True)
class Progress:
    """How far a recording has come, yielded after every forward pass: a live record, never stored in a trace.

    `part` of `parts` numbers the decodings a request makes (warm-ups included), `method` is the
    one decoding now, `warming_up` says it is an untimed warm-up; `steps` and `tokens` count its
    forward passes and new tokens so far, out of at most `max_new_tokens`.
    """

    part: int
    parts: int
    method: Method
    warming_up: bool
    steps: int
    tokens: int
    max_new_tokens: int


@dataclass(kw_only=True)
class Fit:
    """What fits in a request's time on this machine at its latest prices: the most new tokens for which
    `rounds` rounds of a Run (two decodings, both at plain decoding's pace: one `step_seconds` step per token, learned
    from the latest steps) and of a race (its lanes, each at its method's latest pace, at least plain decoding's)
    fit."""

    step_seconds: float
    rounds: int
    run_seconds: float
    run_tokens: int
    race_seconds: float
    race_tokens: int


@dataclass(frozen=True, kw_only=True)
class StepTally:
    """One forward pass as a timed lane counts it: the lean path's step, which keeps no rows, plan, window, pool or
    verification. Its fields read as a StepRecord's of the same names (so the totals take either):
    `draft_seconds` is what a draft model's own passes took before it, `verified_tokens` the candidate tokens it
    verified and `accepted_tokens` those accepted; `drafted_inside` says the step drafted inside itself on the device
    (EAGLE's device step), its draft's passes in its `step_seconds`, not timed apart."""

    step: int
    kind: StepKind
    tokens_fed: int
    committed: list[int]
    stop: StopReason | None
    forward_seconds: float
    step_seconds: float
    draft_seconds: float = 0.0
    verified_tokens: int = 0
    accepted_tokens: int = 0
    drafted_inside: bool = False
