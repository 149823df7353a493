"""The race panel: tokens against wall-clock time for greedy and lookahead, and why one won.

Pure functions of a race record (`records.RaceRecord`, made by `lab.race.race`): the curves, the
measured numbers, and the cost of a wide step on the hardware it ran on (the figure that explains
a slow lookahead).
"""

from __future__ import annotations

from html import escape

import plotly.graph_objects as go

from lookahead_core.records import RaceRecord

from .palette import BLUE, GREY, SKY, VERMILLION
from .plans import settings_words, triple
from .summary import stat, used_words

LAYOUT = {
    "template": "none",
    "margin": {"l": 50, "r": 12, "t": 36, "b": 40},
    "legend": {"orientation": "h", "y": 1.14, "x": 1, "xanchor": "right", "font": {"size": 11}},
    "font": {"size": 11},
}


def race_figure(result: RaceRecord) -> go.Figure:
    """Tokens committed against seconds since the start, one line per method."""
    figure = go.Figure()
    for method, run, hue in (("greedy", result.greedy, BLUE), ("lookahead", result.lookahead, SKY)):
        figure.add_scatter(
            x=run.seconds,
            y=run.tokens,
            mode="lines",
            line={"color": hue, "width": 3 if method == "lookahead" else 2, "shape": "hv"},
            name=f"{method}: {run.tokens[-1]} tokens in {run.seconds[-1]:.2f} s",
        )
    figure.update_layout(
        **LAYOUT,
        height=300,
        title={"text": "Tokens against wall-clock time", "font": {"size": 13}, "x": 0.01},
        xaxis={"title": {"text": "seconds"}, "rangemode": "tozero"},
        yaxis={"title": {"text": "tokens"}, "rangemode": "tozero"},
    )
    return figure


def cost_figure(result: RaceRecord) -> go.Figure:
    """The measured cost of one forward pass against tokens fed, with where this run's steps sat."""
    costs, run = result.step_costs, result.lookahead
    base = costs.seconds[0]
    figure = go.Figure()
    figure.add_scatter(
        x=costs.sizes,
        y=[s / base for s in costs.seconds],
        mode="lines+markers",
        line={"color": GREY},
        name=f"cost of a step (measured on this hardware, {costs.measured_at})",
    )
    figure.add_scatter(
        x=[run.mean_tokens_fed],
        y=[result.step_cost_ratio],
        mode="markers",
        marker={"color": VERMILLION, "size": 12, "symbol": "diamond"},
        name=f"this race: {run.decode_tokens_per_step:.2f} tokens committed per step",
    )
    figure.add_hline(y=1, line_dash="dot", line_color="#555")
    figure.update_layout(
        **LAYOUT,
        height=300,
        title={"text": "Time of one step, in 1-token steps", "font": {"size": 13}, "x": 0.01},
        xaxis={"title": {"text": "tokens fed to the forward pass"}, "type": "log"},
        yaxis={"title": {"text": "× a 1-token step"}, "rangemode": "tozero"},
    )
    return figure


def race_story(result: RaceRecord) -> str:
    """Whether lookahead won this race, and the two measured numbers that decide it."""
    run, machine = result.lookahead, result.machine
    where = f"{machine.device_name} ({machine.dtype})"
    fed, ratio, committed = run.mean_tokens_fed, result.step_cost_ratio, run.decode_tokens_per_step
    steps = (
        f"a lookahead step fed {fed:.0f} tokens on average and took {ratio:.2f}x a greedy step, "
        f"and it committed {committed:.2f} tokens per step"
    )
    if result.speedup >= 1:
        return f"Lookahead finished {result.speedup:.2f}x as fast as greedy on {where}: {steps}."
    return (
        f"No speedup here: lookahead took {1 / result.speedup:.2f}x as long as greedy on {where}. On this hardware "
        f"{steps}. A step pays only when it commits more tokens than it costs: the figure on the right shows "
        "what each width costs here."
    )


def exact_stat(result: RaceRecord) -> str:
    if result.exact is None:
        s = result.sampling
        return stat("sampled", "output not compared", f"both drew at T={s.temperature:g}, seed {s.seed}: draws differ")
    return stat("✓ identical" if result.exact else "✗ differs", "output vs greedy", "token for token")


def race_html(result: RaceRecord, used: float | None = None, gpu: bool = False) -> str:
    """The measured race in numbers: speedup, tokens per step, the settings used and the hardware.

    `used`: the seconds the whole request held the model (on ZeroGPU, the visitor's GPU quota).
    """
    settings, machine, ours, theirs = result.settings, result.machine, result.lookahead, result.greedy
    plan = "auto, planned per step" if settings.regime is not None else f"{settings.planner.value} plan"
    stats = [
        stat(
            f"{result.speedup:.2f}×",
            "speedup over greedy",
            "lookahead's tokens per second / plain decoding's, this run",
        ),
        stat(f"{ours.tokens_per_step:.2f}", "tokens per step", "lookahead's tokens / its forward passes"),
        stat(
            f"{ours.seconds[-1]:.2f} s vs {theirs.seconds[-1]:.2f} s",
            "lookahead vs greedy",
            "wall time with the device synchronised; nothing drawn while timing",
        ),
        stat(triple(settings), plan, "the settings lookahead raced with"),
        exact_stat(result),
    ]
    why = f"<p class='ll-dim'>Settings: {escape(settings_words(settings))}</p>"
    facts = f"{machine.model} · {machine.device_name} · {machine.dtype} · measured {result.ran_at}"
    return (
        f'<div class="ll-summary"><div class="ll-stats">{"".join(stats)}</div>'
        f"<p>{escape(race_story(result))}</p>{why}<div class='ll-dim'><i>{escape(facts)}</i></div>"
        + (f"<div class='ll-dim'>{escape(used_words(used, gpu))}</div>" if used is not None else "")
        + "</div>"
    )
