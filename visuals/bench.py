"""A bench report (a BenchReport record) as one self-contained HTML page with Plotly inlined; several side by side.

A report timed in rounds shows medians with their spread (error bars on the speedups); an older one, timed once,
shows its single figures and says so.
"""

from __future__ import annotations

from collections.abc import Callable

import plotly.graph_objects as go
import plotly.io as pio

from lookahead_core.records import (
    METHODS,
    BenchMethod,
    BenchReport,
    BenchResult,
    BenchSettings,
    BenchTotals,
    Method,
    entrant_settings,
)

from .caption import plural
from .looks import look
from .markup import escape
from .methods import sentence_words
from .palette import GREEN
from .timing import bench_rate, bench_rounds_words, bench_speedup, busy_words, mode_words, products_words


def exact_words(totals: BenchTotals) -> str:
    """Prompts whose output equalled greedy generate, of all; a sampled bench compares none."""
    return f"{totals.exact}/{totals.prompts}" if totals.exact is not None else "not compared"


def error_bars(rows: list[BenchTotals | None]) -> dict | None:
    """Plotly error bars from each speedup's median to the ends of its interval (None: no interval is known)."""
    intervals = [row.speedup_interval if row else None for row in rows]
    if all(interval is None for interval in intervals):
        return None
    return {
        "type": "data",
        "symmetric": False,
        "array": [i.high - i.median if i else 0 for i in intervals],
        "arrayminus": [i.median - i.low if i else 0 for i in intervals],
        "color": "#555",
    }


def speedup_figure(report: BenchReport) -> go.Figure:
    """Each method's total speedup over the baseline with its interval when timed in rounds, and its exact count."""
    methods = list(report.summary)
    figure = go.Figure(
        go.Bar(
            x=[m.value for m in methods],
            y=[report.summary[m].speedup for m in methods],
            error_y=error_bars(list(report.summary.values())),
            marker_color=[look(m).hue for m in methods],
            marker_pattern_shape=[look(m).pattern for m in methods],
            text=[f"{s.speedup:.2f}x · exact {exact_words(s)}" for s in report.summary.values()],
            textposition="outside",
        )
    )
    figure.add_hline(y=1, line_dash="dot", line_color="#555")
    figure.update_layout(
        template="none",
        height=360,
        title=f"Speedup over {report.settings.baseline} (tokens per second, same run)",
        yaxis={"rangemode": "tozero"},
        margin={"t": 60},
    )
    return figure


def per_prompt_figure(report: BenchReport, figure_of: Callable[[BenchResult], float], title: str) -> go.Figure:
    """A per-prompt figure (such as tokens per second) of every method on every prompt."""
    figure = go.Figure()
    ids = [row.id for row in report.prompts]
    for method in report.summary:
        figure.add_bar(
            x=ids,
            y=[figure_of(row.methods[method]) for row in report.prompts],
            name=method.value,
            marker_color=look(method).hue,
            marker_pattern_shape=look(method).pattern,
        )
    figure.update_layout(template="none", height=360, barmode="group", title=title, yaxis={"rangemode": "tozero"})
    return figure


def summary_rows(report: BenchReport) -> str:
    rows = []
    for method, s in report.summary.items():
        rows.append(
            f"<tr><td>{escape(method)}</td><td>{s.tokens}</td><td>{s.steps}</td>"
            f"<td>{s.tokens_per_step:.2f}</td><td>{s.seconds:.2f}</td><td>{bench_rate(s)}</td>"
            f"<td><b>{bench_speedup(s)}</b></td><td>{exact_words(s)}</td></tr>"
        )
    return "".join(rows)


def lookahead_words(settings: BenchSettings) -> str:
    """Lookahead's settings: W, N, G with the full plan, or the auto choice and the measured figure behind it ("" where
    lookahead did not run)."""
    ran = settings.by_method.lookahead
    if ran is None:
        return ""
    if ran.regime is None and settings.auto_why is None:
        return f"W={ran.window} N={ran.ngram} G={ran.guesses}, {ran.planner} plan"
    chosen = f"auto: W={ran.window} N={ran.ngram} G={ran.guesses}, {ran.planner} plan"
    if ran.regime is not None:
        return (
            f"{chosen} ({ran.regime} regime: the line fitted through the measured curve puts a "
            f"{ran.probe_tokens}-token step at {ran.probe_ratio:.2f}× a 1-token step)"
        )
    return f"{chosen} ({settings.auto_why})"


