"""The race panel: the methods' text growing side by side at the measured speed, the curves, and why one won.

Pure functions of a race record (`records.RaceRecord`, made by `lab.measure.race.race`). The playback is
HTML and CSS only: each step's text and counters appear at the second the step ended, as
measured (CSS animation delays), so it plays in any browser with no script and no server; a
checkbox in it pauses every lane at once. The curves and the cost of a wide step on the hardware
it ran on (the figure that explains a slow method) sit below it.
"""

from __future__ import annotations

import textwrap

import plotly.graph_objects as go

from lookahead_core.records import METHODS, Method, RaceLane, RaceRecord

from .caption import plural
from .looks import look
from .markup import escape, scroll_region
from .methods import sentence_words
from .palette import GREY, SMALLEST_TEXT
from .plans import origin_words, triple
from .summary import stat, used_words
from .timing import (
    FEWEST_ROUNDS,
    compared,
    mode_words,
    no_verdict,
    products_words,
    rate_words,
    share_words,
    speedup_words,
    times,
    timing_notes,
    verdict,
)

LAYOUT = {
    "template": "none",
    "margin": {"l": 50, "r": 16, "t": 64, "b": 40},
    "legend": {"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0, "font": {"size": SMALLEST_TEXT}},
    "font": {"size": SMALLEST_TEXT},  # at least anywhere: a projector washes out small text
}
LOG_TICKS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
SLOW = 4  # the slowed playback: four seconds on screen per measured second


def played(result: RaceRecord) -> str:
    """Which round the curves and the playback show, where there were several: its times are that round's, not the
    rounds' medians the table gives."""
    timing = result.timing
    if timing is None or timing.rounds == 1:
        return ""
    return f", round {timing.shown_round + 1} (played back)"


def race_figure(result: RaceRecord) -> go.Figure:
    """Tokens committed against seconds since the start, one line per method, each in its own dash and ended by
    its own marker (visuals.looks): the lines are told apart by shape, not by colour alone."""
    figure = go.Figure()
    for lane in result.lanes:
        drawn = look(lane.method)
        figure.add_scatter(
            x=lane.seconds,
            y=lane.tokens,
            mode="lines+markers",
            line={"color": drawn.hue, "width": 2, "shape": "hv", "dash": drawn.dash},
            marker={"symbol": drawn.marker, "color": drawn.hue, "size": [0] * (len(lane.seconds) - 1) + [10]},
            name=f"{METHODS[lane.method].short}: {plural(lane.tokens[-1], 'token')} in {lane.seconds[-1]:.2f} s",
            cliponaxis=False,
        )
    figure.update_layout(
        **LAYOUT,
        height=380,  # six legend entries above the plot at 14 px, and the plot below them
        title={"text": f"Tokens against wall-clock time{played(result)}", "font": {"size": 17}, "x": 0.01, "y": 0.98},
        legend_itemsizing="constant",  # each entry shows its line's end marker (drawn at the last point only)
        xaxis={"title": {"text": "seconds"}, "rangemode": "tozero"},
        yaxis={"title": {"text": "tokens"}, "rangemode": "tozero"},
    )
    return figure


def step_cost_ratio(result: RaceRecord, lane: RaceLane) -> float:
    """A lane's mean step time over a greedy step's (a draft's passes included)."""
    greedy = result.lane(Method.GREEDY).decode_step_seconds
    return lane.decode_step_seconds / greedy if greedy else 0.0


def below_one_step(fed: float, ratio: float) -> bool:
    """A step of more than one token timed cheaper than a 1-token step: impossible, so timing noise."""
    return fed > 1 and ratio < 1


NOISE = "noise: a step of more tokens cannot cost less than a 1-token step"


def cost_figure(result: RaceRecord) -> go.Figure:
    """The measured cost of one forward pass against tokens fed, with where each method's steps sat. A point
    timed below a 1-token step is drawn hollow and labelled as noise, not as a finding."""
    costs = result.step_costs
    base = costs.seconds[0]
    ratios = [s / base for s in costs.seconds]
    steady = [not below_one_step(size, r) for size, r in zip(costs.sizes, ratios, strict=True)]
    figure = go.Figure()
    figure.add_scatter(
        x=[size for size, ok in zip(costs.sizes, steady, strict=True) if ok],
        y=[r for r, ok in zip(ratios, steady, strict=True) if ok],
        mode="lines+markers",
        line={"color": GREY},
        # in lines of 30 characters at most: a chart 280 pixels wide (a 1024-pixel projector) cut it off
        name="<br>".join(textwrap.wrap(f"one pass, measured on {costs.hardware}, {costs.measured_at}", 30)),
    )
    noisy = [(size, r) for size, r, ok in zip(costs.sizes, ratios, steady, strict=True) if not ok]
    if noisy:
        figure.add_scatter(
            x=[size for size, _ in noisy],
            y=[r for _, r in noisy],
            mode="markers",
            marker={"color": GREY, "size": 10, "symbol": "x-open"},
            name=NOISE,
        )
    for lane in result.lanes[1:]:
        ratio = step_cost_ratio(result, lane)
        noise = below_one_step(lane.mean_tokens_fed, ratio)
        figure.add_scatter(
            x=[lane.mean_tokens_fed],
            y=[ratio],
            mode="markers",
            marker={"color": look(lane.method).hue, "size": 12, "symbol": look(lane.method).marker + ("-open" * noise)},
            name=f"{METHODS[lane.method].short}: {lane.decode_tokens_per_step:.2f} tokens/step"
            + (" (its step time: noise)" if noise else ""),
            cliponaxis=False,
        )
    figure.add_hline(y=1, line_dash="dot", line_color="#555")
    figure.update_layout(
        **LAYOUT,
        height=380,  # six legend entries above the plot at 14 px, and the plot below them
        title={"text": "Time of one step, in 1-token steps", "font": {"size": 17}, "x": 0.01, "y": 0.98},
        # every tick a full-size label: a log axis's own minor labels are drawn small
        xaxis={"title": {"text": "tokens fed to the forward pass"}, "type": "log", "tickvals": LOG_TICKS},
        yaxis={"title": {"text": "× a 1-token step"}, "rangemode": "tozero"},
    )
    return figure


def charts_words(result: RaceRecord) -> str:
    """The two charts in words (their text alternative): where each method's tokens stood in time, and what
    one step cost each method against the measured cost curve."""
    reached = "; ".join(
        f"{METHODS[lane.method].short} {plural(lane.tokens[-1], 'token')} at {lane.seconds[-1]:.2f} s"
        for lane in result.lanes
    )
    costs = result.step_costs
    curve = f"{costs.seconds[-1] / costs.seconds[0]:.2f}× for {costs.sizes[-1]} tokens fed"
    steps = "; ".join(
        f"{METHODS[lane.method].short} fed {lane.mean_tokens_fed:.1f} tokens a step on average, at "
        f"{step_cost_ratio(result, lane):.2f}× a greedy step, for {lane.decode_tokens_per_step:.2f} tokens a step"
        for lane in result.lanes[1:]
    )
    return (
        f"The charts in words. Tokens against time{played(result)}: {reached}. One forward pass, measured on "
        f"{costs.hardware}, costs {curve} against a 1-token pass; {steps}."
    )


# ----------------------------------------------------------------------------------------------
# The verdict


def lane_reason(result: RaceRecord, lane: RaceLane) -> str:
    """Why a lane ran as fast as it did: tokens per step against the cost of a step (and the draft's share)."""
    ratio = step_cost_ratio(result, lane)
    words = f"{lane.decode_tokens_per_step:.2f} tokens per step, each step {ratio:.2f}× a greedy step"
    if below_one_step(lane.mean_tokens_fed, ratio):
        words += f" ({NOISE}: this difference is timing noise)"
    if lane.acceptance is not None:
        words += f", {share_words(lane.acceptance)} of the candidate tokens accepted"
    if lane.drafted_inside:
        words += ", its drafts made inside its steps on the device (their time is in each step's)"
    elif lane.draft_seconds:
        words += f", {lane.draft_seconds / lane.seconds[-1]:.0%} of its time in the draft model"
    return words


def race_story(result: RaceRecord) -> str:
    """Which method won on this prompt and this hardware, and the measured figures that decided it: with
    repeated rounds, the verdict of their intervals (none from fewer than FEWEST_ROUNDS); a race timed once (an
    older record) says so."""
    machine = result.machine
    where = f"{machine.device_name} ({machine.dtype})"
    if result.timing is not None:
        timing = result.timing
        withheld = no_verdict(timing, where)
        if withheld:
            return withheld
        leader = max((timing.of(m) for m in timing.leaders), key=lambda t: t.speedup.median).method
        why = (
            f" {METHODS[leader].short.capitalize()}: {lane_reason(result, result.lane(leader))}."
            if leader != Method.GREEDY
            else ""
        )
        return verdict(result.timing, where) + why
    best = max(result.lanes[1:], key=lambda lane: lane.speedup)
    if best.speedup < 1:
        return (
            f"No method beat greedy decoding on {where}: the best, {METHODS[best.method].short}, ran "
            f"{best.speedup:.2f}× as fast ({lane_reason(result, best)}). A step pays only when it commits more "
            f"tokens than it costs: the figure on the right shows what each width costs on {where}."
        )
    name = METHODS[best.method].name
    return f"{name} won on {where}, {best.speedup:.2f}× as fast as greedy: {lane_reason(result, best)}."


def best_stat(result: RaceRecord) -> str:
    """The race's headline figure: the winner's speedup where the intervals name one; else no figure but "no
    verdict" and why, with what it withholds (the leaders' intervals when within noise: a big "fastest:" label
    flipped between methods from race to race, each time within noise); a race timed once gives no verdict."""
    timing = result.timing
    tooltip = "median tokens per second / greedy's, over the rounds"
    if timing is None:
        best = max(result.lanes[1:], key=lambda lane: lane.speedup)
        return verdictless(f"timed once: {METHODS[best.method].short} {best.speedup:.2f}×", tooltip)
    if not compared(timing):
        return verdictless(speedup_words(timing, result.lanes[1].method), tooltip)
    if timing.rounds < FEWEST_ROUNDS:
        return verdictless(f"fewer than {FEWEST_ROUNDS} rounds", tooltip)
    leader = max((timing.of(m) for m in timing.leaders), key=lambda t: t.speedup.median)
    if len(timing.leaders) == 1:
        return stat(times(leader.speedup), f"best: {METHODS[leader.method].short}", tooltip)
    within = ", ".join(f"{METHODS[m].short} {times(timing.of(m).speedup)}" for m in timing.leaders)
    return verdictless(f"within noise: {within}", tooltip)


def verdictless(why: str, tooltip: str) -> str:
    """The headline where no verdict is given: the words, never a figure, and why beneath."""
    return stat("no verdict", why, tooltip).replace('class="ll-stat"', 'class="ll-stat ll-no-verdict"', 1)


def tokens_stat(result: RaceRecord) -> str:
    """The new tokens each lane decoded at most: as asked, or fewer where the machine's pace cut the request."""
    asked = result.timing.asked_tokens if result.timing is not None else 0
    label = f"new tokens at most, of {asked} asked" if asked else "max new tokens"
    return stat(f"{result.max_new_tokens}", label, "every method decoded the same prompt")


def exact_words(result: RaceRecord, lane: RaceLane) -> str:
    """Whether the lane wrote what greedy wrote, over the tokens both wrote where a deadline cut one short."""
    if lane.exact is None:
        return "sampled: not compared"
    words = "✓ same as greedy" if lane.exact else "✗ differs from greedy"
    both = min(len(lane.new_token_ids), len(result.lanes[0].new_token_ids))
    if both < max(len(lane.new_token_ids), len(result.lanes[0].new_token_ids)):
        words += f" over the first {both} tokens both wrote"
    return words


def lane_speed(result: RaceRecord, lane: RaceLane) -> str:
    """A lane's speedup (with its interval over the rounds) over its rate, as HTML (two lines: the table's `why`
    column keeps its width on a projector's 1024 pixels), or the one timing of an older race."""
    if result.timing is None:
        return f"{lane.speedup:.2f}×"
    return f"{escape(speedup_words(result.timing, lane.method))}<br>{escape(rate_words(result.timing.of(lane.method)))}"


def lane_time(result: RaceRecord, lane: RaceLane) -> tuple[str, str]:
    """A row's time and tokens: the median over the rounds of the seconds the compared tokens took, from the same
    rounds as the speed's median (round 1's time read 2.11 s beside greedy's 2.04 s and "1.37×"); an older race's
    one timing."""
    if result.timing is None:
        return f"{lane.seconds[-1]:.2f} s", str(lane.tokens[-1])
    figures = result.timing.of(lane.method)
    return f"{figures.median_seconds():.2f} s", str(figures.median_tokens())


def lane_row(result: RaceRecord, lane: RaceLane) -> str:
    reason = lane_reason(result, lane) if lane.method != Method.GREEDY else "one token per forward pass"
    seconds, tokens = lane_time(result, lane)
    return (
        f'<tr><th style="--k:{look(lane.method).hue}">{escape(METHODS[lane.method].name)}</th>'
        f"<td>{lane_speed(result, lane)}</td><td>{seconds}</td><td>{tokens}</td>"
        f"<td>{lane.steps}</td><td class='ll-dim'>{escape(reason)} · {escape(exact_words(result, lane))}</td></tr>"
    )


def table_head(result: RaceRecord) -> str:
    """The table's header: with rounds, the time and tokens are the rounds' medians, as the speed is; the passes
    are the round played back."""
    if result.timing is None:
        columns = ("method", "speed", "time", "tokens", "passes", "why")
    else:
        columns = ("method", "speed (median)", "time (median)", "tokens timed", "passes (round played)", "why")
    return "".join(f"<th>{escape(c)}</th>" for c in columns)


def settings_line(result: RaceRecord) -> str:
    """What lookahead raced with and where it came from, in a sentence a student reads (as the Run's card says its
    own)."""
    settings = result.settings.of(Method.LOOKAHEAD)
    if settings is None:
        return ""
    return (
        f"Lookahead raced with {triple(settings)}: {origin_words(settings)}. "
        "The other methods' settings are below the table."
    )


def left_out_words(result: RaceRecord) -> list[str]:
    """The methods the race leaves out on this device by design, and why (the method table's words)."""
    device = result.machine.device.split(":")[0]
    return [
        f"{entry.name} is not in this race: {entry.unraced}."
        for entry in METHODS.values()
        if entry.unraced and not entry.races_on(device)
    ]


def how_timed(result: RaceRecord) -> list[str]:
    """How the race's figures were taken: its rounds, cuts and the machine's load; an older race was timed once."""
    if result.timing is None:
        return ["Each method was timed once (a race recorded before repeated rounds): no spread is known."]
    shown = "the playback and the table's passes"
    return timing_notes(result.timing, "this race", shown, decoded=result.max_new_tokens)


def race_html(result: RaceRecord, used: float | None = None, gpu: bool = False) -> str:
    """The measured race in numbers: each method's speedup, time, tokens and passes, the winner and why.

    `used`: the seconds the whole request held the model (on ZeroGPU, the visitor's GPU quota).
    """
    machine = result.machine
    rounds = result.timing.rounds if result.timing is not None else 1
    stats = [
        best_stat(result),
        tokens_stat(result),
        stat(str(rounds), "interleaved rounds" if rounds > 1 else "round", "every method once per round"),
    ]
    rows = "".join(lane_row(result, lane) for lane in result.lanes)
    table = f'<table class="ll-race-table"><thead><tr>{table_head(result)}</tr></thead><tbody>{rows}</tbody></table>'
    table = scroll_region(table, "the race, method by method")  # wider than a phone: it scrolls in its card
    settings = sentence_words(result.settings)
    facts = (
        f"{machine.model} · {machine.device_name} · {machine.dtype} · {mode_words(result.mode, result.mode_note)} · "
        + (f"{products_words(machine.products)} · " if machine.products else "")
        + f"measured {result.ran_at}"
    )
    return (
        '<div class="ll-summary">'
        + (f'<p class="ll-settings-line">{escape(line)}</p>' if (line := settings_line(result)) else "")
        + f'<div class="ll-stats">{"".join(stats)}</div>'
        f"<p>{escape(race_story(result))}</p>{table}"
        + "".join(
            f"<p class='ll-dim ll-timing'>{escape(note)}</p>" for note in how_timed(result) + left_out_words(result)
        )
        + f"<p class='ll-dim'>{escape(settings)}</p>"
        f"<p class='ll-dim'>{escape(charts_words(result))}</p>"
        f"<div class='ll-dim'><i>{escape(facts)}</i></div>"
        + (f"<div class='ll-dim'>{escape(used_words(used, gpu))}</div>" if used is not None else "")
        + "</div>"
    )


# ----------------------------------------------------------------------------------------------
# The playback


def shown_at(seconds: float, slow: bool) -> str:
    return f"{seconds * (SLOW if slow else 1):.3f}s"


def counter_spans(lane: RaceLane, slow: bool) -> str:
    """Tokens, passes and elapsed time after each step, each shown from its step's end to the next's."""
    spans = []
    ends = lane.seconds[1:]
    for i, end in enumerate(ends):
        last = i == len(ends) - 1
        hold = "" if last else f";animation-duration:{shown_at(ends[i + 1] - end, slow)}"
        spans.append(
            f'<span class="ll-count{" ll-last" if last else ""}" style="animation-delay:{shown_at(end, slow)}{hold}">'
            f"{plural(lane.tokens[i + 1], 'token')} · {plural(i + 1, 'pass', 'passes')} · {end:.2f} s</span>"
        )
    return "".join(spans)


def text_spans(lane: RaceLane, slow: bool) -> str:
    """Each step's text, appearing when the step ended."""
    return "".join(
        f'<span style="animation-delay:{shown_at(end, slow)}">{escape(piece)}</span>'
        for piece, end in zip(lane.pieces, lane.seconds[1:], strict=True)
        if piece
    )


def playback_html(result: RaceRecord, slow: bool = False, take: int = 0) -> str:
    """Every lane's text growing as it was measured, with its counters; a Pause box stops all lanes.

    `take` changes with each restart, so the browser draws the playback afresh from 0 s.
    """
    pace = (
        f"Slowed down ×{1 / SLOW:g}: {SLOW} s on screen for each measured second."
        if slow
        else "At the measured speed: one second on screen is one second of decoding."
    )
    lanes = "".join(
        f'<div class="ll-lane" style="--k:{look(lane.method).hue}"><div class="ll-lane-head">'
        f'<b>{escape(METHODS[lane.method].name)}</b><span class="ll-counts">{counter_spans(lane, slow)}</span></div>'
        f"{scroll_region(text_spans(lane, slow), f'{METHODS[lane.method].name}: its text', 'll-lane-text')}</div>"
        for lane in result.lanes
    )
    return (
        f'<div class="ll-playback" data-take="{take}"><div class="ll-playback-bar">'
        f'<label><input type="checkbox" class="ll-pause"> pause</label><span class="ll-dim">{escape(pace)}</span>'
        f"</div>{lanes}</div>"
    )
