"""How model work reports to its page (ui.events.reporting): every place in the line, a pass ending at least
PROGRESS_SECONDS after the last update was sent, and the result; a sweep's pieces of work the same way. A page update
after every pass made a race on a tiny model take 6 to 9 s in the page for its 0.7 s of work."""

from __future__ import annotations

import pytest

from lab.measure.tune import TuneProgress
from lab.serve.questions import Waiting
from lookahead_core.records import Method, Progress
from ui import events, tune

from .clock import FakeClock

PASS_SECONDS = 0.03  # each pass of the work below, on the test's clock
TURN_SECONDS = 0.25  # Gradio's turn with each update sent, on the test's clock


def passes(clock: FakeClock, count: int):
    """Model work: two places in the line, then `count` passes of PASS_SECONDS each, then its result."""
    yield Waiting(2, 10.0)
    yield Waiting(1, 5.0)
    for step in range(1, count + 1):
        clock.now += PASS_SECONDS
        yield Progress(
            part=1, parts=1, method=Method.LOOKAHEAD, warming_up=False, steps=step, tokens=step, max_new_tokens=count
        )
    yield "the result"  # model work yields its result last


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    """The clock reporting reads: the work moves it on by a pass's seconds, the consumer by its turn."""
    clock = FakeClock()
    monkeypatch.setattr(events, "time", clock)
    return clock


def reported(clock: FakeClock, count: int) -> tuple[list, object]:
    """What the progress bar was told (each update's fraction, None while waiting), in order, and the result."""
    told = []

    def progress(fraction, desc):
        told.append(fraction)

    updates = events.reporting(passes(clock, count), progress, {"unchanged": True})
    while True:
        try:
            assert next(updates) == {"unchanged": True}
        except StopIteration as done:
            return told, done.value
        clock.now += TURN_SECONDS


def test_each_place_in_line_and_a_pass_per_pause_are_reported_and_the_result_returned(clock):
    told, result = reported(clock, count=40)
    assert result == "the result"
    assert told[:2] == [None, None]
    shown = told[2:]
    # each pass ending PROGRESS_SECONDS or more after the last update's turn (a place in line's too): every fourth
    assert shown == pytest.approx([step / 40 for step in range(4, 41, 4)])


def test_without_the_pause_every_pass_would_be_an_update(clock, monkeypatch):
    """The negative control: the same work with no pause is told of all 40 passes."""
    monkeypatch.setattr(events, "PROGRESS_SECONDS", 0.0)
    told, _ = reported(clock, count=40)
    assert len(told) == 2 + 40


def test_a_sweeps_pieces_of_work_are_reported_with_their_labels_and_its_report_returned(clock):
    """The tune card's sweep goes through the same reporting: each piece of work (seconds long) is one update, in the
    bar's words, and what the sweep yields last is returned."""
    told = []

    def sweep():
        yield Waiting(1, 5.0)
        for done in range(3):
            clock.now += 1.0
            yield TuneProgress(done=done, total=3, label=f"cell {done + 1}")
        yield ("the report", 3.0)

    def progress(fraction, desc):
        told.append((fraction, desc))

    updates = events.reporting(sweep(), progress, {}, kind=TuneProgress, bar=tune.tune_bar)
    with pytest.raises(StopIteration) as done:
        while True:
            next(updates)
            clock.now += TURN_SECONDS
    assert done.value.value == ("the report", 3.0)
    assert told == [
        (None, Waiting(1, 5.0).words()),
        (0.0, "1/3: cell 1"),
        (1 / 3, "2/3: cell 2"),
        (2 / 3, "3/3: cell 3"),
    ]
