"""The shipped Medusa heads against their training record: a re-measurement on three held-out prompts
(slow: the real model answers them; `make test-fresh` runs the slow tests)."""

from __future__ import annotations

import json
import math

import pytest

from lab.datasets import load_prompts
from lab.heads import SHIPPED_HEADS, SHIPPED_RECORD
from lab.medusa import examples, greedy_answers, rank_accuracy
from lookahead_core.medusa import heads_for, load_heads
from lookahead_core.models import encode_prompt

pytestmark = pytest.mark.slow


def within_chance(measured: float, recorded: float, positions: int) -> bool:
    """`measured` on `positions` tokens agrees with `recorded` up to 3 binomial standard errors (and 2 points)."""
    spread = math.sqrt(max(recorded * (1 - recorded), 1e-4) / positions)
    return abs(measured - recorded) <= 3 * spread + 0.02


def test_the_shipped_heads_accuracy_record_matches_a_re_measurement_on_three_held_out_prompts(default_model):
    lm = default_model
    record = json.loads(SHIPPED_RECORD.read_text())
    held_out = load_prompts("self-instruct")[-record["held_out_prompts"] :][:3]
    prompts = [encode_prompt(lm.tokenizer, p["prompt"], p["chat"]) for p in held_out]
    data = examples(lm.model, prompts, greedy_answers(lm, prompts, record["settings"]["answer_tokens"]), 4)
    measured = rank_accuracy(load_heads(SHIPPED_HEADS, lm.model, lm.name), lm.model, data)
    for head, row in zip(record["accuracy"], measured, strict=True):
        assert within_chance(row[0], head["top1"], len(data)), (head, row[0])
    untrained = rank_accuracy(heads_for(lm.model, lm.name), lm.model, data)  # the negative control
    assert not all(
        within_chance(row[0], h["top1"], len(data)) for h, row in zip(record["accuracy"], untrained, strict=True)
    )
