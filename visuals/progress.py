"""Panel 7, progress against greedy: forward passes and measured seconds for the same output, so far.

Greedy decoding needs one forward pass per token, so after T tokens it has made T passes; the
method's trace made step + 1 (the prefill included). Their ratio is the compression ratio.
Seconds are the ones both runs measured, on the machine the trace names.
"""

from __future__ import annotations

from typing import NamedTuple

from lookahead_core.records import METHODS, Run, TokenSource

from .caption import plural
from .divergence import divergence_words
from .markup import escape, scroll_region
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


# The tokens-per-step chart: its viewBox CHART_WIDTH wide, drawn as wide as its card but never narrower (a unit is a
# CSS pixel or more, so its text is SMALLEST_TEXT at least as drawn; a narrower card scrolls it, style.css): the
# legend's lines, then the plot, its tick labels left of it and under it
CHART_WIDTH, PLOT_HEIGHT = 420, 160
LEFT, RIGHT, UNDER = 36, 8, 44
LEGEND_LINE = 24
GLYPH = 9.5  # about the width of a character at 16 px (the high-contrast view), to lay out the legend
MOST_TICKS = 8
# a pattern's tile: what it draws in black over the kind's colour (PATTERNS' marks)
TILES = {
    "/": '<path d="M-1,1 l2,-2 M0,6 l6,-6 M5,7 l2,-2" stroke="#000" stroke-width="1.2"/>',
    "x": '<path d="M-1,1 l2,-2 M0,6 l6,-6 M5,7 l2,-2 M-1,5 l2,2 M0,0 l6,6 M5,-1 l2,2" stroke="#000"/>',
    ".": '<circle cx="3" cy="3" r="1.2" fill="#000"/>',
}
GREEDY_LINE = 'stroke-dasharray="3 3" stroke-width="1.5"'


class Frame(NamedTuple):
    """Where the plot lies in the chart: its top, its x axis's height, a pass's slot and a token's height."""

    top: float
    axis: float
    slot: float
    unit: float


def charted_sources(run: Run) -> list[TokenSource]:
    """The sources the chart draws and its legend names: each but SAMPLED always, SAMPLED where the run drew."""
    present = {source for r in run.trace.steps for source in r.sources}
    return [source for source in TokenSource if source in present or source != TokenSource.SAMPLED]


def tick_every(largest: int) -> int:
    """The interval of at most MOST_TICKS ticks from 0 to `largest` (1, 2 or 5 times a power of ten)."""
    scale = 1
    while True:
        for every in (scale, 2 * scale, 5 * scale):
            if largest // every < MOST_TICKS:
                return every
        scale *= 10


def fills_svg(sources: list[TokenSource]) -> str:
    """Each source's fill: its colour, with its pattern's marks over it (never colour alone)."""
    patterns = []
    for source in sources:
        kind = source.value
        tile = TILES.get(PATTERNS[kind], "")
        patterns.append(
            f'<pattern id="ll-fill-{kind}" width="6" height="6" patternUnits="userSpaceOnUse">'
            f'<rect width="6" height="6" fill="{KINDS[kind][0]}"/>{tile}</pattern>'
        )
    return f"<defs>{''.join(patterns)}</defs>"


def legend_svg(sources: list[TokenSource]) -> tuple[str, int]:
    """The legend: a swatch and the marked label of each source, then greedy's line, on as many lines as they
    take; and the height of those lines."""
    swatch = '<rect x="0" y="4" width="16" height="16" fill="url(#ll-fill-{})" stroke="#000"/>'
    items = [(swatch.format(s.value), marked_label(s.value)) for s in sources]
    items.append((f'<path class="ll-axis" d="M0,12 h16" {GREEDY_LINE}/>', "greedy: 1 token a pass"))
    parts, x, y = [], 0, 0
    for swatch, label in items:
        width = 22 + GLYPH * len(label)
        if x and x + width > CHART_WIDTH:
            x, y = 0, y + LEGEND_LINE
        parts.append(
            f'<g transform="translate({x},{y})">{swatch}'
            f'<text x="22" y="17" font-size="{SMALLEST_TEXT}">{escape(label)}</text></g>'
        )
        x += width + 16
    return "".join(parts), y + LEGEND_LINE


