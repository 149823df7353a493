"""Verdicts that claim what was measured: a Run speaks of its method against plain decoding only, no winner is
named from fewer than 3 rounds, and every figure a caption quotes equals the one in the table beside it.

The figures are read back from the rendered HTML (the caption's text, the table's cells), as a student reads
them, for records whose timings are built from injected laps (lab.measure.timing), so each verdict's case is known:
a clear winner, within noise, greedy fastest, and two rounds (no verdict).
"""

from __future__ import annotations

import dataclasses
import re
import statistics
from html import unescape

import pytest

from lab.measure.race import race
from lab.measure.timing import Lap, timing_of
from lookahead_core.config import LookaheadConfig
from lookahead_core.costs import StepCosts
from lookahead_core.records import METHODS, Busy, Method, MethodSettings
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime
from visuals.looks import look
from visuals.race import cost_figure, race_figure, race_html
from visuals.summary import summary_html
from visuals.timing import FEWEST_ROUNDS

from .tiny import CharTokenizer, cost_table, tiny_draft, tiny_model
from .visual_checks import example, words

QUIET = Busy(other_cores=0.1, cores=2, seconds=10.0, heavy=False)
TOKENS = 48
# Seconds each method's lap took in each round (greedy's always 1.0 s): the cases a verdict must tell apart
CASES = {
    "clear winner": {Method.LOOKAHEAD: [0.50, 0.52, 0.48], Method.PROMPT_LOOKUP: [0.80, 0.82, 0.79]},
    "within noise": {Method.LOOKAHEAD: [0.95, 1.02, 0.90], Method.PROMPT_LOOKUP: [0.97, 0.92, 1.06]},
    "greedy fastest": {Method.LOOKAHEAD: [2.0, 2.1, 1.9], Method.PROMPT_LOOKUP: [1.5, 1.6, 1.4]},
    "two rounds": {Method.LOOKAHEAD: [0.50, 0.52], Method.PROMPT_LOOKUP: [0.80, 0.82]},
}
TIMES = r"\d+\.\d\d×(?: \(\d+\.\d\d–\d+\.\d\d×\))?"  # a speedup as shown: its median, and its interval


def timed(methods: list[Method], seconds: dict[Method, list[float]]):
    """A Timing of `methods` (in order) from laps of TOKENS tokens in the given seconds (greedy: 1.0 s; a method
    not in `seconds` takes prompt lookup's)."""
    count = len(seconds[Method.PROMPT_LOOKUP])
    taken = {m: seconds.get(m, seconds[Method.PROMPT_LOOKUP]) for m in methods} | {Method.GREEDY: [1.0] * count}
    rounds = [[Lap(method=m, tokens=[0, TOKENS], seconds=[0.0, taken[m][r]]) for m in methods] for r in range(count)]
    return timing_of(rounds, 0, QUIET, 60.0)


def texts(html: str, pattern: str) -> list[str]:
    """The text (tags dropped, entities read) of every match of `pattern`'s first group in `html`."""
    return [words(m) for m in re.findall(pattern, html, re.DOTALL)]


def stats(html: str) -> dict[str, str]:
    """The summary's table of figures: each stat's label and its value."""
    pairs = re.findall(r'<div class="ll-stat[^"]*"[^>]*><b>(.*?)</b><span>(.*?)</span></div>', html)
    return {unescape(label): unescape(value) for value, label in pairs}


def headline(html: str) -> list[tuple[str, str, str]]:
    """The Run's large figures, in order: each one's value, label and note."""
    found = re.findall(r'<div class="ll-big[^"]*"><b>(.*?)</b><span>(.*?)</span>(?:<small>(.*?)</small>)?</div>', html)
    return [tuple(unescape(part) for part in figure) for figure in found]


# ----------------------------------------------------------------------------------------------
# A Run


def speedup_of(speed: str) -> str:
    """A race row's speed cell without its rate: the speedup and its interval (the cell's first line)."""
    return re.match(r"\S+×(?: \([^)]*\))?", speed).group(0)


