"""The guided lesson's content: every step's text is filled from its run's records, says what its step shows, and
every figure it quotes is displayed, in the same sense, by the panel it outlines."""

from __future__ import annotations

import dataclasses
import re

import pytest

from visuals import library, replay
from visuals.lesson import LESSON, facts, lesson_text, misquoted, panel_html, problems, quoted, step_index

PRESETS = library.load_presets()


def run_of(item):
    return library.load_run(library.example_path(library.preset(PRESETS, item.preset)))


def step_named(title: str):
    return next(item for item in LESSON if item.title == title)


def test_the_lesson_has_eight_to_fifteen_steps_with_known_presets_and_panels():
    # twelve on lookahead and its family, one on Medusa (issue 29), one on the map (36), one on suffix decoding (46)
    assert 8 <= len(LESSON) <= 15
    for item in LESSON:
        assert item.panel in (*replay.PANELS, "summary", "run", "tune"), item.title


@pytest.mark.parametrize("item", LESSON, ids=[item.title for item in LESSON])
def test_each_lesson_step_shows_what_its_text_says(item):
    run = run_of(item)
    index = step_index(run, item)
    assert 0 <= index <= replay.last_step(run)
    assert problems(run, item) == [], item.title
    text = lesson_text(run, item)
    assert "{" not in text and "}" not in text
    assert len(re.findall(r"[.!?](\s|$)", text)) <= 5  # a few short sentences


@pytest.mark.parametrize("item", [i for i in LESSON if quoted(i.text)], ids=lambda item: item.title)
def test_a_wrong_figure_in_a_lesson_text_is_caught(item):
    """Negative control: each quoted figure, replaced by a wrong one, no longer matches its panel."""
    run = run_of(item)
    index = step_index(run, item)
    figures, html = facts(run, index), panel_html(run, index, item.panel)
    for name in quoted(item.text):
        wrong = figures | {name: "9" + figures[name]}
        assert misquoted(item, wrong, html) == [f"{{{name}}} = {wrong[name]!r}"], name


def test_a_figure_its_panel_does_not_show_is_caught():
    """Negative control: a figure quoted with no way to find it on the panel, or on another panel, is caught."""
    item = step_named("Verification and the bonus token")
    run = run_of(item)
    index = step_index(run, item)
    unshown = dataclasses.replace(item, text=item.text + " It fed {fed} tokens.")
    assert problems(run, unshown) == [f"{{fed}} = {facts(run, index)['fed']!r}"]
    elsewhere = dataclasses.replace(item, panel="output")
    assert len(problems(run, elsewhere)) == len(quoted(item.text))


def test_the_known_mismatches_are_caught():
    """Negative control, the bugs this check was written for: the winner's matched length called 'accepted'
    (the panel colours the guaranteed token apart), and a pool guess claimed where only a trajectory won."""
    item = step_named("Verification and the bonus token")
    run = run_of(item)
    index = step_index(run, item)
    figures = facts(run, index)
    as_before = figures | {"accepted": figures["matched"]}
    assert misquoted(item, as_before, panel_html(run, index, item.panel)) != []
    sampling = step_named("Sampling, exactly")
    trajectory_won = dataclasses.replace(sampling, step=4)  # the step the lesson showed before
    assert problems(run_of(sampling), trajectory_won) != []


def test_a_quoted_speedup_is_the_runs_median_with_its_interval():
    item = step_named("The window at work")
    run = run_of(item)
    spread = run.timing.of(run.trace.meta.method).speedup
    assert f"{spread.median:.2f}× ({spread.low:.2f}–{spread.high:.2f}×) as fast as greedy" in lesson_text(run, item)


def test_the_window_step_shows_the_first_view_and_its_harvest():
    """Issue 44: the lesson's step on the window uses the page's first view, a run where n-grams the window
    harvested were accepted (before, it used a run that ended before any n-gram was harvested)."""
    item = step_named("The window at work")
    assert item.preset == PRESETS[0]["id"]
    figures = facts(run_of(item), -1)
    assert int(figures["window_tokens"]) > 0 and int(figures["steps"]) < int(figures["greedy_steps"])
