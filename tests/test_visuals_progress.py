"""The progress panel: forward passes and tokens against greedy, and the small tokens-per-step chart."""

from __future__ import annotations

import re
from html import escape

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


def test_tokens_per_step_chart_is_small_and_plain(run):
    figure = progress.tokens_per_step_figure(run)
    assert figure.layout.height <= 300  # 14 px labels (a projector): the legend may take two lines
    assert figure.layout.template.to_plotly_json() == {"data": {"scatter": [{"type": "scatter"}]}}
    stacked = [sum(values) for values in zip(*(bar.y for bar in figure.data), strict=True)]
    assert stacked == [len(r.committed) for r in run.trace.steps]
    legend = figure.layout.legend  # above the plot, below the title: it covered the tallest bars and the title
    assert legend.yanchor == "bottom" and legend.y >= 1 and legend.x == 0 and figure.layout.margin.t >= 50


def test_the_chart_says_in_words_what_it_draws(run):
    """Its text alternative: passes by tokens committed, and tokens by source, the chart's own numbers."""
    words = progress.chart_words(run)
    figure = progress.tokens_per_step_figure(run)
    committed = [len(r.committed) for r in run.trace.steps if r.committed]
    passes = sum(int(n) for n in re.findall(r"(\d+) committed \d+", words))
    assert passes == len(committed) and f"over the {len(committed)} passes" in words
    by_source = words.split("by source: ")[1]
    assert sum(int(n) for n in re.findall(r"(\d+) ", by_source)) == sum(committed)
    assert all(bar.marker.pattern.fgcolor == "#000000" for bar in figure.data)
    assert escape(words) in progress.progress_html(run, 0)
