"""Speed figures a benchmark engineer would sign: interleaved rounds, medians, spreads and an honest verdict.

A method's speed is timed in rounds (every method once per round, in the same order), so a burst of
load elsewhere on the machine hits every method alike. Each method's rate is the median over the
rounds with its min and max; a speedup is the ratio of two medians, with a bootstrap interval that
resamples whole rounds (pairs stay paired). The verdict names a winner only when its interval clears
everyone else's: otherwise the leaders are "within noise". Runs of different lengths (sampled ones
stop at their own end-of-sequence) are compared over the same number of tokens, cut to the shortest.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

from lookahead_core.records import Busy, Method, MethodTiming, Spread, Timing

ROUND_MARGIN = 1.1  # another round starts only if the longest so far, times this, fits in the time left
SHORTEST_ROUND = 16  # new tokens: a later round that only this many would fit is not run (mostly its prefill's time)
RESAMPLES = 2000
CONFIDENCE = 0.95
ONE = Spread(median=1.0, low=1.0, high=1.0)  # greedy's speedup over itself


@dataclass(frozen=True, kw_only=True)
class Lap:
    """One method's decoding in one round: cumulative tokens and seconds after each step (0 and 0.0 first),
    and whether the deadline stopped it before its end."""

    method: Method
    tokens: Sequence[int]
    seconds: Sequence[float]
    partial: bool = False


def seconds_to(lap: Lap, tokens: int) -> tuple[int, float]:
    """The first step at which `lap` had `tokens` tokens or more: the tokens it had then and their seconds."""
    for count, seconds in zip(lap.tokens, lap.seconds, strict=True):
        if count >= tokens:
            return count, seconds
    return lap.tokens[-1], lap.seconds[-1]


def compared_length(laps: Sequence[Lap]) -> int:
    """The tokens every lap of a round reached: the shortest lap's total."""
    return min(lap.tokens[-1] for lap in laps)


def rounds_length(rounds: Sequence[Sequence[Lap]]) -> int:
    """The tokens every lap of every round reached: what each rate counts, so every round counts the same text."""
    return min(compared_length(laps) for laps in rounds)


def round_rates(laps: Sequence[Lap], length: int | None = None) -> dict[Method, tuple[int, float]]:
    """Each lap's (tokens, seconds) up to `length` tokens (default: the round's compared length), so every rate
    counts the same text."""
    length = compared_length(laps) if length is None else length
    return {lap.method: seconds_to(lap, length) for lap in laps}


def later_length(first: Sequence[Lap], took: float, left: float, rounds: int) -> int:
    """The new tokens each of `rounds` more rounds may decode so that all of them fit in `left` seconds (with
    ROUND_MARGIN), priced by the first round, which took `took` seconds on the same clock: a round of M tokens
    costs the share of it that the first round's laps spent reaching M. The first round's compared length where
    that fits, else the most that fit; 0 where fewer than SHORTEST_ROUND do (no more rounds then)."""
    whole = sum(lap.seconds[-1] for lap in first)
    if whole <= 0:
        return 0

    def cost(tokens: int) -> float:
        return took * sum(seconds_to(lap, tokens)[1] for lap in first) / whole

    fitting = [n for n in range(SHORTEST_ROUND, compared_length(first) + 1) if rounds * ROUND_MARGIN * cost(n) <= left]
    return max(fitting, default=0)


def rate(tokens: int, seconds: float) -> float:
    return tokens / seconds if seconds else 0.0


def spread_of(values: Sequence[float]) -> Spread:
    return Spread(median=statistics.median(values), low=min(values), high=max(values))


def ratio_of_medians(rates: Sequence[float], base: Sequence[float], seed: int = 0) -> Spread:
    """median(rates) / median(base), with a bootstrap interval: whole rounds resampled, pairs kept together."""
    median = statistics.median(rates) / statistics.median(base)
    if len(rates) < 2:
        return Spread(median=median, low=median, high=median)
    draw = random.Random(seed)
    rounds = range(len(rates))
    ratios = []
    for _ in range(RESAMPLES):
        picked = [draw.choice(rounds) for _ in rounds]
        ratios.append(statistics.median(rates[i] for i in picked) / statistics.median(base[i] for i in picked))
    ratios.sort()
    tail = (1 - CONFIDENCE) / 2
    low = ratios[int(tail * (RESAMPLES - 1))]
    high = ratios[int((1 - tail) * (RESAMPLES - 1))]
    return Spread(median=median, low=min(low, median), high=max(high, median))


def later_rounds(first: Sequence[Lap], took: float, left: float, rounds: int) -> int | None:
    """How the `rounds` rounds after the first run, decided once after it (which took `took` seconds, with `left`
    seconds left): None where they all fit whole (each still starts only while it fits), else the new tokens every
    one of them decodes (later_length; 0: none runs)."""
    if left >= rounds * ROUND_MARGIN * took:
        return None
    return later_length(first, took, left, rounds)


