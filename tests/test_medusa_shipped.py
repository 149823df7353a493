"""The shipped Medusa heads against their training record: a re-measurement on three held-out prompts
(slow: the real model answers them; `make test-slow` runs the slow tests)."""

from __future__ import annotations

import json

import pytest

from lab.measure.datasets import load_prompts
from lab.train.distillation import SPOT_PROMPTS
from lab.train.heads import SHIPPED_HEADS, SHIPPED_RECORD
from lab.train.medusa import spot_check
from lookahead_core.methods.medusa import heads_for, load_heads
from lookahead_core.models import encode_prompt

pytestmark = pytest.mark.slow
AGREE = 0.01  # top-1 accuracy, absolute: what a re-measurement on the same prompts may differ by


def test_the_shipped_heads_accuracy_record_matches_a_re_measurement_on_three_held_out_prompts(default_model):
    """The record's spot check (each head's top-1 on the first 3 held-out prompts) is found again with the shipped
    heads, and lies near the whole held-out accuracy for head 1; untrained heads are caught (negative control)."""
    lm = default_model
    record = json.loads(SHIPPED_RECORD.read_text())
    held_out = load_prompts("self-instruct")[-record["held_out_prompts"] :][:SPOT_PROMPTS]
    prompts = [encode_prompt(lm.tokenizer, p["prompt"], p["chat"]) for p in held_out]
    tokens = record["settings"]["answer_tokens"]
    measured = spot_check(lm, load_heads(SHIPPED_HEADS, lm.model, lm.name), prompts, tokens)
    recorded = record["spot_check"]
    assert measured["positions"] == recorded["positions"]
    assert all(abs(a - b) <= AGREE for a, b in zip(measured["top1"], recorded["top1"], strict=True))
    assert abs(measured["top1"][0] - record["accuracy"][0]["top1"]) < 0.1
    untrained = spot_check(lm, heads_for(lm.model, lm.name), prompts, tokens)
    assert not all(abs(a - b) <= AGREE for a, b in zip(untrained["top1"], recorded["top1"], strict=True))
