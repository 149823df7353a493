"""Lookahead equals greedy `generate` on tiny random Llama, Qwen2 and GPT-2 models, whatever the settings.

Random prompts, random (W, N, G), random budgets and, half the time, an EOS id that the greedy
output actually reaches, so stops inside accepted blocks are exercised too.
"""

from __future__ import annotations

import random

import pytest
import torch

from lookahead_core.config import LookaheadConfig
from lookahead_core.models import LoadedModel
from lookahead_core.records import Branch, GuessSource, Method, PlannerKind, PlanReason, StepRecord, StopReason, Trace
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime
from lookahead_core.step.decoding import DecodingError
from lookahead_core.step.planning import CostAwarePlanner
from lookahead_core.trace import decode_steps, record_trace, summarize
from lookahead_core.tuning import choose_settings, replay_planner

from .tiny import TINY_VOCAB, cost_table, tiny_model

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


def greedy_case(model, prompt_ids: list[int], max_new_tokens: int, rng, with_eos: bool) -> tuple[list[int], int | None]:
    """generate's greedy output for a random case and its end-of-sequence token: with `with_eos`, one of the
    tokens greedy writes, drawn from `rng`, so the output stops there; else none."""
    reference = greedy_reference(model, prompt_ids, max_new_tokens, None)
    if not with_eos:
        return reference, None
    eos = rng.choice(reference)
    return greedy_reference(model, prompt_ids, max_new_tokens, eos), eos


def lookahead_output(lm: LoadedModel, prompt_ids, config, max_new_tokens, eos) -> tuple[list[int], list[StepRecord]]:
    lm.eos_ids = frozenset() if eos is None else frozenset({eos})
    steps = list(decode_steps(lm, prompt_ids, DecodeRequest(lookahead=config, max_new_tokens=max_new_tokens)))
    return summarize(steps).new_token_ids, steps


def guess_candidates(record: StepRecord) -> list:
    return [c for c in record.verification.candidates if c.source != GuessSource.TRAJECTORY]


@pytest.mark.heavy
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
        reference, eos = greedy_case(lm.model, prompt, max_new_tokens, rng, case % 2)
        output, steps = lookahead_output(lm, prompt, config, max_new_tokens, eos)
        assert output == reference, f"case {case}: prompt={prompt} {config} max_new_tokens={max_new_tokens} eos={eos}"
        assert len(output) <= max_new_tokens
        multi_token_steps += sum(len(s.committed) > 1 for s in steps)
        eos_stops += steps[-1].stop == StopReason.EOS
    assert multi_token_steps > 0, "no step accepted a guess: the test would not catch a verification bug"
    assert eos_stops > 0


@pytest.mark.heavy
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
        planner = CostAwarePlanner(cost_table(per_token))
        request = DecodeRequest(lookahead=config, max_new_tokens=max_new_tokens)
        steps = list(decode_steps(lm, prompt, request, Runtime(plan=lambda planner=planner: planner)))
        output = summarize(steps).new_token_ids
        assert output == greedy_reference(lm.model, prompt, max_new_tokens, None), f"case {case}: {prompt} {config}"
        for record in steps[1:]:
            plan, guesses = record.plan, guess_candidates(record)
            assert plan.guesses_verified == len(guesses) <= plan.guesses_offered
            assert plan.window_fed == record.window.fed == (len(record.window.update) > 0)
            assert plan.window_fed == any(row.branch == Branch.WINDOW for row in record.rows) or config.window == 1
            assert plan.reason in (PlanReason.BEST_RATIO, PlanReason.PROBE_WINDOW)
            assert all(len(g.tokens) == plan.guess_length for g in guesses)
            trimmed = any(len(g.tokens) < config.ngram - 1 for g in guesses)
            plans.add((plan.window_fed, bool(guesses), trimmed))
    assert any(window for window, _, _ in plans), "the window was never fed"
    assert any(not window for window, _, _ in plans), "the window was never left out"
    assert any(trimmed for _, _, trimmed in plans) or per_token < 0.05, "steep costs never cut a guess short"


