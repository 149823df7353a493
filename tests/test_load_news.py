"""A model's first load in the app says what it waits for and how far along it is: the progress bar names the step
of the load that runs (reading the weights, then warming up), and a load that fails raises its error in the request.

The holder is a stand-in whose load waits for the bar to have said each step, so the test needs no model and no
fixed wait."""

from __future__ import annotations

import threading

import pytest

from lookahead_core.models import ModelLoadError
from ui import events

UNCHANGED = {"summary": "unchanged"}


class Holder:
    """A model holder whose load has two steps, each held until the progress bar has named it."""

    def __init__(self, fails: bool = False) -> None:
        self.read, self.fails = False, fails
        self.named = {1: threading.Event(), 2: threading.Event()}

    def loading(self, choice: str, dtype: str) -> bool:
        return not self.read

    def get(self, choice: str, dtype: str) -> None:
        assert self.named[1].wait(30), "the bar never named the first step"
        if self.fails:
            raise ModelLoadError("no such model")
        self.read = True
        assert self.named[2].wait(30), "the bar never named the second step"


def said(holder: Holder, shown: list[str]):
    def progress(fraction, desc: str = "", unit: str = "") -> None:
        shown.append(desc)
        for step in (1, 2):
            if f"step {step} of 2" in desc:
                holder.named[step].set()

    return progress


def test_the_first_load_names_each_of_its_steps_then_yields_once(monkeypatch):
    holder, shown = Holder(), []
    monkeypatch.setattr(events, "MODEL", holder)
    monkeypatch.setattr(events, "ZERO_GPU", False)
    yielded = list(events.announced_load("SmolLM2-135M-Instruct", "auto", said(holder, shown), UNCHANGED))
    assert yielded == [UNCHANGED]
    steps = list(dict.fromkeys(shown))
    assert steps[0] == (
        "Loading SmolLM2-135M-Instruct, step 1 of 2: reading its weights (a first load takes seconds to minutes; "
        "the runs after it reuse the model)"
    )
    assert steps[-1].startswith("Loading SmolLM2-135M-Instruct, step 2 of 2: warming it up and timing its steps here")


def test_a_load_that_fails_raises_its_error_in_the_request(monkeypatch):
    holder, shown = Holder(fails=True), []
    monkeypatch.setattr(events, "MODEL", holder)
    monkeypatch.setattr(events, "ZERO_GPU", False)
    with pytest.raises(ModelLoadError, match="no such model"):
        list(events.announced_load("nonesuch", "auto", said(holder, shown), UNCHANGED))


def test_a_held_model_is_not_announced(monkeypatch):
    holder = Holder()
    holder.read = True
    monkeypatch.setattr(events, "MODEL", holder)
    assert list(events.announced_load("SmolLM2-135M-Instruct", "auto", said(holder, []), UNCHANGED)) == []
