"""Lookahead equals greedy `generate` on tiny random Llama, Qwen2 and GPT-2 models, whatever the settings.

Random prompts, random (W, N, G), random budgets and, half the time, an EOS id that the greedy
output actually reaches, so stops inside accepted blocks are exercised too.
"""

from __future__ import annotations

import json
import random

import pytest
import torch

from lookahead_core.config import LookaheadConfig
from lookahead_core.decoding import DecodingError
from lookahead_core.models import LoadedModel
from lookahead_core.planning import CostAwarePlanner
from lookahead_core.trace import decode_steps, summarize

from .conftest import TINY_VOCAB, cost_table, tiny_model

CASES_PER_MODEL = 40


def greedy_reference(model, prompt_ids: list[int], max_new_tokens: int, eos: int | None) -> list[int]:
    output = model.generate(
        torch.tensor([prompt_ids]),
        do_sample=False,
        max_new_tokens=max_new_tokens,
        eos_token_id=eos,
        pad_token_id=0,
        attention_mask=torch.ones(1, len(prompt_ids), dtype=torch.long),
    )
    return output[0, len(prompt_ids) :].tolist()


def lookahead_output(lm: LoadedModel, prompt_ids, config, max_new_tokens, eos) -> tuple[list[int], list[dict]]:
    lm.eos_ids = frozenset() if eos is None else frozenset({eos})
    steps = list(decode_steps(lm, prompt_ids, "lookahead", config, max_new_tokens))
    return summarize(steps)["new_token_ids"], steps


@pytest.mark.parametrize(
    ("family", "attention"), [("llama", "sdpa"), ("llama", "eager"), ("qwen2", "sdpa"), ("gpt2", "eager")]
)
def test_lookahead_equals_greedy_generate_on_random_settings(family, attention):
    lm = tiny_model(family, attention)
    rng = random.Random(f"{family}-{attention}")
    multi_token_steps = eos_stops = 0
    for case in range(CASES_PER_MODEL):
        # Repetitive prompts give the pool something to match, so verification is really exercised.
        motif = [rng.randrange(TINY_VOCAB) for _ in range(rng.randint(1, 6))]
        prompt = (motif * 8)[: rng.randint(1, 30)]
        config = LookaheadConfig(window=rng.randint(1, 8), ngram=rng.randint(2, 6), guesses=rng.randint(0, 8))
        max_new_tokens = rng.randint(1, 40)
        reference = greedy_reference(lm.model, prompt, max_new_tokens, None)
        eos = rng.choice(reference) if case % 2 else None
        if eos is not None:
            reference = greedy_reference(lm.model, prompt, max_new_tokens, eos)
        output, steps = lookahead_output(lm, prompt, config, max_new_tokens, eos)
        assert output == reference, f"case {case}: prompt={prompt} {config} max_new_tokens={max_new_tokens} eos={eos}"
        assert len(output) <= max_new_tokens
        multi_token_steps += sum(len(s["committed"]) > 1 for s in steps)
        eos_stops += steps[-1]["stop"] == "eos"
    assert multi_token_steps > 0, "no step accepted a guess: the test would not catch a verification bug"
    assert eos_stops > 0


