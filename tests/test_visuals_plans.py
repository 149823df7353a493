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

    from .conftest import cost_table

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
        shown_window = window.window_html(record, trace.vocab, trace.meta.settings.ngram)
        left_out = "The plan left the window out of this step's forward pass"
        assert (left_out in shown_window) == (not record.window.fed)
        if not record.window.fed:
            assert "new level" not in shown_window
            assert all(row.branch != "window" for row in record.rows)
    for index in range(replay.last_step(auto_run) + 1):
        assert all(replay.panel_values(auto_run, index))
    html = summary.summary_html(auto_run)
    assert "cost-aware plan" in html and "Auto: on test hardware" in html