def method_timings(rounds: Sequence[Sequence[Lap]]) -> list[MethodTiming]:
    """Every method's figures over complete rounds (greedy's lap in each): rates and speedups over greedy, every
    rate over the tokens every lap of every round reached (later rounds cut short to fit compare their length)."""
    length = rounds_length(rounds)
    per_round = [round_rates(laps, length) for laps in rounds]
    figures = {lap.method: [r[lap.method] for r in per_round] for lap in rounds[0]}
    partial = {m: any(lap.partial for laps in rounds for lap in laps if lap.method == m) for m in figures}
    return timings_of(figures, partial)


def timings_of(figures: dict[Method, list[tuple[int, float]]], partial: dict[Method, bool]) -> list[MethodTiming]:
    """Every method's figures from its (tokens, seconds) in each round (greedy's among them, rounds paired by
    position): rates, and speedups over greedy."""
    rates = {m: [rate(tokens, seconds) for tokens, seconds in rounds] for m, rounds in figures.items()}
    return [
        MethodTiming(
            method=method,
            tokens=[tokens for tokens, _ in rounds],
            seconds=[seconds for _, seconds in rounds],
            rate=spread_of(rates[method]),
            speedup=ONE if method == Method.GREEDY else ratio_of_medians(rates[method], rates[Method.GREEDY]),
            partial=partial[method],
        )
        for method, rounds in figures.items()
    ]


def pooled(earlier: Timing, later: Timing) -> Timing | None:
    """The rounds of two measurements of one question as one: every method's rounds together, so the medians
    and intervals cover both (rounds stay paired within each). None where they do not compare: other methods,
    another length counted, or a measurement the deadline cut."""
    same = earlier.order == later.order and earlier.compared_tokens == later.compared_tokens
    if not same or earlier.partial or later.partial or earlier.later_tokens or later.later_tokens:
        return None
    figures = {
        t.method: list(zip(t.tokens + later.of(t.method).tokens, t.seconds + later.of(t.method).seconds, strict=True))
        for t in earlier.methods
    }
    timings = timings_of(figures, dict.fromkeys(figures, False))
    return replace(
        earlier,
        rounds=earlier.rounds + later.rounds,
        methods=timings,
        leaders=leaders(timings),
        busy=busy_over(earlier.busy, later.busy),
        budget_seconds=earlier.budget_seconds + later.budget_seconds,
    )


def busy_over(first: Busy, second: Busy) -> Busy:
    """What other programs used over two readings: their cores weighted by each reading's seconds."""
    seconds = first.seconds + second.seconds
    known = first.other_cores is not None and second.other_cores is not None and seconds > 0
    others = (first.other_cores * first.seconds + second.other_cores * second.seconds) / seconds if known else None
    return Busy(other_cores=others, cores=first.cores, seconds=seconds, heavy=first.heavy or second.heavy)


def leaders(timings: Sequence[MethodTiming]) -> list[Method]:
    """The fastest method by median and every method whose interval overlaps its interval (greedy's is 1.0
    exactly): one method is a clear winner; several are within noise of each other. One round gives no
    interval at all, so after one round every method is a leader: no winner can be named."""
    if len(timings[0].seconds) < 2:
        return [t.method for t in timings]
    best = max(timings, key=lambda t: t.speedup.median)
    return [t.method for t in timings if t is best or t.speedup.overlaps(best.speedup)]


def shown_round(rounds: Sequence[Sequence[Lap]], method: Method) -> int:
    """The round whose `method` lap is its median-rate lap: the round a playback shows as typical."""
    length = rounds_length(rounds)
    rates = [rate(*round_rates(r, length)[method]) for r in rounds]
    ranked = sorted(range(len(rates)), key=rates.__getitem__)
    return ranked[(len(ranked) - 1) // 2]


def timing_of(
    rounds: Sequence[Sequence[Lap]], shown: int, busy: Busy, budget_seconds: float, later_tokens: int = 0
) -> Timing:
    """The record of complete `rounds` (every method's lap in each, in the order they ran): every method's
    figures, the leaders, the round `shown`, what other programs used meanwhile, the time given (0: none), and
    the new tokens the rounds after the first were cut to where a whole one no longer fitted it (0: none was)."""
    timings = method_timings(rounds)
    lengths = {lap.tokens[-1] for lap in rounds[shown]}
    return Timing(
        rounds=len(rounds),
        order=[lap.method for lap in rounds[0]],
        methods=timings,
        leaders=leaders(timings),
        shown_round=shown,
        compared_tokens=rounds_length(rounds),
        lengths_differ=len(lengths) > 1,
        busy=busy,
        budget_seconds=budget_seconds,
        partial=any(t.partial for t in timings),
        later_tokens=later_tokens,
    )
