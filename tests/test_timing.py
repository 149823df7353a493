"""Repeated, interleaved timings: rates at equal lengths, ratios of medians with intervals, and the verdict.

Laps are built from injected step times, so every figure is known in advance; each verdict test has
its counterpart that must come out the other way (a verdict that could not say "within noise", or
could not name a winner, would pass one of them and fail the other).
"""

from __future__ import annotations

import itertools

import pytest

from lab.measure.timing import (
    ROUND_MARGIN,
    SHORTEST_ROUND,
    Lap,
    compared_length,
    later_length,
    leaders,
    method_timings,
    ratio_of_medians,
    round_rates,
    shown_round,
    timing_of,
)
from lookahead_core.records import Busy, Method, Spread

G, L, P, S = Method.GREEDY, Method.LOOKAHEAD, Method.PROMPT_LOOKUP, Method.SPECULATIVE


def lap(method: Method, step_seconds: float, tokens_per_step: int = 1, steps: int = 32, partial=False) -> Lap:
    """A lap of `steps` equal steps, each committing `tokens_per_step` tokens in `step_seconds`."""
    return Lap(
        method=method,
        tokens=[i * tokens_per_step for i in range(steps + 1)],
        seconds=[i * step_seconds for i in range(steps + 1)],
        partial=partial,
    )


def rounds_of(step_seconds: dict[Method, list[float]], tokens_per_step: dict[Method, int] | None = None):
    """Rounds of laps: `step_seconds[m][r]` is method m's step time in round r."""
    tokens_per_step = tokens_per_step or {}
    count = len(next(iter(step_seconds.values())))
    return [[lap(m, times[r], tokens_per_step.get(m, 1)) for m, times in step_seconds.items()] for r in range(count)]


def test_a_rate_counts_the_same_tokens_as_the_shortest_lap_of_its_round():
    short = Lap(method=G, tokens=[0, 1, 2, 3], seconds=[0.0, 1.0, 2.0, 3.0])  # 3 tokens: a sampled EOS
    long = Lap(method=L, tokens=[0, 2, 4, 6, 8], seconds=[0.0, 1.0, 2.0, 3.0, 4.0])
    assert compared_length([short, long]) == 3
    assert round_rates([short, long]) == {G: (3, 3.0), L: (4, 2.0)}  # lookahead's first step past 3 tokens


def test_the_speedup_is_the_ratio_of_medians_with_an_interval_around_it():
    rounds = rounds_of({G: [0.10, 0.11, 0.09], L: [0.05, 0.05, 0.06]})
    greedy, lookahead = method_timings(rounds)
    assert greedy.speedup == Spread(median=1.0, low=1.0, high=1.0)
    assert lookahead.rate.median == pytest.approx(1 / 0.05) and lookahead.rate.low == pytest.approx(1 / 0.06)
    assert lookahead.speedup.median == pytest.approx((1 / 0.05) / (1 / 0.10))
    assert lookahead.speedup.low <= lookahead.speedup.median <= lookahead.speedup.high
    assert lookahead.tokens == [32, 32, 32] and lookahead.seconds == pytest.approx([1.6, 1.6, 1.92])


def test_the_bootstrap_keeps_rounds_paired():
    # Round 2 was slow for everyone (a burst of load): paired, the ratio is the same in every round.
    rates = [10.0, 5.0, 10.0]
    base = [5.0, 2.5, 5.0]
    assert ratio_of_medians(rates, base) == Spread(median=2.0, low=2.0, high=2.0)


def test_a_clear_winner_is_named_and_a_close_race_is_within_noise():
    clear = method_timings(rounds_of({G: [0.10, 0.10, 0.10], L: [0.05, 0.051, 0.049], P: [0.08, 0.081, 0.079]}))
    assert leaders(clear) == [L]
    close = method_timings(rounds_of({G: [0.10, 0.10, 0.10], L: [0.05, 0.07, 0.06], P: [0.055, 0.065, 0.06]}))
    assert leaders(close) == [L, P]


def test_an_interval_that_includes_one_is_within_noise_of_greedy():
    noisy = method_timings(rounds_of({G: [0.10, 0.10, 0.10], L: [0.08, 0.12, 0.095]}))
    assert noisy[1].speedup.includes(1.0) and set(leaders(noisy)) == {G, L}
    slower = method_timings(rounds_of({G: [0.10, 0.10, 0.10], L: [0.20, 0.21, 0.19]}))
    assert leaders(slower) == [G]