@pytest.mark.parametrize("per_token", [0.01, 0.05, 0.2])
def test_cost_aware_plans_change_what_is_tried_never_the_output(per_token):
    """The auto planner feeds the window on some steps and not others, and cuts guesses short where tokens are dear."""
    lm = tiny_model("llama")
    rng = random.Random(per_token)
    plans = set()
    for case in range(12):
        motif = [rng.randrange(TINY_VOCAB) for _ in range(rng.randint(1, 5))]
        prompt = (motif * 8)[: rng.randint(2, 30)]
        config = LookaheadConfig(window=rng.randint(1, 6), ngram=rng.randint(2, 7), guesses=rng.randint(0, 6))
        max_new_tokens = rng.randint(1, 48)
        lm.eos_ids = frozenset()
        planner = CostAwarePlanner(cost_table(per_token), config.ngram)
        steps = list(decode_steps(lm, prompt, "lookahead", config, max_new_tokens, planner))
        output = summarize(steps)["new_token_ids"]
        assert output == greedy_reference(lm.model, prompt, max_new_tokens, None), f"case {case}: {prompt} {config}"
        for record in steps[1:]:
            plan = record["plan"]
            assert plan["guesses_verified"] == len(record["guesses"]) <= plan["guesses_offered"]
            assert plan["window"] == (len(record["jacobi_update"]) > 0) and plan["reason"]
            trimmed = any(len(g) < config.ngram - 1 for g in record["guesses"])
            plans.add((plan["window"], bool(record["guesses"]), trimmed))
    assert any(window for window, _, _ in plans), "the window was never fed"
    assert any(not window for window, _, _ in plans), "the window was never left out"
    assert any(trimmed for _, _, trimmed in plans) or per_token < 0.05, "steep costs never cut a guess short"


def test_greedy_steps_equal_generate():
    lm = tiny_model("llama")
    prompt = [3, 4, 5, 3, 4]
    steps = list(decode_steps(lm, prompt, "greedy", LookaheadConfig(), 20))
    assert summarize(steps)["new_token_ids"] == greedy_reference(lm.model, prompt, 20, None)
    assert all(s["tokens_fed"] == 1 for s in steps[1:]) and len(steps) == 20


def test_a_lookahead_trace_round_trips_through_json():
    lm = tiny_model("qwen2")
    steps = list(decode_steps(lm, [1, 2, 3, 1, 2, 3, 1], "lookahead", LookaheadConfig(4, 3, 4), 24))
    trace = {"steps": steps, "summary": summarize(steps)}
    assert json.loads(json.dumps(trace)) == trace


def test_step_records_describe_the_forward_pass():
    lm = tiny_model("llama")
    steps = list(decode_steps(lm, [5, 6, 7, 5, 6, 7, 5, 6], "lookahead", LookaheadConfig(3, 4, 2), 20))
    for record in steps[1:]:
        assert record["tokens_fed"] == len(record["input_ids"]) == len(record["parents"]) == len(record["position_ids"])
        assert record["input_ids"][0] == record["current_token"] == record["window"][0][0]
        assert record["position_ids"][0] == record["position"]
        assert len(record["matched"]) == len(record["guesses"]) <= 2
        assert record["forward_seconds"] > 0 and record["step_seconds"] >= record["forward_seconds"]
        assert record["committed"] == record["block"][: len(record["committed"])]
        assert record["window_predictions"][-1] == record["jacobi_update"]
        assert record["window_predictions"][0][0] == record["block"][0]
        assert len(record["trajectories"]) == len(record["trajectory_matched"]) == len(record["window"][0])
    assert [len(s["window"]) for s in steps[1:4]] == [1, 2, 3]


def test_zero_guesses_is_legal_and_says_so():
    lm = tiny_model("llama")
    steps = list(decode_steps(lm, [1, 2, 3], "lookahead", LookaheadConfig(4, 3, 0), 6))
    assert all(s["guesses"] == [] and "G = 0" in s["note"] for s in steps[1:])


def test_bad_requests_get_clear_errors():
    lm = tiny_model("gpt2")
    with pytest.raises(DecodingError, match="the prompt is empty"):
        list(decode_steps(lm, [], "lookahead", LookaheadConfig(), 8))
    with pytest.raises(DecodingError, match="max_new_tokens must be an integer >= 1"):
        list(decode_steps(lm, [1], "greedy", LookaheadConfig(), 0))
    with pytest.raises(DecodingError, match="exceed the model's context of 256 tokens"):
        list(decode_steps(lm, [1] * 250, "lookahead", LookaheadConfig(), 8))
    with pytest.raises(ValueError, match="unknown method"):
        list(decode_steps(lm, [1], "beam", LookaheadConfig(), 8))
