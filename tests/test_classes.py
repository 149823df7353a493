"""lab.serve.classes: only the secret drives a class, followers see each change as a new version, and classes end when
idle and stay few; lab.serve.shelf keeps a race the way it keeps a run."""

from __future__ import annotations

from pathlib import Path

from lab.serve.classes import Board, Classes, Shown
from lab.serve.shelf import Shelf
from lookahead_core.records import RaceRecord

from .clock import FakeClock

RACES = sorted((Path(__file__).resolve().parent.parent / "docs" / "bench" / "races").glob("*.json"))


def test_a_class_opens_with_an_unguessable_id_and_secret_and_an_empty_board():
    classes = Classes(capacity=10, seconds=60)
    opened = [classes.open_class() for _ in range(5)]
    ids, keys = {class_id for class_id, _ in opened}, {secret for _, secret in opened}
    assert len(ids) == len(keys) == 5 and not ids & keys
    class_id, secret = opened[0]
    assert len(class_id) == 12 and len(secret) == 32
    assert classes.latest(class_id) == Board()
    assert classes.drives(class_id, secret)


def test_only_the_secret_drives_the_class():
    classes = Classes(capacity=10, seconds=60)
    class_id, secret = classes.open_class()
    other_id, other_secret = classes.open_class()
    for wrong in ("", secret[:-1], secret + "x", other_secret, class_id, None, 7, "é" * 32, "\ud800"):
        assert not classes.drives(class_id, wrong)
        assert not classes.show(class_id, wrong, Shown(preset="python", step=3))
        assert not classes.race(class_id, wrong, "race")
    assert not classes.drives(other_id, secret)
    for unknown in ("", "nope", None, ["x"]):
        assert classes.latest(unknown) is None and not classes.drives(unknown, secret)
    assert classes.latest(class_id) == Board()


def test_each_change_is_a_new_version_and_an_unchanged_one_is_not():
    classes = Classes(capacity=10, seconds=60)
    class_id, secret = classes.open_class()
    assert classes.show(class_id, secret, Shown(preset="python", step=0))
    assert classes.show(class_id, secret, Shown(preset="python", step=0))  # the same again: no new version
    assert classes.latest(class_id) == Board(version=1, shown=Shown(preset="python", step=0))
    assert classes.show(class_id, secret, Shown(run="abc", step=4))
    assert classes.race(class_id, secret, "r1")
    board = classes.latest(class_id)
    assert board == Board(version=3, shown=Shown(run="abc", step=4), race="r1")
    assert board.shown.same_run(Shown(run="abc", step=9)) and not board.shown.same_run(Shown(preset="abc"))


def test_a_class_ends_after_its_driver_stays_idle_and_each_change_keeps_it():
    clock = FakeClock()
    classes = Classes(capacity=10, seconds=100, clock=clock)
    class_id, secret = classes.open_class()
    clock.now = 90
    assert classes.show(class_id, secret, Shown(preset="python", step=1))
    clock.now = 180  # 90 s after the change: still open; students reading it keep nothing alive
    assert classes.latest(class_id) is not None
    clock.now = 191
    assert classes.latest(class_id) is None
    assert not classes.drives(class_id, secret) and not classes.show(class_id, secret, Shown(step=2))


def test_at_most_capacity_classes_are_kept_the_longest_idle_going_first():
    clock = FakeClock()
    classes = Classes(capacity=3, seconds=100, clock=clock)
    opened = []
    for second in range(3):
        clock.now = second
        opened.append(classes.open_class())
    clock.now = 5
    assert classes.show(*opened[0], Shown(step=1))  # the first class is the latest driven now
    newest = classes.open_class()
    assert len(classes._classes) == 3
    assert classes.latest(opened[1][0]) is None  # idle longest: pushed out
    assert all(classes.latest(class_id) is not None for class_id, _ in (opened[0], opened[2], newest))
    for _ in range(50):
        classes.open_class()
    assert len(classes._classes) == 3


def test_the_shelf_keeps_a_race_as_it_keeps_a_run():
    race = RaceRecord.from_json(RACES[-1].read_text())
    shelf = Shelf(capacity=2, seconds=60, kind=RaceRecord)
    key = shelf.put(race)
    assert shelf.get(key) == race and shelf.get("nope") is None
