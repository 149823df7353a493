"""The lab's checks on what a visitor sends: each raw value refused with a message that says what to change."""

from __future__ import annotations

import math

import pytest

from lab.serve.access import AccessError, ModelAccess
from lab.serve.requests import (
    RUN_METHODS,
    InputError,
    check_prompt,
    lookahead_of,
    model_request,
    new_tokens_of,
    sampling_of,
)
from lookahead_core.config import SUFFIX, SettingsError
from lookahead_core.records import METHODS, Method


@pytest.mark.parametrize("prompt", ["", "   \n\t", None, 42])
def test_an_empty_prompt_is_refused(prompt):
    with pytest.raises(InputError, match="prompt is empty"):
        check_prompt(prompt)


def test_a_huge_prompt_is_refused_before_tokenizing():
    with pytest.raises(InputError, match="the limit is 40,000"):
        check_prompt("word " * 10_000)


def test_a_lone_surrogate_is_refused_with_where_it_is():
    with pytest.raises(InputError, match=r"Character 3 of the prompt is a lone surrogate \(U\+D800\)"):
        check_prompt("ab\ud800cd")


def test_a_prompt_is_kept_as_written():
    assert check_prompt("  def f():\n") == "  def f():\n"


def test_settings_from_sliders_become_ints():
    config = lookahead_of(7.0, 5, 7.0)
    assert (config.window, config.ngram, config.guesses, new_tokens_of(64.0, cap=256)) == (7, 5, 7, 64)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ((7.5, 5, 7, 64), "W must be a whole number"),
        ((7, None, 7, 64), "N must be a whole number"),
        ((7, 5, "seven", 64), "G must be a whole number"),
        ((7, 5, True, 64), "G must be a whole number"),
        ((7, 5, 7, 0), "between 1 and 256"),
        ((7, 5, 7, 257), "between 1 and 256"),
        ((7, 5, 7, math.inf), "whole number"),
    ],
)
def test_bad_settings_are_refused_with_the_reason(settings, message):
    with pytest.raises(InputError, match=message):
        lookahead_of(*settings[:3])
        new_tokens_of(settings[3], cap=256)


def test_settings_over_the_token_budget_are_refused_by_the_engine():
    with pytest.raises(SettingsError, match="over the budget of 512"):
        lookahead_of(32, 10, 32)


def test_a_space_caps_the_new_tokens_and_says_why():
    with pytest.raises(InputError, match="On this Space a request decodes at most 128 new tokens"):
        new_tokens_of(129, cap=128)


def test_the_sampling_switch_off_reads_no_slider_and_on_checks_each():
    assert sampling_of(False, 5.0, -3, 2.0, -1).is_greedy  # the switch off: the sliders are not read
    with pytest.raises(InputError, match="Seed must be a whole number"):
        sampling_of(True, 0.9, 0, 0.95, 2.5)
    with pytest.raises(SettingsError, match="top-p"):
        sampling_of(True, 0.9, 0, 0.0, 1)
    with pytest.raises(InputError, match="Temperature must be a number, got 'abc'"):
        sampling_of(True, "abc", 0, 0.95, 1)


def request(**changed):
    values = {
        "prompt": "def f():\n",
        "chat": 0,
        "window": 4.0,
        "ngram": 3,
        "guesses": 4,
        "max_new_tokens": 8,
        "sampling": (False, 0.8, 0, 0.95, 0),
        "auto": None,
        "lookup_tokens": 6,
        "draft_tokens": 3,
        "model": ("SmolLM2-135M-Instruct", "auto"),
        "access": ModelAccess(),
        "cap": 256,
    }
    return model_request(**(values | changed))


def test_a_request_becomes_one_frozen_record_with_each_value_checked():
    checked = request(method="speculative")
    d = checked.decode
    assert (checked.prompt, checked.chat, checked.model, checked.dtype) == (
        "def f():\n",
        False,
        "SmolLM2-135M-Instruct",
        "auto",
    )
    assert (d.method, d.lookahead.window, d.max_new_tokens, d.lookup.tokens, d.draft_tokens, d.auto) == (
        Method.SPECULATIVE,
        4,
        8,
        6,
        3,
        False,
    )
    with pytest.raises(AttributeError):
        d.max_new_tokens = 9  # frozen
    with pytest.raises(TypeError):
        type(d)(8)  # keywords only: no value can land in the wrong field
    with pytest.raises(InputError, match="Choose a method to run"):
        request(method="greedy")


def test_suffix_decodings_sliders_become_its_settings_and_bad_ones_are_refused():
    assert request(method="suffix").decode.suffix == SUFFIX  # a call that sends none: the defaults
    settings = request(method="suffix", suffix=(12.0, 2.5)).decode.suffix
    assert (settings.tree_size, settings.alpha) == (12, 2.5) and isinstance(settings.tree_size, int)
    with pytest.raises(InputError, match="Suffix tree size must be a whole number"):
        request(suffix=(12.5, 2.0))
    with pytest.raises(InputError, match="Suffix alpha must be a number"):
        request(suffix=(12, "lots"))
    with pytest.raises(SettingsError, match="at most 64"):
        request(suffix=(65, 2.0))
    with pytest.raises(SettingsError, match="suffix alpha"):
        request(suffix=(12, 0))


def test_every_method_of_run_is_a_method_of_the_table():
    assert (
        request(method="eagle").decode.method == Method.EAGLE
        and request(method="medusa").decode.method == Method.MEDUSA
    )
    assert RUN_METHODS == tuple(m for m, entry in METHODS.items() if entry.guesses) and Method.GREEDY not in RUN_METHODS
    with pytest.raises(AccessError, match="operator has not opened it"):
        request(model=("/etc", "auto"))
