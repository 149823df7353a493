"""The shipped EAGLE layer against its training record: a re-measurement on three held-out prompts (slow: the real
model answers them; `make test-slow` runs the slow tests)."""

from __future__ import annotations

import json

import pytest

from lab.measure.datasets import load_prompts
from lab.train.distillation import SPOT_PROMPTS
from lab.train.eagle import spot_check
from lab.train.heads import SHIPPED_EAGLE, SHIPPED_EAGLE_RECORD
from lookahead_core.methods.eagle import eagle_for, load_eagle
from lookahead_core.models import encode_prompt

pytestmark = pytest.mark.slow
AGREE = 0.01  # top-1 and top-5 accuracy, absolute: what a re-measurement on the same prompts may differ by


def test_the_shipped_layers_accuracy_record_matches_a_re_measurement_on_three_held_out_prompts(default_model):
    """The record's spot check (the first guess's top-1 and top-5 on the first 3 held-out prompts) is found again
    with the shipped layer, and lies near the whole held-out accuracy; an untrained layer is caught (negative
    control)."""
    lm = default_model
    record = json.loads(SHIPPED_EAGLE_RECORD.read_text())
    held_out = load_prompts("self-instruct")[-record["held_out_prompts"] :][:SPOT_PROMPTS]
    prompts = [encode_prompt(lm.tokenizer, p["prompt"], p["chat"]) for p in held_out]
    tokens = record["settings"]["answer_tokens"]
    recorded = record["spot_check"]
    measured = spot_check(lm, load_eagle(SHIPPED_EAGLE, lm.model, lm.name), prompts, tokens)
    assert measured["positions"] == recorded["positions"]
    assert all(abs(measured[k] - recorded[k]) <= AGREE for k in ("top1", "top5")), (measured, recorded)
    assert abs(measured["top1"] - record["accuracy"]["top1"]) < 0.1
    untrained = spot_check(lm, eagle_for(lm.model, lm.name), prompts, tokens)
    assert abs(untrained["top1"] - recorded["top1"]) > AGREE