@pytest.mark.parametrize("case", ["clear winner", "within noise", "greedy fastest", "two rounds"])
def test_a_runs_caption_quotes_its_figures_and_speaks_of_its_method_against_greedy_only(case):
    """The caption's speedup is the headline's, a large figure only where the rounds give a verdict (faster or
    slower): within noise and from two rounds the headline says "no verdict" with the interval, never a big figure
    (a big "0.84× speed vs greedy" stood beside "no verdict")."""
    shipped = example("python")
    run = dataclasses.replace(shipped, timing=timed([Method.LOOKAHEAD, Method.GREEDY], CASES[case]))
    html = summary_html(run)
    table = stats(html)
    (caption,) = texts(html, r'<div class="ll-dim"><i>.*?</i> (.*?)</div>')
    per_step, (value, label, note), saved = headline(html)
    steps = table["a typical step vs greedy's"]
    assert per_step[:2] == (table["tokens per step"], "tokens per step")
    assert saved[0] == str(run.greedy.summary.steps - run.trace.summary.steps)
    (speed,) = re.findall(r"ran (" + TIMES + ") as fast as", caption)
    assert re.findall(r"took (" + TIMES + ") as long as", caption) == [steps]
    assert set(re.findall(TIMES, caption)) <= {speed, steps}  # no figure the table does not show
    others = [m for m in METHODS if m not in (Method.LOOKAHEAD, Method.GREEDY)]
    assert not any(METHODS[m].name in caption or METHODS[m].short in caption for m in others)
    assert "every other method" not in caption and " won " not in caption and "fastest" not in caption
    median, low, high = re.fullmatch(r"(\d+\.\d\d)× \((\d+\.\d\d)–(\d+\.\d\d)×\)", speed).groups()
    verdicts = {
        "clear winner": "Lookahead was faster than greedy on",
        "within noise": "Lookahead and greedy were within noise of each other on",
        "greedy fastest": "Lookahead was slower than greedy on",
    }
    if case in ("two rounds", "within noise"):
        assert (value, note) == (
            "no verdict",
            f"{speed} vs greedy" + (": the interval includes 1×" * (case != "two rounds")),
        )
        assert label == {"two rounds": "only two rounds", "within noise": "within noise"}[case]
    else:
        word = "faster" if case == "clear winner" else "slower"
        assert (value, label, note) == (f"{median}×", f"speed vs greedy: {word}", f"interval {low}–{high}×")
    if case == "two rounds":
        assert f"fewer than {FEWEST_ROUNDS} rounds were timed, so no verdict is given" in caption
        assert not any(words in caption for words in verdicts.values())
        return
    assert caption.startswith(verdicts[case])  # the verdict in plain words first, the figures after
    relation = "lies above 1×" if float(low) > 1 else "lies below 1×" if float(high) < 1 else "includes 1×"
    assert f"the median of 3 rounds, and its interval {relation}" in caption
    assert {
        "clear winner": float(low) > 1,
        "greedy fastest": float(high) < 1,
        "within noise": float(low) <= 1 <= float(high),
    }[case]


def test_a_runs_time_is_the_median_of_the_rounds_its_speed_is_the_median_of():
    """Round 1's seconds beside the rounds' median speed read as a contradiction (4.2 s vs 7.3 s at 1.23×): the
    time tile is the median of the same rounds, and says so."""
    seconds = {Method.LOOKAHEAD: [0.9, 0.5, 0.6], Method.PROMPT_LOOKUP: [0.9, 0.5, 0.6]}
    run = dataclasses.replace(example("python"), timing=timed([Method.LOOKAHEAD, Method.GREEDY], seconds))
    table = stats(summary_html(run))
    assert table[f"time vs greedy, for {TOKENS} tokens: the median of 3 rounds, as the speed is"] == "0.6 s vs 1.0 s"


# ----------------------------------------------------------------------------------------------
# A race


@pytest.fixture(scope="module")
def raced():
    request = DecodeRequest(lookahead=LookaheadConfig(4, 3, 4), max_new_tokens=16)
    prompt = [5, 6, 7, 8, 5, 6, 7, 8, 5, 6]
    lm = dataclasses.replace(tiny_model("llama"), tokenizer=CharTokenizer())
    return race(lm, prompt, request, Runtime(draft=tiny_draft("llama")), StepCosts.of(cost_table(0.1)))


def rows(html: str) -> dict[str, list[str]]:
    """The race's table: each method's row (name: its cells' texts)."""
    body = re.search(r"<tbody>(.*?)</tbody>", html, re.DOTALL).group(1)
    table = {}
    for row in re.findall(r"<tr>(.*?)</tr>", body, re.DOTALL):
        (name,) = texts(row, r"<th[^>]*>(.*?)</th>")
        table[name] = texts(row, r"<td[^>]*>(.*?)</td>")
    return table


