"""The progress panel: forward passes and tokens against greedy, and the small tokens-per-step chart."""

from __future__ import annotations

import re
from html import escape

import pytest

from lookahead_core.records import TokenSource
from tests.visual_checks import greedy_only
from visuals import progress, replay


def test_progress_counts_passes_against_greedy(run):
    greedy_only(run)
    ours = run.trace
    for index in (0, replay.last_step(run)):
        p = progress.progress_at(run, index)
        tokens_so_far = sum(len(r.committed) for r in ours.steps[: index + 1])
        assert p["tokens"] == p["greedy_passes"] == tokens_so_far
        assert p["passes"] == index + 1
        assert p["same_as_greedy"]  # float32 on the CPU: lookahead is exact
        html = progress.progress_html(run, index)
        assert f"{p['compression']:.2f}</b> tokens per step" in html
        assert escape(ours.meta.machine.device_name) in html


def bars(chart: str) -> list[tuple[str, list[tuple[str, float]]]]:
    """Each bar of the chart: its tooltip, and its rectangles' (fill, height) from the bottom up."""
    groups = re.findall(r"<g><title>([^<]*)</title>(.*?)</g>", chart)
    return [
        (tip, [(f, float(h)) for h, f in re.findall(r'height="([^"]+)" fill="url\(#ll-fill-(\w+)\)', rects)])
        for tip, rects in groups
    ]


def test_tokens_per_step_chart_stacks_each_pass_by_source(run):
    """A bar a forward pass: its rectangles, bottom up, one a source it committed, each as tall as its count;
    its tooltip says the same."""
    chart = progress.tokens_per_step_html(run)
    drawn = bars(chart)
    assert len(drawn) == len(run.trace.steps)
    tallest = max(range(len(drawn)), key=lambda i: len(run.trace.steps[i].committed))
    unit = sum(height for _, height in drawn[tallest][1]) / len(run.trace.steps[tallest].committed)
    for (tip, rects), record in zip(drawn, run.trace.steps, strict=True):
        counts = [(s.value, record.sources.count(s)) for s in TokenSource if record.sources.count(s)]
        assert [fill for fill, _ in rects] == [kind for kind, _ in counts]
        assert tip.startswith(f"step {record.step}: {len(record.committed)} token")
        for (_, height), (_, count) in zip(rects, counts, strict=True):
            assert height == pytest.approx(count * unit, abs=0.11)


def test_the_chart_says_in_words_what_it_draws(run):
    """Its text alternative: passes by tokens committed, and tokens by source, the chart's own numbers; each
    source's fill is its colour with black marks over it (the guaranteed tokens' plain), never colour alone."""
    words = progress.chart_words(run)
    chart = progress.tokens_per_step_html(run)
    committed = [len(r.committed) for r in run.trace.steps if r.committed]
    passes = sum(int(n) for n in re.findall(r"(\d+) committed \d+", words))
    assert passes == len(committed) and f"over the {len(committed)} passes" in words
    by_source = words.split("by source: ")[1]
    assert sum(int(n) for n in re.findall(r"(\d+) ", by_source)) == sum(committed)
    assert f'role="img" aria-label="{escape(words)}"' in chart
    fills = {kind: tile for kind, tile in re.findall(r'<pattern id="ll-fill-(\w+)"[^>]*>(.*?)</pattern>', chart)}
    sampled = {"sampled"} if run.trace.meta.sampling is not None else set()
    assert set(fills) == {"guaranteed", "accepted", "bonus"} | sampled  # a greedy run draws nothing sampled
    assert all('"#000"' in tile for kind, tile in fills.items() if kind != "guaranteed")
    assert len({tile for tile in fills.values()}) == len(fills)
    assert escape(words) in progress.progress_html(run, 0)
