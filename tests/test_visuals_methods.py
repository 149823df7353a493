"""Speculative decoding and prompt lookup have no Jacobi window and no n-gram pool: those panels say so."""

from __future__ import annotations

import pytest

from tests.visual_checks import PRESETS, example
from visuals import methods, replay


@pytest.mark.parametrize("preset_id", [p["id"] for p in PRESETS if p.get("method", "lookahead") != "lookahead"])
def test_a_method_without_window_or_pool_says_so(preset_id):
    run = example(preset_id)
    method = run.trace.meta.method
    for index in range(replay.last_step(run) + 1):
        shown = replay.panels(run, index)
        assert shown["window"] == methods.no_window_html(method) and "has no Jacobi window" in shown["window"]
        assert shown["pool"] == methods.no_pool_html(method) and "keeps no n-gram pool" in shown["pool"]
    assert ">" + methods.SHORT_NAMES[method] + "<" in replay.panels(run, 1)["progress"]
