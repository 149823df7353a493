"""Verdicts that claim what was measured: a Run speaks of its method against plain decoding only, no winner is
named from fewer than 3 rounds, and every figure a caption quotes equals the one in the table beside it.

The figures are read back from the rendered HTML (the caption's text, the table's cells), as a student reads
them, for records whose timings are built from injected laps (lab.timing), so each verdict's case is known:
a clear winner, within noise, greedy fastest, and two rounds (no verdict).
"""

from __future__ import annotations

import dataclasses
import re
from html import unescape

import pytest

from lab.race import race
from lab.timing import Lap, timing_of
from lookahead_core.config import LookaheadConfig
from lookahead_core.costs import StepCosts
from lookahead_core.records import METHODS, Busy, Method
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime
from visuals.looks import look
from visuals.race import cost_figure, race_figure, race_html
from visuals.summary import summary_html
from visuals.timing import FEWEST_ROUNDS

from .tiny import CharTokenizer, cost_table, tiny_draft, tiny_model
from .visual_checks import example

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
    return [" ".join(unescape(re.sub(r"<[^>]+>", " ", m)).split()) for m in re.findall(pattern, html, re.DOTALL)]


def stats(html: str) -> dict[str, str]:
    """The summary's table of figures: each stat's label and its value."""
    pairs = re.findall(r'<div class="ll-stat"[^>]*><b>(.*?)</b><span>(.*?)</span></div>', html)
    return {unescape(label): unescape(value) for value, label in pairs}


# ----------------------------------------------------------------------------------------------
# A Run


def speedup_of(speed: str) -> str:
    """A race row's speed cell without its rate: the speedup and its interval (the cell's first line)."""
    return re.match(r"\S+×(?: \([^)]*\))?", speed).group(0)


@pytest.mark.parametrize("case", ["clear winner", "within noise", "greedy fastest", "two rounds"])
def test_a_runs_caption_quotes_its_tables_figures_and_speaks_of_its_method_against_greedy_only(case):
    shipped = example("python")
    run = dataclasses.replace(shipped, timing=timed([Method.LOOKAHEAD, Method.GREEDY], CASES[case]))
    html = summary_html(run)
    table = stats(html)
    (caption,) = texts(html, r'<div class="ll-dim"><i>.*?</i> (.*?)</div>')
    speed, steps = table["speed vs greedy"], table["a typical step vs greedy's"]
    rounds = (
        "round 1's time vs greedy's (the replayed round; the speed is the rounds' median)"
        if run.timing.rounds > 1
        else "time vs greedy"
    )
    assert rounds in table  # round 1's seconds: not the median the speed is, and labelled so
    assert table["tokens per step"] in re.findall(r"(\d+\.\d\d) tokens per step", caption)
    assert re.findall(r"ran (" + TIMES + ") as fast as", caption) == [speed]
    assert re.findall(r"took (" + TIMES + ") as long as", caption) == [steps]
    assert set(re.findall(TIMES, caption)) <= {speed, steps}  # no figure the table does not show
    others = [m for m in METHODS if m not in (Method.LOOKAHEAD, Method.GREEDY)]
    assert not any(METHODS[m].name in caption or METHODS[m].short in caption for m in others)
    assert "every other method" not in caption and " won " not in caption and "fastest" not in caption
    low, high = (float(x) for x in re.search(r"\((\d+\.\d\d)–(\d+\.\d\d)×\)", speed).groups())
    verdicts = {
        "clear winner": "Lookahead was faster than greedy on",
        "within noise": "Lookahead and greedy were within noise of each other on",
        "greedy fastest": "Lookahead was slower than greedy on",
    }
    if case == "two rounds":
        assert f"fewer than {FEWEST_ROUNDS} rounds were timed, so no verdict is given" in caption
        assert not any(words in caption for words in verdicts.values())
        return
    assert caption.startswith(verdicts[case])  # the verdict in plain words first, the figures after
    relation = "lies above 1×" if low > 1 else "lies below 1×" if high < 1 else "includes 1×"
    assert f"the median of 3 rounds, and its interval {relation}" in caption
    assert {"clear winner": low > 1, "greedy fastest": high < 1, "within noise": low <= 1 <= high}[case]


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
    others = ", ".join(METHODS[m].short for m in timing.leaders if m != top)
    label = "best: lookahead" if case == "clear winner" else f"fastest: {METHODS[top].short}, within noise of {others}"
    assert figures[label] == speedup_of(speed)  # the figure is the named method's own
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
