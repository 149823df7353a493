"""The bench report as one self-contained HTML page (Plotly inlined), from `bench.run_bench`'s report."""

from __future__ import annotations

import plotly.graph_objects as go
import plotly.io as pio

from .markup import escape
from .palette import BLUE, GREEN, GREY, ORANGE, PURPLE, SKY, VERMILLION

HUES = {
    "greedy": BLUE,
    "lookahead": SKY,
    "prompt-lookup": GREEN,
    "speculative": PURPLE,
    "hf-greedy": GREY,
    "hf-prompt-lookup": ORANGE,
    "hf-assisted": VERMILLION,
}


def speedup_figure(report: dict) -> go.Figure:
    """Each method's total speedup over the baseline, with its exact-match count."""
    summary, baseline = report["summary"], report["settings"]["baseline"]
    methods = list(summary)
    figure = go.Figure(
        go.Bar(
            x=methods,
            y=[summary[m]["speedup"] for m in methods],
            marker_color=[HUES.get(m, PURPLE) for m in methods],
            text=[f"{s['speedup']:.2f}x · exact {s['exact']}/{s['prompts']}" for s in map(summary.get, methods)],
            textposition="outside",
        )
    )
    figure.add_hline(y=1, line_dash="dot", line_color="#555")
    figure.update_layout(
        template="none",
        height=360,
        title=f"Speedup over {baseline} (tokens per second, same run)",
        yaxis={"rangemode": "tozero"},
        margin={"t": 60},
    )
    return figure


def per_prompt_figure(report: dict, field: str, title: str) -> go.Figure:
    """`field` (a per-prompt figure such as tokens_per_second) of every method on every prompt."""
    figure = go.Figure()
    ids = [row["id"] for row in report["prompts"]]
    for method in report["summary"]:
        figure.add_bar(
            x=ids,
            y=[row["methods"][method][field] for row in report["prompts"]],
            name=method,
            marker_color=HUES.get(method, PURPLE),
        )
    figure.update_layout(template="none", height=360, barmode="group", title=title, yaxis={"rangemode": "tozero"})
    return figure


def summary_rows(report: dict) -> str:
    rows = []
    for method, s in report["summary"].items():
        rows.append(
            f"<tr><td>{escape(method)}</td><td>{s['tokens']}</td><td>{s['steps']}</td>"
            f"<td>{s['tokens_per_step']:.2f}</td><td>{s['seconds']:.2f}</td><td>{s['tokens_per_second']:.2f}</td>"
            f"<td><b>{s['speedup']:.2f}x</b></td><td>{s['exact']}/{s['prompts']}</td></tr>"
        )
    return "".join(rows)


def bench_report_html(report: dict) -> str:
    """A page with the totals table, the machine and settings, and three Plotly charts (plotly.js inlined)."""
    machine, settings = report["machine"], report["settings"]
    auto = settings.get("auto")
    lookahead = settings["lookahead"]
    chosen = (
        f"auto: W={auto['window']} N={auto['ngram']} G={auto['guesses']}, {auto['planner']} plan "
        f"({auto['regime']} regime: a {auto['probe_tokens']}-token step measured at {auto['probe_ratio']:.2f}x "
        "a 1-token step)"
        if auto
        else f"W={lookahead['window']} N={lookahead['ngram']} G={lookahead['guesses']}, full plan"
    )
    charts = [
        speedup_figure(report),
        per_prompt_figure(report, "tokens_per_second", "Tokens per second, per prompt"),
        per_prompt_figure(report, "tokens_per_step", "Tokens per step, per prompt: what each forward pass bought"),
    ]
    body = "".join(
        pio.to_html(chart, full_html=False, include_plotlyjs="inline" if i == 0 else False)
        for i, chart in enumerate(charts)
    )
    facts = (
        f"{machine['model']} · {machine['device_name']} · {machine['dtype']} · torch {machine['torch']} · "
        f"transformers {machine['transformers']} · {settings['ran_at']}"
    )
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>Lookahead Lab bench: {escape(settings["dataset"])}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}}
table{{border-collapse:collapse}}td,th{{padding:4px 10px;border-bottom:1px solid #ddd;text-align:right}}
td:first-child,th:first-child{{text-align:left}}.dim{{color:#666}}.ok{{color:{GREEN}}}</style></head>
<body><h1>Lookahead Lab bench: {escape(settings["dataset"])}</h1>
<p class="dim">{escape(facts)}</p>
<p>{len(report["prompts"])} prompts, {settings["max_new_tokens"]} new tokens each; speedup is tokens per second
over <b>{escape(settings["baseline"])}</b> measured in the same run; exact counts the prompts whose output equals
greedy <code>generate</code> token for token. Lookahead settings: {escape(chosen)}</p>
<table><tr><th>method</th><th>tokens</th><th>steps</th><th>tokens/step</th><th>seconds</th><th>tokens/s</th>
<th>speedup</th><th>exact</th></tr>{summary_rows(report)}</table>
{body}</body></html>
"""


def exactness_words(reports: dict[str, dict]) -> str:
    """How many lookahead outputs equalled greedy generate, counted from the reports themselves."""
    counts = [r["summary"]["lookahead"] for r in reports.values() if "lookahead" in r["summary"]]
    exact, prompts = sum(c["exact"] for c in counts), sum(c["prompts"] for c in counts)
    return f"lookahead output equal to greedy generate on {exact} of {prompts} prompts"


def summary_by_name(report: dict) -> dict:
    """The report's totals by today's method names: a report written before this engine had its own
    prompt lookup (no `prompt_lookup` settings) called transformers' `prompt-lookup`."""
    if "prompt_lookup" in report["settings"]:
        return report["summary"]
    return {"hf-prompt-lookup" if m == "prompt-lookup" else m: row for m, row in report["summary"].items()}


def overview_figure(reports: dict[str, dict]) -> go.Figure:
    """Speedup of every method over its baseline, one group per report (labelled by the dict's keys)."""
    labels = list(reports)
    summaries = {label: summary_by_name(report) for label, report in reports.items()}
    methods = [m for m in HUES if any(m in summary for summary in summaries.values())]
    figure = go.Figure()
    for method in methods:
        rows = [summaries[label].get(method) for label in labels]
        figure.add_bar(
            x=labels,
            y=[row["speedup"] if row else None for row in rows],
            name=method,
            marker_color=HUES[method],
            text=[f"{row['speedup']:.2f}x" if row else "" for row in rows],
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