@pytest.mark.parametrize("case", ["clear winner", "within noise", "greedy fastest", "two rounds"])
def test_a_races_verdict_quotes_the_winners_row_and_names_none_from_two_rounds(raced, case):
    methods = [lane.method for lane in raced.lanes]
    result = dataclasses.replace(raced, timing=timed(methods, CASES[case]))
    html = race_html(result)
    table, figures = rows(html), stats(html)
    assert "measured here" not in html and f"measured on {result.step_costs.hardware}, costs" in html  # named
    story = texts(html, r"<p>(.*?)</p>")[0]  # the first paragraph, under the figures
    if case == "two rounds":
        assert story.startswith("Only two rounds fitted in the time on ")
        assert f"fewer than {FEWEST_ROUNDS} rounds were timed, so no verdict is given" in story
        assert " won " not in story and "fastest" not in story and re.search(TIMES, story) is None
        assert figures == figures | {f"fewer than {FEWEST_ROUNDS} rounds": "no verdict"}
        assert not any(label.startswith(("best: ", "fastest: ")) for label in figures)
        return
    timing = result.timing
    top = max((timing.of(m) for m in timing.leaders), key=lambda t: t.speedup.median).method
    speed, _, _, _, why = table[METHODS[top].name]
    if case == "greedy fastest":
        assert story.startswith("Greedy decoding was fastest on ") and re.search(TIMES, story) is None
        assert figures["best: greedy"] == speedup_of(speed)
        return
    for figure in re.findall(TIMES, story):  # the winner's speedup and its step cost: its row's
        assert figure in speed or figure.removesuffix("×") + "× a greedy step" in why
    assert re.findall(r"(\d+\.\d\d) tokens per step", story) == re.findall(r"(\d+\.\d\d) tokens per step", why)
    if case == "within noise":  # no big figure, no "fastest:": each leader's interval, as its row says it
        within = ", ".join(f"{METHODS[m].short} {speedup_of(table[METHODS[m].name][0])}" for m in timing.leaders)
        assert figures[f"within noise: {within}"] == "no verdict"
        assert not any(label.startswith(("best: ", "fastest: ")) for label in figures)
    else:
        assert figures["best: lookahead"] == speedup_of(speed)  # the figure is the named method's own
    if case == "clear winner":
        assert story.startswith("Lookahead won on ") and speedup_of(speed) in story
    else:
        assert story.startswith("Within noise on ") and " won " not in story


def test_counts_of_one_read_in_the_singular():
    """ "1 tokens", "1 rounds", "1 passes": a deadline can cut a round to one token, and a Run to one round; two of
    each are the control."""
    from lookahead_core.records import Fit
    from visuals import progress, summary
    from visuals.timing import no_verdict, speedup_words

    timing = dataclasses.replace(timed([Method.LOOKAHEAD, Method.GREEDY], CASES["two rounds"]), partial=True)
    cut = dataclasses.replace(timing, compared_tokens=1)
    assert "when 1 token had been compared" in no_verdict(cut, "CPU")
    assert speedup_words(cut, Method.LOOKAHEAD) == "not compared (1 token)"
    assert speedup_words(dataclasses.replace(cut, compared_tokens=2), Method.LOOKAHEAD) == "not compared (2 tokens)"
    fit = Fit(step_seconds=0.5, rounds=1, run_seconds=30, run_tokens=1, race_seconds=60, race_tokens=3)
    words = summary.fit_words(fit)
    assert "1 round of a Run fit in its 30 s with up to about 1 new token (at" in words
    assert "and 1 round of the race" in words
    shipped = example("python")
    prefill = dataclasses.replace(shipped, trace=dataclasses.replace(shipped.trace, steps=shipped.trace.steps[:1]))
    assert "over the 1 pass of this run" in progress.chart_words(prefill)
    assert f"over the {len(shipped.trace.steps)} passes of this run" in progress.chart_words(shipped)


def test_the_races_lines_and_points_are_told_apart_by_shape_not_by_colour_alone(raced):
    """Each lane's line in its method's dash, ended by its method's marker (shown in the legend at a constant size),
    and each guessing lane's point on the step-cost chart in its marker: no two lanes share a dash or a marker."""
    lines = [trace for trace in race_figure(raced).data]
    assert [(t.line.dash, t.marker.symbol) for t in lines] == [
        (look(lane.method).dash, look(lane.method).marker) for lane in raced.lanes
    ]
    assert all(list(t.marker.size[:-1]) == [0] * (len(t.x) - 1) and t.marker.size[-1] > 0 for t in lines)
    assert len({t.line.dash for t in lines}) == len({t.marker.symbol for t in lines}) == len(lines)
    assert race_figure(raced).layout.legend.itemsizing == "constant"
    points = [t for t in cost_figure(raced).data if t.mode == "markers"]
    shapes = [t.marker.symbol.removesuffix("-open") for t in points]  # open where its step time was noise
    assert shapes == [look(lane.method).marker for lane in raced.lanes[1:]]


