"""Panel 7, progress against greedy: forward passes and measured seconds for the same output, so far.

Greedy decoding needs one forward pass per token, so after T tokens it has made T passes; the
method's trace made step + 1 (the prefill included). Their ratio is the compression ratio.
Seconds are the ones both runs measured, on the machine the trace names.
"""

from __future__ import annotations

import plotly.graph_objects as go

from lookahead_core.records import METHODS, Run, TokenSource

from .caption import plural
from .divergence import divergence_words
from .markup import escape
from .palette import KINDS, PATTERNS, SMALLEST_TEXT, marked_label


def progress_at(run: Run, index: int) -> dict:
    """Tokens, passes and seconds of both methods after step `index` of the method's trace."""
    steps = run.trace.steps[: index + 1]
    tokens = sum(len(r.committed) for r in steps)
    greedy_steps = run.greedy.steps[:tokens]
    ours = run.trace.summary.new_token_ids[:tokens]
    theirs = run.greedy.summary.new_token_ids[:tokens]
    return {
        "tokens": tokens,
        "passes": len(steps),
        "greedy_passes": len(greedy_steps),
        "compression": tokens / len(steps),
        "seconds": sum(r.step_seconds for r in steps),
        "greedy_seconds": sum(r.step_seconds for r in greedy_steps),
        "same_as_greedy": ours == theirs,
    }


def bar(label: str, value: float, scale: float, text: str, kind: str) -> str:
    width = 100 * value / scale if scale else 0
    return (
        f'<div class="ll-bar"><span class="ll-bar-label">{label}</span><span class="ll-bar-track">'
        f'<span class="ll-bar-fill ll-{kind}" style="width:{width:.1f}%"></span></span>'
        f'<span class="ll-bar-value">{escape(text)}</span></div>'
    )


def chart_words(run: Run) -> str:
    """The tokens-per-step chart in one sentence: how many forward passes committed each number of tokens, and
    how the run's tokens split by source (its text alternative, for a screen reader and for the export)."""
    steps = [r for r in run.trace.steps if r.committed]
    counts: dict[int, int] = {}
    for record in steps:
        counts[len(record.committed)] = counts.get(len(record.committed), 0) + 1
    spread = ", ".join(f"{counts[k]} committed {k}" for k in sorted(counts))
    sources = [source for r in steps for source in r.sources]
    split = ", ".join(f"{sources.count(s)} {KINDS[s.value][1]}" for s in TokenSource if sources.count(s))
    passes = plural(len(steps), "pass", "passes")
    return f"Tokens committed per forward pass, over the {passes} of this run: {spread}; by source: {split}."


def progress_html(run: Run, index: int) -> str:
    p = progress_at(run, index)
    device = run.trace.meta.machine.device_name
    passes = max(p["passes"], p["greedy_passes"])
    seconds = max(p["seconds"], p["greedy_seconds"])
    plain = "greedy" if run.trace.meta.sampling is None else "sampling"
    ours = METHODS[run.trace.meta.method].short
    if run.trace.meta.sampling is not None:
        same = "sampled: the two runs draw differently, from the same distribution"
    elif p["same_as_greedy"]:
        same = "output identical to greedy so far ✓"
    elif run.divergence is not None:
        same = divergence_words(run.divergence, ours)
    else:  # a run recorded before divergences were kept
        same = "output differs from greedy (half precision can flip near-ties)"
    return (
        f'<div class="ll-progress"><h3>Forward passes for the same {plural(p["tokens"], "token")}</h3>'
        + bar(ours, p["passes"], passes, str(p["passes"]), "lookahead")
        + bar(plain, p["greedy_passes"], passes, str(p["greedy_passes"]), "guaranteed")
        + f'<h3>Measured time <span class="ll-dim">on {escape(device)}</span></h3>'
        + bar(ours, p["seconds"], seconds, f"{p['seconds']:.2f} s", "lookahead")
        + bar(plain, p["greedy_seconds"], seconds, f"{p['greedy_seconds']:.2f} s", "guaranteed")
        + f'<p class="ll-ratio"><b>{p["compression"]:.2f}</b> tokens per step (compression ratio) · '
        f'{escape(same)}</p><p class="ll-note">{escape(chart_words(run))}</p></div>'
    )


def tokens_per_step_figure(run: Run) -> go.Figure:
    """Stacked bars: tokens each forward pass committed, split by how they were produced."""
    steps = run.trace.steps
    x = [r.step for r in steps]
    figure = go.Figure()
    present = {source for r in steps for source in r.sources}
    for source in (s for s in TokenSource if s in present or s != TokenSource.SAMPLED):
        kind = source.value
        figure.add_bar(
            x=x,
            y=[r.sources.count(source) for r in steps],
            name=marked_label(kind),
            marker={"color": KINDS[kind][0], "pattern": {"shape": PATTERNS[kind], "fgcolor": "#000000"}},
        )
    figure.add_hline(
        y=1,
        line_dash="dot",
        line_color="#555",
        annotation_text="greedy:<br>1 a pass",
        annotation_position="right",  # in the right margin, beside the line's end: drawn inside, it lay on the bars
        annotation_font_size=SMALLEST_TEXT,
    )
    figure.update_layout(
        template="none",
        barmode="stack",
        height=290,
        margin={"l": 44, "r": 78, "t": 72, "b": 44},  # the title, then the legend: each a line of its own
        title={"text": "Tokens committed per forward pass", "font": {"size": 17}, "x": 0.01, "y": 0.98},
        # above the plot, never on a bar; SMALLEST_TEXT at least anywhere: a projector washes out small text
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0, "font": {"size": SMALLEST_TEXT}},
        xaxis={"title": {"text": "step"}, "tickfont": {"size": SMALLEST_TEXT}},
        yaxis={"tickfont": {"size": SMALLEST_TEXT}, "dtick": 1, "rangemode": "tozero"},
        bargap=0.15,
        font={"size": SMALLEST_TEXT},
    )
    return figure