def axes_svg(steps: int, tallest: int, frame: Frame) -> str:
    """The y axis (tokens) and the x axis (steps), with their ticks."""
    right = CHART_WIDTH - RIGHT
    parts = [f'<path class="ll-axis" d="M{LEFT},{frame.top} V{frame.axis} H{right}"/>']
    for value in range(0, tallest + 1, tick_every(tallest)):
        y = frame.axis - value * frame.unit
        parts.append(
            f'<text x="{LEFT - 6}" y="{y + 5:.1f}" font-size="{SMALLEST_TEXT}" text-anchor="end">{value}</text>'
        )
    for step in range(0, steps, tick_every(steps - 1)):
        x = LEFT + (step + 0.5) * frame.slot
        parts.append(
            f'<path class="ll-axis" d="M{x:.1f},{frame.axis} v4"/><text x="{x:.1f}" y="{frame.axis + 18}" '
            f'font-size="{SMALLEST_TEXT}" text-anchor="middle">{step}</text>'
        )
    return "".join(parts) + (
        f'<text x="{(LEFT + right) / 2}" y="{frame.axis + UNDER - 4}" font-size="{SMALLEST_TEXT}" '
        'text-anchor="middle">step</text>'
    )


def bars_svg(run: Run, sources: list[TokenSource], frame: Frame) -> str:
    """Each forward pass's bar: the tokens it committed stacked by source, its numbers in its tooltip."""
    parts, width = [], max(frame.slot * 0.85, 1.0)
    for index, record in enumerate(run.trace.steps):
        x, top = LEFT + index * frame.slot + (frame.slot - width) / 2, frame.axis
        counts = [(source, record.sources.count(source)) for source in sources if record.sources.count(source)]
        said = ", ".join(f"{count} {KINDS[source.value][1]}" for source, count in counts)
        rects = []
        for source, count in counts:
            top -= count * frame.unit
            rects.append(
                f'<rect x="{x:.1f}" y="{top:.1f}" width="{width:.1f}" height="{count * frame.unit:.1f}" '
                f'fill="url(#ll-fill-{source.value})" stroke="#000" stroke-width="0.5"/>'
            )
        tip = f"step {record.step}: {plural(len(record.committed), 'token')}" + (f" ({said})" if said else "")
        parts.append(f"<g><title>{escape(tip)}</title>{''.join(rects)}</g>")
    return "".join(parts)


def tokens_per_step_html(run: Run) -> str:
    """Stacked bars: the tokens each forward pass committed, split by how they were produced, and greedy's one a
    pass dotted over them; its title above, its words (`chart_words`) its text alternative."""
    sources = charted_sources(run)
    steps = max(len(run.trace.steps), 1)
    tallest = max([len(r.committed) for r in run.trace.steps] + [2])
    legend, legend_height = legend_svg(sources)
    top = legend_height + 10
    frame = Frame(top, top + PLOT_HEIGHT, (CHART_WIDTH - RIGHT - LEFT) / steps, PLOT_HEIGHT / tallest)
    height = frame.axis + UNDER
    greedy = frame.axis - frame.unit
    svg = (
        f'<svg class="ll-chart" viewBox="0 0 {CHART_WIDTH} {height}" style="min-width:{CHART_WIDTH}px" '
        f'role="img" aria-label="{escape(chart_words(run))}">{fills_svg(sources)}{legend}'
        f"{axes_svg(steps, tallest, frame)}{bars_svg(run, sources, frame)}"
        f'<path class="ll-axis" d="M{LEFT},{greedy:.1f} H{CHART_WIDTH - RIGHT}" {GREEDY_LINE}/></svg>'
    )
    return f'<p class="ll-chart-title">Tokens committed per forward pass</p>{scroll_region(svg, "tokens per pass")}'