def test_a_recorded_auto_run_replays_step_for_step(tiny_lm):
    """The trace's settings carry the measured cost curve, so a fresh planner repeats every plan and so every step."""
    auto = choose_settings(cost_table(0.2))
    prompt = ([5, 6, 7, 8] * 8)[:30]
    trace = record_trace(tiny_lm, prompt, DecodeRequest(max_new_tokens=48), Runtime(auto=auto))
    settings = Trace.from_json(trace.to_json()).meta.settings.lookahead  # as a saved trace holds them
    assert settings.planner == PlannerKind.COST_AWARE
    plans = [step.plan for step in trace.steps[1:]]
    assert any(p.window_fed for p in plans) and any(not p.window_fed for p in plans), "the plans never varied"
    config = LookaheadConfig(settings.window, settings.ngram, settings.guesses)
    replay = list(
        decode_steps(
            tiny_lm,
            prompt,
            DecodeRequest(lookahead=config, max_new_tokens=48),
            Runtime(plan=lambda: replay_planner(settings)),
        )
    )
    assert len(replay) == len(trace.steps)
    for recorded, again in zip(trace.steps[1:], replay[1:], strict=True):
        assert again.plan == recorded.plan, f"step {recorded.step}"
        assert [r.token for r in again.rows] == [r.token for r in recorded.rows], f"step {recorded.step}"
        assert again.verification == recorded.verification, f"step {recorded.step}"
        assert again.committed == recorded.committed, f"step {recorded.step}"
    assert trace.summary.new_token_ids == greedy_reference(tiny_lm.model, prompt, 48, None)


def test_greedy_steps_equal_generate():
    lm = tiny_model("llama")
    prompt = [3, 4, 5, 3, 4]
    steps = list(decode_steps(lm, prompt, DecodeRequest(method=Method.GREEDY, max_new_tokens=20)))
    assert summarize(steps).new_token_ids == greedy_reference(lm.model, prompt, 20, None)
    assert all(s.tokens_fed == 1 and s.method == Method.GREEDY for s in steps[1:]) and len(steps) == 20


def test_step_records_describe_the_forward_pass():
    lm = tiny_model("llama")
    steps = list(
        decode_steps(lm, [5, 6, 7, 5, 6, 7, 5, 6], DecodeRequest(lookahead=LookaheadConfig(3, 4, 2), max_new_tokens=20))
    )
    for before, record in zip(steps, steps[1:], strict=False):
        rows, verification = record.rows, record.verification
        assert record.tokens_fed == len(rows)
        assert rows[0].token == before.committed[-1] == record.window.levels[0][0]  # c: the last committed token
        assert rows[0].position == record.position and rows[0].branch == Branch.CURRENT
        for i, row in enumerate(rows[1:], start=1):  # each row sits one past its parent and sees its ancestors
            assert row.position == rows[row.parent].position + 1 and row.sees == [*rows[row.parent].sees, i]
        for candidate in verification.candidates:  # the record's candidates are the tokens fed at their rows
            assert candidate.tokens == [rows[r].token for r in candidate.rows]
        assert len(guess_candidates(record)) <= 2
        assert record.forward_seconds > 0 and record.step_seconds >= record.forward_seconds
        assert record.committed == verification.block[: len(record.committed)]
        assert len(record.window.update) == len(record.window.levels[-1])
    assert [len(s.window.levels) for s in steps[1:4]] == [1, 2, 3]
    assert [s.window.origins for s in steps[1:5]] == [[0], [0, 1], [0, 1, 2], [1, 2, 3]]


def test_zero_guesses_is_legal_and_offers_none():
    lm = tiny_model("llama")
    steps = list(decode_steps(lm, [1, 2, 3], DecodeRequest(lookahead=LookaheadConfig(4, 3, 0), max_new_tokens=6)))
    assert all(s.plan.guesses_offered == 0 and not guess_candidates(s) and s.pool.size == 0 for s in steps[1:])


def test_bad_requests_get_clear_errors():
    lm = tiny_model("gpt2")
    with pytest.raises(DecodingError, match="the prompt is empty"):
        list(decode_steps(lm, [], DecodeRequest(max_new_tokens=8)))
    with pytest.raises(DecodingError, match="max_new_tokens must be an integer >= 1"):
        list(decode_steps(lm, [1], DecodeRequest(method=Method.GREEDY, max_new_tokens=0)))
    with pytest.raises(DecodingError, match="exceed the model's context of 256 tokens"):
        list(decode_steps(lm, [1] * 250, DecodeRequest(max_new_tokens=8)))
    with pytest.raises(ValueError, match="'beam' is not a valid Method"):
        list(decode_steps(lm, [1], DecodeRequest(method="beam", max_new_tokens=8)))
