"""How a Run or a race was timed (Timing): repeated, interleaved rounds, each method's median rate and
speedup with their spread (MethodTiming, Spread), and what else ran meanwhile (Busy). A bench report
keeps its rounds' Spreads and Busy too.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from .names import Method


@dataclass(kw_only=True)
class Spread:
    """A median and the interval around it: the min and max of the rounds for a rate, a bootstrap interval
    for a ratio of medians."""

    median: float
    low: float
    high: float

    def includes(self, value: float) -> bool:
        return self.low <= value <= self.high

    def overlaps(self, other: Spread) -> bool:
        return self.low <= other.high and other.low <= self.high


@dataclass(kw_only=True)
class MethodTiming:
    """One method over the rounds: in each round, the tokens compared and the seconds they took (runs of
    different lengths are cut to the shortest of their round); its rate over the rounds (tokens per second:
    median, min and max) and its speedup, the ratio of its median rate to greedy's with a bootstrap interval
    over the rounds (greedy's own is exactly 1)."""

    method: Method
    tokens: list[int]
    seconds: list[float]
    rate: Spread
    speedup: Spread
    partial: bool  # a round of it was stopped by the deadline before its end

    def median_seconds(self) -> float:
        """The median over the rounds of the seconds the compared tokens took: the time beside the speed, which
        is a median over the same rounds (round 1's time beside it read 2.11 s against greedy's 2.04 s at 1.37×)."""
        return statistics.median(self.seconds)

    def median_tokens(self) -> int:
        """The median over the rounds of the tokens those seconds counted."""
        return round(statistics.median(self.tokens))


@dataclass(kw_only=True)
class Busy:
    """What other programs used while a request measured: CPU time in cores (1.4: 140% of one core) out
    of `cores`, from the operating system's counters (None where they cannot be read)."""

    other_cores: float | None
    cores: int
    seconds: float  # the wall time the reading covers
    heavy: bool  # enough that the timings are less reliable (the lab's threshold, lab.measure.busy.BUSY_CORES)


@dataclass(kw_only=True)
class Timing:
    """How a Run or a race was timed: `rounds` interleaved rounds (every method once per round, in `order`),
    each method's figures, the methods the intervals cannot tell apart from the fastest (`leaders`: one
    method is a clear winner, several are within noise), the round the playback shows, what the rest of the
    machine did meanwhile, and the time the request was given and whether it ran out."""

    rounds: int
    order: list[Method]
    methods: list[MethodTiming]
    leaders: list[Method]
    shown_round: int  # 0-based
    compared_tokens: int  # the tokens each rate counts, in every round (all: equal lengths)
    lengths_differ: bool  # sampled runs stopped at different lengths and were cut to the shorter
    busy: Busy
    budget_seconds: float
    partial: bool  # the deadline stopped some decoding before its end: the figures cover what was done
    # The new tokens every round after the first decoded, where a whole round no longer fitted the time left (a busy
    # machine): each rate then counts that many; 0: every round decoded the whole request (schema 14; before, 0)
    later_tokens: int = 0
    # The new tokens the visitor asked for, where at the machine's latest pace its rounds would not have fitted the
    # time and every decoding was asked for fewer (the max_new_tokens the record itself holds); 0: as asked (schema
    # 14; before, 0)
    asked_tokens: int = 0

    def of(self, method: Method) -> MethodTiming:
        return next(timing for timing in self.methods if timing.method == method)
