"""Cost-aware plans: an auto run on a tiny random Llama names each plan, and its steps that left the window
out say so; every other per-step check passes on it too."""

from __future__ import annotations

from html import escape

import pytest

from lookahead_core.records import PlanReason, Run
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime
from tests.visual_checks import TINY_MOTIFS, check_step, decode_steps, tiny_lm
from visuals import caption, plans, replay, summary, window


@pytest.fixture(scope="module")
def auto_run() -> Run:
    """A tiny run with auto settings on a steep cost table: the cost-aware planner leaves the window out."""
    from lookahead_core.trace import record_run
    from lookahead_core.tuning import choose_settings

    from .tiny import cost_table

    prompt = (TINY_MOTIFS[3] * 4)[:13]
    return record_run(
        tiny_lm(), prompt, DecodeRequest(max_new_tokens=40), Runtime(auto=choose_settings(cost_table(0.2)))
    )


def test_an_auto_run_renders_its_plans_and_the_window_left_out(auto_run):
    trace = auto_run.trace
    steps = decode_steps(auto_run)
    assert {r.window.fed for _, r in steps} == {True, False}, "want steps with and without the window"
    assert any(r.plan.reason != PlanReason.PAPER for _, r in steps)
    for index, record in steps:
        check_step(auto_run, index)
        html = caption.caption_html(trace, index)
        if record.plan.reason != PlanReason.PAPER:
            words = plans.plan_words(record.plan)
            assert f"Plan: {escape(words[0].upper() + words[1:])}." in html
        shown_window = window.window_html(record, trace.vocab, trace.meta.settings.lookahead.ngram)
        left_out = "The plan left the window out of this step's forward pass"
        assert (left_out in shown_window) == (not record.window.fed)
        if not record.window.fed:
            assert "new level" not in shown_window
            assert all(row.branch != "window" for row in record.rows)
    for index in range(replay.last_step(auto_run) + 1):
        assert all(replay.panel_values(auto_run, index))
    html = summary.summary_html(auto_run)
    assert "cost-aware plan" in html and "Auto: on test hardware" in html


def test_a_plan_says_what_it_tried_in_plain_words_before_its_figures():
    """A student once read only "Plan: No window and 1 of 3 guesses, 7 tokens each: 6.50 tokens expected for 1.64x
    the measured time of a 1-token step". The plain sentence now comes first, the figures after it in brackets."""
    from lookahead_core.records import PlanRecord

    plan = PlanRecord(
        reason=PlanReason.BEST_RATIO,
        window_fed=False,
        guesses_offered=3,
        guesses_verified=1,
        guess_length=7,
        expected_tokens=6.5,
        relative_cost=1.64,
    )
    words = plans.plan_words(plan)
    plain = "this step tried 1 of the 3 guesses the pool offered, without the window: of the plans measured so far"
    figures = "(no window and 1 of 3 guesses, 7 tokens each: 6.50 tokens expected for 1.64x the measured time"
    assert words.startswith(plain) and figures in words and words.index(plain) < words.index(figures)
    fed = plans.plan_words(PlanRecord(**{**plan.__dict__, "window_fed": True, "guesses_verified": 3}))
    assert fed.startswith("this step tried the window and all 3 guesses the pool offered:")
    probe = PlanRecord(**{**plan.__dict__, "reason": PlanReason.PROBE_WINDOW, "window_fed": True, "idle_steps": 5})
    assert plans.plan_words(probe).startswith("this step fed the window again to see whether it pays now")
