"""The prediction behind the tune map: a method's speedup from two measured curves, by arithmetic alone.

A decoding's time is its prefill, plus each decode step's forward pass, priced off the hardware's step-cost
curve at the rows that pass ran (the rows the step fed; in a fixed-shape step mode the shape's T, which every
pass runs, pad rows and all: on an H200's captured step prompt lookup fed 9 rows a step and paid for 21), plus
the host's time beyond the forward pass (proposing, verifying, a draft's own passes), measured by decoding. A
method's rate is its tokens over that time; its predicted speedup is that rate over plain decoding's, priced the
same way. The curve is scaled so that its 1-row step costs what plain decoding's steps cost in this sweep, so a
curve measured under another load still prices the rows.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Decoded:
    """What decoding one cell (or plain decoding) measured over the prompts: every new token, the rows fed in
    each decode step (the prefills apart), and the host's seconds beyond the forward passes, summed; `shape` the
    rows every pass ran in a fixed-shape step (fixed.py's T), 0 where each pass ran only the rows it fed."""

    tokens: int
    rows: tuple[int, ...]
    host_seconds: float
    shape: int = 0

    @property
    def ran(self) -> tuple[int, ...]:
        """The rows each decode step's pass ran: the rows it fed, padded up to the fixed shape."""
        return tuple(max(rows, self.shape) for rows in self.rows)

    @property
    def tokens_per_step(self) -> float:
        """New tokens per decode step; each prompt's first token came from its prefill."""
        return self.tokens / max(len(self.rows), 1)


StepCost = Callable[[int], float]  # the cost of a step that feeds n rows, in 1-row steps


def relative_cost(cost: StepCost, decoded: Decoded) -> float:
    """The mean cost of a decoding's steps in 1-row steps."""
    return statistics.fmean(cost(rows) for rows in decoded.ran) if decoded.rows else 1.0


def predicted_seconds(cost: StepCost, decoded: Decoded, unit: float, prefill_seconds: float) -> float:
    """The time a decoding should take: the prefills, each step at `unit` seconds per 1-row step times its
    relative cost, and the host's measured time."""
    return prefill_seconds + unit * sum(cost(rows) for rows in decoded.ran) + decoded.host_seconds


def predicted_speedup(cost: StepCost, cell: Decoded, plain: Decoded, unit: float, prefill_seconds: float) -> float:
    """The cell's predicted rate over plain decoding's, both priced off the same curve (see the module)."""
    cell_rate = cell.tokens / predicted_seconds(cost, cell, unit, prefill_seconds)
    plain_rate = plain.tokens / predicted_seconds(cost, plain, unit, prefill_seconds)
    return cell_rate / plain_rate


def best(predicted: Sequence[float]) -> int:
    """The index of the highest predicted speedup (the first on ties)."""
    return max(range(len(predicted)), key=lambda i: (predicted[i], -i))


def within(predicted: float, measured: float, tolerance: float = 0.15) -> bool:
    """Whether a prediction lies within `tolerance` (a share) of the measured speedup."""
    return abs(predicted - measured) <= tolerance * measured
