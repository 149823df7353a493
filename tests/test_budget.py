"""The per-request budget: refused only when not even MIN_TOKENS fit; past that, a deadline that holds while it works;
prices that learn from every step."""

from __future__ import annotations

import pytest

from lab.budget import (
    MIN_TOKENS,
    PREFILL_SHARE,
    BudgetError,
    Deadline,
    Prices,
    check_budget,
    decodings,
    longest_prompt,
    most_new_tokens,
    prefill_seconds,
    request_seconds,
)
from lookahead_core.config import LookaheadConfig, LookupConfig
from lookahead_core.records import DraftRecord, Method, StepKind, StepRecord
from lookahead_core.request import DecodeRequest
from lookahead_core.trace import Progress, recording_run

from .conftest import cost_table

PRICES = Prices(cost_table(0.05), draft_pass=0.008)
RUN = decodings((Method.LOOKAHEAD, Method.GREEDY), LookaheadConfig(5, 4, 5), LookupConfig(), 4)


def test_each_method_is_priced_at_its_widest_step():
    work = decodings(
        (Method.GREEDY, Method.LOOKAHEAD, Method.PROMPT_LOOKUP, Method.SPECULATIVE),
        LookaheadConfig(5, 4, 5),
        LookupConfig(tokens=10, candidates=2),
        4,
    )
    assert [(d.width, d.draft_passes) for d in work] == [(1, 0), (30, 0), (21, 0), (5, 4)]


def test_the_most_new_tokens_that_fit_at_worst():
    fitting = most_new_tokens(PRICES, 40, RUN, 30.0)
    assert fitting > 0
    assert request_seconds(PRICES, 40, fitting, RUN) <= 30.0 < request_seconds(PRICES, 40, fitting + 1, RUN)


def test_a_request_past_what_fits_runs_and_one_where_not_even_min_tokens_fit_is_refused():
    fitting = most_new_tokens(PRICES, 40, RUN, 30.0)
    check_budget(PRICES, 40, fitting + 100, RUN, 30.0)  # the deadline will stop it: not refused
    seconds = request_seconds(PRICES, 40, MIN_TOKENS, RUN)
    check_budget(PRICES, 40, 256, RUN, seconds)
    with pytest.raises(BudgetError, match=f"Even {MIN_TOKENS} new tokens .* Lower W, N or G"):
        check_budget(PRICES, 40, 256, RUN, seconds * 0.99)
    with pytest.raises(BudgetError, match="Even 3 new tokens") as auto:
        check_budget(PRICES, 40, 3, RUN, request_seconds(PRICES, 40, 3, RUN) * 0.99, auto=True)
    assert "W, N" not in str(auto.value)  # auto chooses its own: the sliders would not help


def test_a_prompt_whose_prefills_take_too_long_is_refused_with_the_longest_that_fits():
    longest = longest_prompt(PRICES, RUN, 30.0)
    assert prefill_seconds(PRICES, longest, RUN) <= PREFILL_SHARE * 30.0 < prefill_seconds(PRICES, longest + 1, RUN)
    with pytest.raises(BudgetError, match=f"at most {longest:,} prompt tokens"):
        check_budget(PRICES, longest + 1, 1, RUN, 30.0)


def test_a_draft_costs_its_passes():
    speculative = decodings((Method.SPECULATIVE,), LookaheadConfig(), LookupConfig(), 4)
    dearer = Prices(PRICES.costs, draft_pass=0.1)
    assert most_new_tokens(dearer, 10, speculative, 30.0) < most_new_tokens(PRICES, 10, speculative, 30.0)


def decode_step(fed: int, seconds: float, draft: tuple[int, float] | None = None) -> StepRecord:
    """A decoding step record with only what the prices read filled in."""
    passes = DraftRecord(tokens=[], forward_passes=draft[0], seconds=draft[1]) if draft else None
    return StepRecord(
        step=1,
        method=Method.GREEDY,
        kind=StepKind.DECODE,
        position=0,
        tokens_fed=fed,
        committed=[1],
        sources=[],
        stop=None,
        forward_seconds=seconds,
        step_seconds=seconds,
        draft=passes,
    )


def test_prices_learn_from_the_steps_the_server_runs():
    prices = Prices(cost_table(0.05), draft_pass=0.008)
    assert prices.scale == 1.0
    busy = [decode_step(fed, 2 * prices.costs.seconds_for(fed)) for fed in (1, 8, 30)] * 3
    prices.learn(busy)  # the machine got busy: every step took twice its price
    assert prices.scale == pytest.approx(2.0) and prices.step(8) == pytest.approx(2 * prices.costs.seconds_for(8))
    prices.learn([decode_step(1, prices.costs.seconds_for(1))] * 200)  # and quiet again
    assert prices.scale == pytest.approx(1.0)
    prices.learn([decode_step(5, 2 * prices.costs.seconds_for(5) + 0.04, draft=(4, 0.04))])
    assert prices.draft() == pytest.approx(0.01) and prices.scale == pytest.approx(1.0)  # the draft's time apart


def test_a_deadline_shares_the_time_left_among_the_decodings_to_come():
    now = [0.0]
    deadline = Deadline(30.0, clock=lambda: now[0])
    until = deadline.shares((Method.LOOKAHEAD, Method.GREEDY))
    assert not until(Method.LOOKAHEAD)  # lookahead's share: 15 s from now
    now[0] = 10.0
    assert not until(Method.LOOKAHEAD) and not until(Method.GREEDY)  # greedy's: all 20 s left, from 10 s
    now[0] = 15.0
    assert until(Method.LOOKAHEAD) and not until(Method.GREEDY)
    now[0] = 30.0
    assert until(Method.GREEDY) and deadline.passed() and deadline.left() == 0.0


def test_a_recording_reports_every_forward_pass_and_ends_with_its_run(tiny_lm):
    *progress, run = recording_run(
        tiny_lm, [1, 2, 3, 4], DecodeRequest(lookahead=LookaheadConfig(4, 3, 4), max_new_tokens=12)
    )
    assert all(isinstance(p, Progress) for p in progress)
    timed = [p for p in progress if not p.warming_up]
    assert [p.part for p in progress if p.warming_up][0] == 1 and {p.part for p in timed} == {3, 4}
    assert len(timed) == len(run.trace.steps) + len(run.greedy.steps)
    assert timed[-1].tokens == run.greedy.summary.tokens and timed[-1].method == Method.GREEDY


def test_a_cost_aware_plan_is_priced_as_plain_steps_and_a_busy_machine_is_named_in_a_refusal():
    config = LookaheadConfig(4, 8, 4)
    full = decodings((Method.LOOKAHEAD,), config, LookupConfig(), 4)
    planned = decodings((Method.LOOKAHEAD,), config, LookupConfig(), 4, cost_aware=True)
    assert full[0].width == config.tokens_per_step and planned[0].width == 1
    prices = Prices(cost_table(0.05), draft_pass=0.008)
    seconds = request_seconds(prices, 4, MIN_TOKENS, RUN)
    prices.learn([decode_step(1, 3 * prices.costs.seconds_for(1))] * 10)  # the machine got three times slower
    with pytest.raises(BudgetError, match="This machine is busy now: its latest steps took 3.0×"):
        check_budget(prices, 4, 64, RUN, seconds)
    quiet = Prices(cost_table(0.05), draft_pass=0.008)
    with pytest.raises(BudgetError) as refused:
        check_budget(quiet, 4, 64, RUN, seconds * 0.9)
    assert "busy" not in str(refused.value)