def test_the_playback_shows_the_round_of_median_speed():
    rounds = rounds_of({G: [0.1, 0.1, 0.1], L: [0.04, 0.06, 0.05]})
    assert shown_round(rounds, L) == 2


def test_a_cut_lap_marks_its_method_partial():
    rounds = [[lap(G, 0.1), lap(L, 0.05, steps=10, partial=True)]]
    greedy, lookahead = method_timings(rounds)
    assert lookahead.partial and not greedy.partial
    assert lookahead.tokens == [10] and greedy.tokens == [10]  # compared over what both reached


@pytest.mark.parametrize("order", list(itertools.permutations([G, L, P])))
def test_the_figures_do_not_depend_on_the_lane_order(order):
    times = {G: [0.1, 0.12, 0.11], L: [0.05, 0.06, 0.055], P: [0.07, 0.075, 0.08]}
    rounds = rounds_of({m: times[m] for m in order})
    figures = {t.method: t.speedup for t in method_timings(rounds)}
    assert figures[L].median == pytest.approx(0.11 / 0.055) and figures[G].median == 1.0
    assert leaders(method_timings(rounds)) == [L]


def test_one_round_names_no_winner():
    single = method_timings(rounds_of({G: [0.10], L: [0.05]}))
    assert leaders(single) == [G, L]


def test_runs_of_different_lengths_say_whether_the_deadline_or_sampling_made_them_so():
    """A greedy Run cut by its deadline once said its lengths differed because "sampled text stops at its own end
    of sequence"."""
    from lab.measure.timing import timing_of
    from lookahead_core.records import Busy
    from visuals.timing import lengths_words

    quiet = Busy(other_cores=0.0, cores=2, seconds=1.0, heavy=False)
    cut = timing_of([[lap(L, 0.05, steps=10, partial=True), lap(G, 0.1, steps=6, partial=True)]], 0, quiet, 30.0)
    ended = timing_of([[lap(L, 0.05, steps=10), lap(G, 0.1, steps=6)]], 0, quiet, 30.0)
    assert "the deadline stopped them" in lengths_words(cut, "greedy") and "sampled" not in lengths_words(cut, "x")
    assert "sampled text stops at its own end of sequence" in lengths_words(ended, "greedy")


def test_a_later_round_decodes_the_most_tokens_that_let_the_rounds_left_fit():
    """The first round (G: 1 token a step, L: 2) took 10 s on the deadline's clock; M tokens cost the share of it
    its laps spent reaching M. Each boundary is checked from both sides."""
    first = [lap(G, 0.1), lap(L, 0.1, tokens_per_step=2)]  # 32 tokens: 3.2 s, then 1.6 s to 32
    took, whole = 10.0, 3.2 + 3.2
    assert later_length(first, took, 2 * ROUND_MARGIN * took, 2) == compared_length(first)  # a whole round fits

    def cost(tokens: int) -> float:  # G needs `tokens` steps, L half as many (rounded up)
        return took * (0.1 * tokens + 0.1 * -(-tokens // 2)) / whole

    left = 2 * ROUND_MARGIN * cost(20)
    assert later_length(first, took, left, 2) == 20 and later_length(first, took, left - 1e-9, 2) < 20
    assert later_length(first, took, left, 1) > 20  # one round left: it may decode more
    assert later_length(first, took, 2 * ROUND_MARGIN * cost(SHORTEST_ROUND) - 1e-9, 2) == 0  # too few: none


def test_rounds_cut_to_fit_are_compared_with_the_first_over_their_length():
    """Round 1 decoded 32 tokens, round 2 (cut to fit) 16: both rates count the first 16, so equal step times
    give one rate, and the record says how many tokens the later rounds decoded."""
    whole = [lap(G, 0.1), lap(L, 0.1, tokens_per_step=2)]
    cut = [lap(G, 0.1, steps=16), lap(L, 0.1, tokens_per_step=2, steps=8)]
    timings = method_timings([whole, cut])
    assert [t.tokens for t in timings] == [[16, 16], [16, 16]]
    assert all(t.rate.low == t.rate.high for t in timings)  # the same text at the same pace: one rate
    record = timing_of([whole, cut], 0, Busy(other_cores=None, cores=2, seconds=0.0, heavy=False), 60.0, 16)
    assert (record.compared_tokens, record.later_tokens) == (16, 16)
