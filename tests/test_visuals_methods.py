"""Speculative decoding and prompt lookup have no Jacobi window and no n-gram pool: those panels say so (Medusa's heads
and suffix decoding's tree take the pool's panel)."""

from __future__ import annotations

import pytest

from lookahead_core.records import METHODS, HeadsRecord, Method
from tests.visual_checks import PRESETS, example
from visuals import methods, replay
from visuals.heads import heads_html
from visuals.lesson import shown_text
from visuals.suffix import suffix_html


@pytest.mark.parametrize("preset_id", [p["id"] for p in PRESETS if p.get("method", "lookahead") != "lookahead"])
def test_a_method_without_window_or_pool_says_so(preset_id):
    run = example(preset_id)
    method = run.trace.meta.method
    for index in range(replay.last_step(run) + 1):
        shown = replay.panels(run, index)
        assert shown["window"] == methods.no_window_html(method) and "has no Jacobi window" in shown["window"]
        if method == Method.MEDUSA:  # its heads take the pool's panel
            assert shown["pool"] == heads_html(run.trace.steps[index], run.trace.vocab)
        elif method == Method.SUFFIX:  # so does its tree (tests/test_visuals_suffix.py)
            assert shown["pool"] == suffix_html(run.trace.steps[index], run.trace.vocab)
        else:
            assert shown["pool"] == methods.no_pool_html(method) and "keeps no n-gram pool" in shown["pool"]
    assert ">" + METHODS[method].short + "<" in replay.panels(run, 1)["progress"]


def test_the_heads_panel_shows_each_heads_choices_and_marks_the_accepted_one_in_words():
    run = example("study-tips-medusa")
    index = next(i for i, s in enumerate(run.trace.steps) if s.verification and s.verification.accepted)
    record = run.trace.steps[index]
    html = replay.panels(run, index)["pool"]
    for guesses in record.report(HeadsRecord).heads:
        assert f"head {guesses.head} " in html and f"{guesses.probabilities[0]:.0%}" in html
    assert html.count("✓ accepted") == record.verification.accepted
    assert f"{record.verification.accepted} of the heads' guesses matched" in shown_text(html)
    missed = next(i for i, s in enumerate(run.trace.steps) if s.verification and not s.verification.accepted)
    assert "✓ accepted" not in replay.panels(run, missed)["pool"]  # negative control: a step with no match
    assert "first pass gives it" in replay.panels(run, 0)["pool"]
