"""The guided lesson's content: every step's text is filled from its run's records, and says what its step shows."""

from __future__ import annotations

import re

import pytest

from visuals import library, replay
from visuals.lesson import LESSON, lesson_text, step_index

PRESETS = library.load_presets()


def run_of(item):
    return library.load_run(library.example_path(library.preset(PRESETS, item.preset)))


def test_the_lesson_has_eight_to_twelve_steps_with_known_presets_and_panels():
    assert 8 <= len(LESSON) <= 12
    for item in LESSON:
        assert item.panel in (*replay.PANELS, "summary", "controls"), item.title


@pytest.mark.parametrize("item", LESSON, ids=[item.title for item in LESSON])
def test_each_lesson_step_shows_what_its_text_says(item):
    run = run_of(item)
    index = step_index(run, item)
    assert 0 <= index <= replay.last_step(run)
    assert item.shows(run, index), f"{item.preset} step {index} no longer shows what '{item.title}' says"
    text = lesson_text(run, item)
    assert "{" not in text and "}" not in text
    assert len(re.findall(r"[.!?](\s|$)", text)) <= 5  # a few short sentences


def test_the_checks_can_fail():
    """Negative control: a lesson step's check on another step of its run does not always hold."""
    failing = 0
    for item in LESSON:
        run = run_of(item)
        failing += any(not item.shows(run, index) for index in range(replay.last_step(run) + 1))
    assert failing >= len(LESSON) // 2