def settings_words(settings: BenchSettings) -> str:
    """Each entrant's settings, a sentence each, lookahead's first, each named by the entrants that ran with them
    (a peer borrows a method's: hf-assisted runs with speculative decoding's draft)."""
    lookahead = f"Lookahead: {lookahead_words(settings)}." if settings.by_method.lookahead is not None else ""
    borrowers: dict[Method, list[str]] = {}
    for entrant in settings.methods:
        method = entrant_settings(entrant)
        if method is not None:
            borrowers.setdefault(method, []).append(METHODS[method].name if entrant.method == method else entrant.value)
    names = {method: " and ".join(named) for method, named in borrowers.items()}
    return f"{lookahead} {sentence_words(settings.by_method.without(Method.LOOKAHEAD), names)}".strip()


def bench_report_html(report: BenchReport) -> str:
    """A page with the totals table, the machine and settings, and three Plotly charts (plotly.js inlined)."""
    machine, settings = report.machine, report.settings
    charts = [
        speedup_figure(report),
        per_prompt_figure(report, lambda r: r.tokens_per_second, "Tokens per second, per prompt"),
        per_prompt_figure(
            report, lambda r: r.tokens_per_step, "Tokens per step, per prompt: what each forward pass bought"
        ),
    ]
    body = "".join(
        pio.to_html(chart, full_html=False, include_plotlyjs="inline" if i == 0 else False)
        for i, chart in enumerate(charts)
    )
    facts = (
        f"{machine.model} · {machine.device_name} · {machine.dtype} · "
        f"{mode_words(settings.mode, settings.mode_note)} · "
        + (f"{products_words(machine.products)} · " if machine.products else "")
        + f"torch {machine.torch} · "
        f"transformers {machine.transformers} · {settings.ran_at}"
    )
    timing = bench_rounds_words(settings)
    if report.busy is not None:
        timing += " " + busy_words(report.busy, "this bench")
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>Lookahead Lab bench: {escape(settings.dataset)}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}}
table{{border-collapse:collapse}}td,th{{padding:4px 10px;border-bottom:1px solid #ddd;text-align:right}}
td:first-child,th:first-child{{text-align:left}}.dim{{color:#666}}.ok{{color:{GREEN}}}</style></head>
<body><h1>Lookahead Lab bench: {escape(settings.dataset)}</h1>
<p class="dim">{escape(facts)}</p>
<p>{plural(len(report.prompts), "prompt")}, {plural(settings.max_new_tokens, "new token")} each;
speedup is tokens per second over <b>{escape(settings.baseline)}</b> measured in the same run; exact counts the
prompts whose output equals greedy <code>generate</code> token for token. {escape(settings_words(settings))}</p>
<p>{escape(timing)}</p>
<table><tr><th>method</th><th>tokens</th><th>steps</th><th>tokens/step</th><th>seconds</th><th>tokens/s</th>
<th>speedup</th><th>exact</th></tr>{summary_rows(report)}</table>
{body}</body></html>
"""


def exactness_words(reports: dict[str, BenchReport]) -> str:
    """How many lookahead outputs equalled greedy generate, counted from the greedy reports themselves."""
    counts = [
        r.summary[BenchMethod.LOOKAHEAD]
        for r in reports.values()
        if BenchMethod.LOOKAHEAD in r.summary and r.summary[BenchMethod.LOOKAHEAD].exact is not None
    ]
    exact, prompts = sum(c.exact for c in counts), sum(c.prompts for c in counts)
    return f"lookahead output equal to greedy generate on {exact} of {prompts} prompts"


def overview_figure(reports: dict[str, BenchReport]) -> go.Figure:
    """Speedup of every method over its baseline, one group per report (labelled by the dict's keys)."""
    labels = list(reports)
    methods = [m for m in BenchMethod if any(m in report.summary for report in reports.values())]
    figure = go.Figure()
    for method in methods:
        rows = [reports[label].summary.get(method) for label in labels]
        figure.add_bar(
            x=labels,
            y=[row.speedup if row else None for row in rows],
            error_y=error_bars(rows),
            name=method.value,
            marker_color=look(method).hue,
            marker_pattern_shape=look(method).pattern,
            text=[f"{row.speedup:.2f}x" if row else "" for row in rows],
            textposition="outside",
        )
    figure.add_hline(y=1, line_dash="dot", line_color="#555")
    figure.update_layout(
        template="none",
        barmode="group",
        width=900,
        height=420,
        title={
            "text": f"Speedup over hf-greedy (model.generate), measured in the same run<br>"
            f"<sup>{exactness_words(reports)}</sup>",
            "font": {"size": 14},
        },
        yaxis={"rangemode": "tozero", "title": {"text": "× tokens per second of hf-greedy"}},
        legend={"orientation": "h", "y": -0.12},
        margin={"t": 70, "b": 70},
    )
    return figure