def test_a_races_table_times_are_the_medians_of_the_rounds_its_speeds_are(raced):
    """Round 1's time beside the rounds' median speed read "1.37×" at 2.11 s against greedy's 2.04 s: each row's
    time and tokens are the medians over the same rounds as its speed, and the header says so."""
    methods = [lane.method for lane in raced.lanes]
    result = dataclasses.replace(raced, timing=timed(methods, CASES["clear winner"]))
    html = race_html(result)
    for method, (_, seconds, tokens, _, _) in ((m, rows(html)[METHODS[m].name]) for m in methods):
        assert seconds == f"{statistics.median(result.timing.of(method).seconds):.2f} s"
        assert tokens == str(TOKENS)
    assert rows(html)[METHODS[Method.LOOKAHEAD].name][1] == "0.50 s"  # rounds of 0.50, 0.52, 0.48 s
    assert "<th>time (median)</th>" in html and "<th>passes (round played)</th>" in html


def test_a_cut_baseline_voids_the_comparison_and_says_what_was_cut(raced):
    """A race whose greedy lane (the baseline every speed divides by) the deadline cut: no speedup, no verdict,
    and the partial note names greedy and says the comparison is void, by its share of the time (the request
    "took 45.8 s" beside "the request's 60 s ran out")."""
    methods = [lane.method for lane in raced.lanes]
    seconds = CASES["clear winner"]
    laps = [
        [
            Lap(
                method=m,
                tokens=[0, TOKENS],
                seconds=[0.0, seconds.get(m, seconds[Method.PROMPT_LOOKUP])[r] if m != Method.GREEDY else 1.0],
                partial=m == Method.GREEDY and r == 0,
            )
            for m in methods
        ]
        for r in range(3)
    ]
    result = dataclasses.replace(raced, timing=timing_of(laps, 0, QUIET, 60.0))
    html = race_html(result)
    assert stats(html)["void (greedy was cut short)"] == "no verdict"
    assert all(row[0].startswith("void (greedy was cut short)") for row in rows(html).values())  # no speedup
    (story,) = [p for p in texts(html, r"<p>(.*?)</p>")[:1]]
    assert "the comparison is void" in story and " won " not in story
    (partial,) = [note for note in texts(html, r"<p class='ll-dim ll-timing'>(.*?)</p>") if note.startswith("Partial")]
    assert "greedy reached the end of its share" in partial and "the comparison is void" in partial
    assert "ran out" not in partial  # its share ended, not the request's whole time
    run = dataclasses.replace(example("python"), timing=timing_of([r[:2] for r in laps], 0, QUIET, 30.0))
    assert headline(summary_html(run))[1][:2] == ("no verdict", "void (greedy was cut short)")


def test_both_cards_say_where_lookaheads_settings_came_from(raced):
    """The Run and the race take the same form's settings, and each card says which in a sentence: the sliders'
    W, N, G, or auto's (said before only in small print, so a race at W=8 sat beside a Run at W=4)."""
    from visuals.plans import AUTO_ORIGIN, SLIDERS_ORIGIN

    race_line = texts(race_html(raced), r'<p class="ll-settings-line">(.*?)</p>')
    assert race_line == [
        f"Lookahead raced with W=4 N=3 G=4: {SLIDERS_ORIGIN}. The other methods' settings are below the table."
    ]
    auto = example("python")  # recorded with auto settings
    (run_line,) = texts(summary_html(auto), r'<p class="ll-settings-line">(.*?)</p>')
    assert AUTO_ORIGIN in run_line and "A race takes the same unless you pick otherwise on its card." in run_line
    by_hand = dataclasses.replace(auto.trace.meta.settings.lookahead, regime=None)
    meta = dataclasses.replace(auto.trace.meta, settings=MethodSettings(lookahead=by_hand))
    (run_line,) = texts(
        summary_html(dataclasses.replace(auto, trace=dataclasses.replace(auto.trace, meta=meta))),
        r'<p class="ll-settings-line">(.*?)</p>',
    )
    assert SLIDERS_ORIGIN in run_line


def test_the_curves_say_they_show_the_round_played_back_not_the_medians(raced):
    """The table's times are the rounds' medians; the curves and their words are one round's, and say which."""
    methods = [lane.method for lane in raced.lanes]
    result = dataclasses.replace(raced, timing=timed(methods, CASES["clear winner"]))
    shown = result.timing.shown_round + 1
    assert race_figure(result).layout.title.text == f"Tokens against wall-clock time, round {shown} (played back)"
    assert f"Tokens against time, round {shown} (played back): " in race_html(result)
    once = dataclasses.replace(raced, timing=timed(methods, {m: s[:1] for m, s in CASES["clear winner"].items()}))
    assert race_figure(once).layout.title.text == "Tokens against wall-clock time"
