"""The Run and the race take the same lookahead settings unless the student changes the race's, and both say which.

A race once ran auto's W=8 N=6 G=8 beside a Run at the sliders' W=4 N=5 G=4, said only in small print: the race's
choice now follows Run's "auto" box (by hand or by a preset), and its card says in words what the next race will
run lookahead with, and whether a Run would use the same.
"""

from __future__ import annotations

from ui import race
from ui.presets import DEFAULT
from ui.race import RACE_AUTO, RACE_SLIDERS, plan_html, race_choice


def test_the_races_choice_starts_as_the_default_presets_run_does():
    import app

    assert app.PAGE.controls.auto.value is False and not DEFAULT.get("auto")
    assert app.PAGE.race.settings.value == RACE_SLIDERS  # it started at auto, unlike the Run beside it
    assert "W=4 N=5 G=4, the sliders' settings: the same as a Run uses now" in app.PAGE.race.plan.value


def test_runs_auto_box_moves_the_races_choice_with_it():
    import app

    page = app.PAGE
    assert race.follow_run(page, True) == {page.race.settings: RACE_AUTO}
    assert race.follow_run(page, False) == {page.race.settings: RACE_SLIDERS}
    events = app.demo.config["dependencies"]
    followed = [
        e
        for e in events
        if [page.controls.auto._id, "change"] in [list(t) for t in e["targets"]]
        and page.race.settings._id in e["outputs"]
    ]
    assert len(followed) == 1  # a preset's update of the box moves the race's choice too (change, not input)


def test_the_race_says_what_it_will_run_and_whether_a_run_would_match():
    assert race_choice(True) == RACE_AUTO and race_choice(False) == RACE_SLIDERS
    same = plan_html(RACE_SLIDERS, False, 4, 5, 4)
    assert "W=4 N=5 G=4, the sliders' settings: the same as a Run uses now" in same
    changed = plan_html(RACE_AUTO, False, 4, 5, 4)
    assert "auto settings, measured for this hardware" in changed and "not what a Run uses now" in changed
    assert "&lt;b&gt;" in plan_html(RACE_SLIDERS, True, "<b>", 5, 4)  # a client's value is escaped
