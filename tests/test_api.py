"""The HTTP API's shape: every named endpoint's parameters (name, component, whether it has a default) and
returns, as tests/api_shape.json recorded them before Run and the race took their parameters from one form
(ui/form.py). Users' scripts call these endpoints; a field moved in the form must not move the API unnoticed."""

from __future__ import annotations

import json
import re
from pathlib import Path

from ui.form import RACE_FORM, RUN_FORM, form_handler
from ui.page import build_demo

SHAPE = Path(__file__).with_name("api_shape.json")


def label(returned: dict) -> str | None:
    """A returned component's label; None for one without (Gradio names it by an id that varies from build to build)."""
    text = returned.get("label")
    return None if text is None or re.fullmatch(r"value_\d+", text) else text


def skeleton(info: dict) -> dict:
    """What a client relies on of /gradio_api/info: each endpoint's parameters in order and its returns."""
    return {
        name: {
            "parameters": [[p["parameter_name"], p["component"], p["parameter_has_default"]] for p in e["parameters"]],
            "returns": [[r["component"], label(r)] for r in e["returns"]],
        }
        for name, e in sorted(info["named_endpoints"].items())
    }


def test_the_api_keeps_its_shape():
    demo, _ = build_demo()
    assert skeleton(demo.get_api_info()) == json.loads(SHAPE.read_text())


def test_a_form_moved_moves_the_api_and_the_shape_test_sees_it():
    """The negative control: the race's form with two fields swapped gives a handler whose parameters differ from
    the recorded API's, in the order the page would send them."""
    shape = json.loads(SHAPE.read_text())["/race"]["parameters"]
    swapped = (RACE_FORM[1], RACE_FORM[0], *RACE_FORM[2:])
    for form, same in ((RACE_FORM, True), (swapped, False)):
        names = list(form_handler(form, lambda page, values, progress: iter(())).__signature__.parameters)[1:-1]
        assert (names == [name for name, _, _ in shape]) == same
    assert [f.name for f in RUN_FORM] == [name for name, _, _ in json.loads(SHAPE.read_text())["/run"]["parameters"]]
