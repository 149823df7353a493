"""The per-request budget: a request is refused exactly when its worst case on the measured costs exceeds its time."""

from __future__ import annotations

import pytest

from lab.budget import (
    PREFILL_SHARE,
    BudgetError,
    Prices,
    check_budget,
    decodings,
    longest_prompt,
    most_new_tokens,
    prefill_seconds,
    request_seconds,
)
from lookahead_core.config import LookaheadConfig, LookupConfig
from lookahead_core.records import Method
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


def test_the_most_new_tokens_fit_and_one_more_is_refused():
    fitting = most_new_tokens(PRICES, 40, RUN, 30.0)
    assert fitting > 0
    assert request_seconds(PRICES, 40, fitting, RUN) <= 30.0 < request_seconds(PRICES, 40, fitting + 1, RUN)
    check_budget(PRICES, 40, fitting, RUN, 30.0)
    with pytest.raises(BudgetError, match=f"at most {fitting} fit"):
        check_budget(PRICES, 40, fitting + 1, RUN, 30.0)


def test_a_prompt_whose_prefills_take_too_long_is_refused_with_the_longest_that_fits():
    longest = longest_prompt(PRICES, RUN, 30.0)
    assert prefill_seconds(PRICES, longest, RUN) <= PREFILL_SHARE * 30.0 < prefill_seconds(PRICES, longest + 1, RUN)
    with pytest.raises(BudgetError, match=f"at most {longest:,} prompt tokens"):
        check_budget(PRICES, longest + 1, 1, RUN, 30.0)


def test_a_draft_costs_its_passes():
    speculative = decodings((Method.SPECULATIVE,), LookaheadConfig(), LookupConfig(), 4)
    dearer = Prices(PRICES.costs, draft_pass=0.1)
    assert most_new_tokens(dearer, 10, speculative, 30.0) < most_new_tokens(PRICES, 10, speculative, 30.0)


def test_a_recording_reports_every_forward_pass_and_ends_with_its_run(tiny_lm):
    *progress, run = recording_run(
        tiny_lm, [1, 2, 3, 4], DecodeRequest(lookahead=LookaheadConfig(4, 3, 4), max_new_tokens=12)
    )
    assert all(isinstance(p, Progress) for p in progress)
    timed = [p for p in progress if not p.warming_up]
    assert [p.part for p in progress if p.warming_up][0] == 1 and {p.part for p in timed} == {3, 4}
    assert len(timed) == len(run.trace.steps) + len(run.greedy.steps)
    assert timed[-1].tokens == run.greedy.summary.tokens and timed[-1].method == Method.GREEDY
