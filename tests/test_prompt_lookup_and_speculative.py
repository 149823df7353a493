"""The guessing family beside lookahead: prompt lookup and speculative decoding with a draft model.

Greedy output equals `generate(do_sample=False)` on tiny random Llama, Qwen2 and GPT-2 targets,
with a smaller random draft of the same vocabulary (often wrong) and with the target's own
bfloat16 copy (often right); the proposers' own rules have unit tests; a draft with another
tokenizer is refused.
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from lookahead_core.config import PROMPT_LOOKUP, LookupConfig, SettingsError
from lookahead_core.methods.draft import Draft, DraftError, DraftProposer, check_tokenizers, make_draft
from lookahead_core.methods.lookup import PromptLookupProposer, find_matches
from lookahead_core.records import Branch, DraftRecord, GuessReason, GuessSource, Method, Verdict
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime
from lookahead_core.sampling import GREEDY
from lookahead_core.step.decoding import DecodingError
from lookahead_core.step.proposers import StepContext
from lookahead_core.trace import decode_steps, summarize

from .test_engine_tiny_models import greedy_case
from .tiny import TINY_VOCAB, tiny_draft, tiny_model

CASES = 24


def family_output(lm, method, prompt, max_new_tokens, eos, lookup=PROMPT_LOOKUP, draft=None):
    lm.eos_ids = frozenset() if eos is None else frozenset({eos})
    steps = list(
        decode_steps(
            lm, prompt, DecodeRequest(method=method, max_new_tokens=max_new_tokens, lookup=lookup), Runtime(draft=draft)
        )
    )
    return summarize(steps).new_token_ids, steps


@pytest.mark.heavy
@pytest.mark.parametrize("family", ["llama", "qwen2", "gpt2"])
@pytest.mark.parametrize("method", [Method.PROMPT_LOOKUP, Method.SPECULATIVE])
def test_every_method_equals_greedy_generate(family, method):
    lm = tiny_model(family)
    drafts = [tiny_draft(family), make_draft(lm, "bf16-self", 3)]
    rng = random.Random(f"{family}-{method}")
    multi_token_steps = 0
    for case in range(CASES):
        motif = [rng.randrange(TINY_VOCAB) for _ in range(rng.randint(1, 6))]
        prompt = (motif * 8)[: rng.randint(1, 30)]
        max_new_tokens = rng.randint(1, 40)
        lookup = LookupConfig(ngram=rng.randint(1, 4), tokens=rng.randint(1, 10), candidates=rng.randint(1, 4))
        draft = drafts[case % 2]
        draft.tokens, draft.confidence = rng.randint(1, 6), rng.choice([0.0, 0.4])
        reference, eos = greedy_case(lm.model, prompt, max_new_tokens, rng, case % 3 == 0)
        output, steps = family_output(lm, method, prompt, max_new_tokens, eos, lookup, draft)
        assert output == reference, f"case {case}: {prompt} {lookup} k={draft.tokens} {max_new_tokens} eos={eos}"
        multi_token_steps += sum(len(s.committed) > 1 for s in steps)
        assert all(s.method == method for s in steps)
    assert multi_token_steps > 0, "no step accepted a guess: the test would not catch a verification bug"


@pytest.mark.parametrize("family", ["llama", "gpt2"])  # gpt2 ties its head to its embeddings
def test_the_bf16_copy_is_the_target_cast_whole_and_leaves_the_target_as_it_was(family):
    """bf16_copy casts each tensor on its own: its copy must be what casting a whole copy gives (every parameter and
    buffer, the tied ones still one tensor, the same logits), and the target keeps its float32 weights."""
    import copy

    import torch

    from lookahead_core.methods.draft import bf16_copy

    model = tiny_model(family).model
    before = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    made, expected = bf16_copy(model), copy.deepcopy(model).to(torch.bfloat16).eval()
    for name, tensor in expected.state_dict().items():
        assert torch.equal(made.state_dict()[name], tensor) and made.state_dict()[name].dtype == tensor.dtype, name
    buffers = [(name, buffer.dtype, buffer.tolist()) for name, buffer in made.named_buffers()]
    assert buffers == [(name, buffer.dtype, buffer.tolist()) for name, buffer in expected.named_buffers()]
    tied = model.get_output_embeddings().weight is model.get_input_embeddings().weight
    assert (made.get_output_embeddings().weight is made.get_input_embeddings().weight) == tied
    assert all(p.dtype == torch.bfloat16 for p in made.parameters()) and made.training is False
    ids = torch.tensor([[1, 2, 3, 4, 5]])
    with torch.no_grad():
        assert torch.equal(made(ids).logits, expected(ids).logits)
    assert all(torch.equal(tensor, before[name]) for name, tensor in model.state_dict().items())
    assert all(p.dtype == torch.float32 for p in model.parameters())


def test_speculative_steps_record_the_draft_chain():
    lm = tiny_model("llama")
    draft = make_draft(lm, "bf16-self", 4, 0.0)
    _, steps = family_output(lm, Method.SPECULATIVE, [3, 4, 5, 3, 4], 30, None, draft=draft)
    for record in steps[1:]:
        (chain,) = record.verification.candidates
        assert chain.source == GuessSource.DRAFT and chain.reason == GuessReason.DRAFT_MODEL
        assert len(chain.tokens) == len(chain.draft_probabilities) == record.report(DraftRecord).forward_passes == 4
        assert all(0 < q <= 1 for q in chain.draft_probabilities)
        assert [row.branch for row in record.rows] == [Branch.CURRENT] + [Branch.DRAFT] * 4
        assert record.window is None and record.pool is None
        draft = record.report(DraftRecord)
        assert draft.tokens == chain.tokens and draft.seconds > 0
    assert any(r.verification.candidates[0].verdict == Verdict.WON for r in steps[1:])


def test_the_draft_cache_keeps_only_what_was_committed():
    lm = tiny_model("llama")
    draft = tiny_draft("llama", tokens=5)
    _, steps = family_output(lm, Method.SPECULATIVE, [7, 8, 9], 20, None, draft=draft)
    proposer = DraftProposer(draft, [7, 8, 9, 10], TINY_VOCAB, GREEDY)
    assert proposer.cache.get_seq_length() == 3  # all but c
    proposal = proposer.propose(StepContext([7, 8, 9, 10], 1))
    assert proposer.cache.get_seq_length() == 3 + len(proposal.guesses[0].tokens)  # c and all drafts but the last


def test_a_step_cut_short_by_low_confidence_drafts_fewer_tokens():
    lm = tiny_model("llama")
    sure, unsure = tiny_draft("llama", 6, 0.0), tiny_draft("llama", 6, 1.01)
    _, sure_steps = family_output(lm, Method.SPECULATIVE, [1, 2, 3], 12, None, draft=sure)
    _, unsure_steps = family_output(lm, Method.SPECULATIVE, [1, 2, 3], 12, None, draft=unsure)
    assert all(r.report(DraftRecord).forward_passes == 6 for r in sure_steps[1:])
    assert all(r.report(DraftRecord).forward_passes == 1 for r in unsure_steps[1:])  # below the floor after one token


def test_prompt_lookup_takes_the_longest_key_then_the_latest_match():
    sequence = [1, 2, 3, 9, 1, 2, 4, 7, 5, 2, 3, 8, 1, 2, 3]
    matches = find_matches(sequence, LookupConfig(ngram=3, tokens=2, candidates=3))
    assert [(m.key_length, m.start, m.continuation) for m in matches] == [
        (3, 3, (9, 1)),  # 1 2 3 occurs once before
        (2, 11, (8, 1)),  # then 2 3, latest first; its match at 3 repeats (9, 1); 3 alone adds nothing new
    ]


def test_prompt_lookup_offers_distinct_continuations_only():
    sequence = [5, 6, 5, 6, 5, 6, 5]
    matches = find_matches(sequence, LookupConfig(ngram=1, tokens=1, candidates=4))
    assert [m.continuation for m in matches] == [(6,)]


def test_prompt_lookup_says_where_a_guess_was_copied_from():
    proposer = PromptLookupProposer(LookupConfig(ngram=2, tokens=3, candidates=2), prompt_length=4)
    proposal = proposer.propose(StepContext([1, 2, 3, 4, 9, 1, 2, 6, 6, 1, 2], 1))
    assert proposal.window is None
    first, second = (g.candidates[0] for g in proposal.guesses)
    assert (first.tokens, first.source, first.found_at, first.key_length) == ((6, 6, 1), GuessSource.OUTPUT, 7, 2)
    assert (second.tokens, second.source, second.found_at) == ((3, 4, 9), GuessSource.PROMPT, 2)
    assert first.reason == GuessReason.SUFFIX_MATCH


def test_no_match_means_a_plain_step():
    lm = tiny_model("llama")
    _, steps = family_output(lm, Method.PROMPT_LOOKUP, [1, 2, 3, 4], 3, None, LookupConfig(ngram=2))
    assert steps[1].tokens_fed >= 1 and steps[1].plan.guesses_offered == len(steps[1].verification.candidates)


def fake_lm(name: str, vocab: dict) -> SimpleNamespace:
    return SimpleNamespace(name=name, tokenizer=SimpleNamespace(get_vocab=lambda: vocab))


def test_a_draft_with_another_tokenizer_is_refused():
    with pytest.raises(DraftError, match="another tokenizer than 'target'.*must share the target's tokenizer"):
        check_tokenizers(fake_lm("target", {"a": 0, "b": 1}), fake_lm("other", {"a": 0, "c": 1}))
    check_tokenizers(fake_lm("target", {"a": 0}), fake_lm("same", {"a": 0}))


def test_bad_draft_requests_get_clear_errors():
    lm = tiny_model("llama")
    with pytest.raises(DecodingError, match="needs a draft model"):
        decode_steps(lm, [1, 2], DecodeRequest(method=Method.SPECULATIVE, max_new_tokens=4))
    with pytest.raises(SettingsError, match="draft tokens k must be an integer >= 1"):
        make_draft(lm, "bf16-self", 0)
    with pytest.raises(SettingsError, match="lookup tokens"):
        LookupConfig(tokens=0)
    with pytest.raises(DecodingError, match="context"):
        decode_steps(
            lm,
            [1] * 250,
            DecodeRequest(method=Method.SPECULATIVE, max_new_tokens=4),
            Runtime(draft=Draft(lm.model, "x", 5)),
        )
