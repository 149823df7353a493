"""ui.classroom's handlers on the built page, with no server and no model: a driving page's race reaches a follower's
race card, a link with a wrong key follows and drives nothing, a follower who stepped away gets nothing applied, and
a page of an ended class says so. (tests/browser/test_class_link.py drives the same through Chromium.)"""

from __future__ import annotations

import asyncio
from pathlib import Path

import gradio as gr

from lab.serve.server import CLASSES
from lookahead_core.records import RaceRecord
from ui import classroom
from ui.classroom import NO_CLASS, NOT_DRIVING, Seat
from visuals.race import race_html

RACE = sorted((Path(__file__).resolve().parent.parent / "docs" / "bench" / "races").glob("*.json"))[-1]


class Asked:
    """What gr.Request offers a handler: the page's query."""

    def __init__(self, **query) -> None:
        self.query_params = query


def page():
    import app

    return app.PAGE


def test_a_driving_pages_race_reaches_a_followers_race_card_once():
    p = page()
    class_id, secret = CLASSES.open_class()
    teacher, race = Seat(class_id, key=secret), RaceRecord.from_json(RACE.read_text())
    published = classroom.published(p, teacher, "python", "", 2, race)
    teacher = published[p.classroom.seat]
    assert teacher.race_at == race.ran_at
    board = CLASSES.latest(class_id)
    assert board.race and board.shown.preset == "python" and board.shown.step == 2
    assert classroom.published(p, teacher, "python", "", 2, race)[p.classroom.seat] == gr.skip()  # not shelved twice
    assert CLASSES.latest(class_id).version == board.version
    shown = classroom.apply_news(p, Seat(class_id), board, None)
    assert shown[p.race.result] == race and shown[p.race.summary] == race_html(race)
    assert shown[p.replay.step].value == 2 and shown[p.controls.preset] == "python"


def test_a_link_with_a_wrong_key_follows_and_its_page_publishes_nothing():
    p = page()
    class_id, secret = CLASSES.open_class()
    classroom.published(p, Seat(class_id, key=secret), "pencils", "", 5, None)
    version = CLASSES.latest(class_id).version
    opened = classroom.class_opened(p, None, Asked(**{"class": class_id, "key": secret[::-1]}))
    seat, status = opened[p.classroom.seat], opened[p.classroom.status].value
    assert not seat.key and NOT_DRIVING in status and "data-drives" not in status
    assert opened[p.controls.preset] == "pencils" and opened[p.replay.step].value == 5
    assert classroom.published(p, seat, "python", "", 1, None)[p.classroom.seat] == gr.skip()
    assert CLASSES.latest(class_id).version == version
    driving = classroom.class_opened(p, None, Asked(**{"class": class_id, "key": secret}))
    assert driving[p.classroom.seat].key == secret and "data-drives" in driving[p.classroom.status].value


def test_a_follower_who_stepped_away_gets_nothing_applied_and_stops_waiting():
    p = page()
    class_id, secret = CLASSES.open_class()
    classroom.published(p, Seat(class_id, key=secret), "pencils", "", 1, None)
    seat = classroom.class_opened(p, None, Asked(**{"class": class_id}))[p.classroom.seat]
    classroom.published(p, Seat(class_id, key=secret), "pencils", "", 2, None)
    classroom.stop_following(p, seat)
    news = asyncio.run(classroom.wait_for_news(p, seat))[p.classroom.news]
    assert news == gr.skip()
    assert classroom.apply_news(p, seat, CLASSES.latest(class_id), None) == classroom.unchanged(p)
    back = classroom.follow_again(p, seat, None)
    assert back[p.replay.step].value == 2 and back[p.classroom.seat].board.shown.step == 2


def test_a_page_of_no_class_says_so_without_quoting_its_link():
    p = page()
    for asked in (Asked(**{"class": "<b>nope</b>"}), Asked(**{"class": "<b>nope</b>", "key": "<i>x</i>"})):
        shown = classroom.class_opened(p, None, asked)
        status = shown[p.classroom.status].value
        assert shown[p.classroom.seat] is None and "nope" not in status and NO_CLASS.split(":")[0] in status
    assert classroom.class_opened(p, None, Asked()) == classroom.unchanged(p)
