"""Where a greedy output leaves plain decoding's, and why: the record the engine keeps, and the words shown.

In float32 no method diverges (tests/test_engine_*.py prove it); here a divergence is made by hand, one token
off, so the finding and its words are tested where they matter: a half-precision run that flips a near-tie.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from lookahead_core.config import LookaheadConfig
from lookahead_core.divergence import divergence, first_difference, rounding_step
from lookahead_core.records import Divergence, Run
from lookahead_core.request import DecodeRequest
from lookahead_core.trace import parted, record_run
from visuals.divergence import divergence_words
from visuals.progress import progress_html

PROMPT = [3, 14, 15, 9, 26, 5]


@pytest.fixture
def run(tiny_lm) -> Run:
    request = DecodeRequest(lookahead=LookaheadConfig(4, 3, 4), max_new_tokens=12)
    return record_run(tiny_lm, PROMPT, request)


def one_off(tokens: list[int], index: int) -> list[int]:
    return tokens[:index] + [(tokens[index] + 1) % 90] + tokens[index + 1 :]


def test_a_float32_run_keeps_no_divergence_and_one_made_by_hand_is_found_at_its_token(tiny_lm, run):
    assert run.divergence is None and run.trace.summary.new_token_ids == run.greedy.summary.new_token_ids
    plain = run.greedy.summary.new_token_ids
    tampered = replace(run.trace, summary=replace(run.trace.summary, new_token_ids=one_off(plain, 5)))
    found = parted(tiny_lm, PROMPT, run.greedy, tampered)
    assert (found.index, found.plain_token, found.other_token, found.dtype) == (
        5,
        plain[5],
        one_off(plain, 5)[5],
        "float32",
    )
    assert found.plain_logit > found.other_logit  # plain decoding's token is the argmax of the same text, in float32
    assert found.plain_text == tiny_lm.tokenizer.decode([plain[5]])


def test_the_logits_are_those_of_a_pass_over_the_text_both_agree_on(tiny_lm, run):
    plain = run.greedy.summary.new_token_ids
    found = divergence(tiny_lm, PROMPT, plain, one_off(plain, 2))
    with torch.no_grad():
        logits = tiny_lm.model(torch.tensor([PROMPT + plain[:2]])).logits[0, -1]
    assert found.plain_logit == pytest.approx(float(logits[plain[2]]), abs=1e-4)
    assert found.other_logit == pytest.approx(float(logits[one_off(plain, 2)[2]]), abs=1e-4)
    assert divergence(tiny_lm, PROMPT, plain, plain) is None and divergence(tiny_lm, PROMPT, plain, plain[:4]) is None


def test_a_sampled_run_is_never_said_to_diverge(tiny_lm, run):
    sampled = replace(run.trace, meta=replace(run.trace.meta, sampling=object()))
    assert (
        parted(tiny_lm, PROMPT, run.greedy, replace(sampled, summary=replace(sampled.summary, new_token_ids=[1])))
        is None
    )


def test_first_difference_and_the_rounding_step_of_each_dtype():
    assert first_difference([1, 2, 3], [1, 2, 4]) == 2 and first_difference([1, 2], [1, 2, 3]) is None
    assert rounding_step(12.0, torch.bfloat16) == 2.0**-7 * 8  # 8 bits of precision: steps of 1/16 between 8 and 16
    assert rounding_step(12.0, torch.float16) == 2.0**-10 * 8
    assert rounding_step(-12.0, torch.float32) == 2.0**-23 * 8


def record(gap_steps: float, text: str = " the") -> Divergence:
    step = 0.0625
    return Divergence(
        index=16,
        plain_token=1,
        other_token=2,
        plain_text=text,
        other_text=" a",
        plain_logit=14.0,
        other_logit=14.0 - gap_steps * step,
        rounding_step=step,
        dtype="bfloat16",
    )


def test_a_near_tie_is_named_as_one_and_a_wide_gap_is_not():
    near = divergence_words(record(1.0), "lookahead")
    assert near.startswith("output differs from greedy from new token 17: greedy chose “▁the”, lookahead “▁a”")
    assert "14.000 and 13.938" in near and "a near-tie (1.0 rounding steps of bfloat16)" in near
    wide = divergence_words(record(40.0), "lookahead")  # negative control: the same words would hide a defect
    assert "near-tie" not in wide and "40 rounding steps of bfloat16 apart: more than rounding explains" in wide


def test_the_progress_panel_says_where_the_run_left_greedy_with_the_tokens_escaped(run):
    shown = replace(
        run,
        trace=replace(
            run.trace, summary=replace(run.trace.summary, new_token_ids=one_off(run.greedy.summary.new_token_ids, 0))
        ),
        divergence=record(1.0, text="<b>x</b>"),
    )
    html = progress_html(shown, len(run.trace.steps) - 1)
    assert "from new token 17" in html and "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x</b>" not in html
    assert Run.from_json(shown.to_json()).divergence == shown.divergence
