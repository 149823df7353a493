"""The tune card's request, checked in words before any model work: every value out of range is refused saying
what to change, and a sweep larger than the operator allows is refused saying how large one may be."""

from __future__ import annotations

import pytest

from lab.serve import tune_server
from lab.serve.requests import InputError
from lab.serve.tune_server import tune_request
from lookahead_core.config import SettingsError

GOOD = {
    "source": tune_server.OWN,
    "text": "def add(a, b):\n---\nprint('hello')",
    "count": 2,
    "max_new_tokens": 16,
    "methods": ["lookahead", "prompt-lookup"],
    "windows": "2, 4",
    "ngrams": "3",
    "choice": "SmolLM2-135M-Instruct",
    "dtype": "auto",
}


def test_a_good_request_is_checked_into_prompts_and_a_grid():
    request = tune_request(**GOOD)
    assert [p[1] for p in request.prompts] == ["def add(a, b):", "print('hello')"]
    assert request.grid.windows == (2, 4) and request.grid.ngrams == (3,) and request.grid.draft_tokens == ()
    assert request.grid.size == 2 + len(request.grid.lookups)


@pytest.mark.parametrize(
    "change, words",
    [
        ({"count": 0}, "Sweep on 1 to 10 prompts, got 0"),
        ({"count": 11}, "Sweep on 1 to 10 prompts, got 11"),
        ({"count": 2.5}, "The number of prompts must be a whole number"),
        ({"source": "wikipedia"}, "Choose a prompt set: humaneval, mtbench, gsm8k, or your prompts"),
        ({"text": "\n---\n"}, "Paste at least one prompt"),
        ({"max_new_tokens": 0}, "Max new tokens must be between 1 and"),
        ({"max_new_tokens": 65}, "at most 64 new tokens, got 65"),
        ({"methods": []}, "Tick at least one method to sweep"),
        ({"methods": ["greedy"]}, "Tick at least one method to sweep"),
        ({"windows": "2, x"}, "The windows W: whole numbers separated by commas"),
        ({"windows": "0, 2"}, "The windows W must each be from 1 to 16; 0 is not"),
        ({"ngrams": "1"}, "The n-gram sizes N must each be from 2 to 10; 1 is not"),
        ({"windows": "", "methods": ["lookahead"]}, "nothing to sweep"),
        ({"dtype": "int4"}, "Choose a dtype"),
    ],
)
def test_each_value_out_of_range_is_refused_in_words(change, words):
    with pytest.raises((InputError, SettingsError), match=words):
        tune_request(**(GOOD | change))


def test_a_sweep_larger_than_the_operator_allows_is_refused_saying_how_large_one_may_be(monkeypatch):
    monkeypatch.setattr(tune_server, "TUNE_CELLS", 4)
    with pytest.raises(SettingsError, match="7 cells: this sweep may decode at most 4"):
        tune_request(**(GOOD | {"windows": "2, 4, 6, 8"}))
    assert tune_request(**(GOOD | {"windows": "2"})).grid.size == 4
