"""Suffix decoding: the index answers what a suffix tree would (occurrences of the longest match, what followed
them and how often), the tree keeps to its budget (alpha x the match's length, the tree size), the store is bounded
and holds only what its holder put in, and every output is exact (greedy on the real model, cold and warm store;
the sampled distribution is tested with the other methods in test_sampling.py)."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from lookahead_core.config import SettingsError, SuffixConfig
from lookahead_core.methods.suffix import (
    PRIOR,
    SuffixStore,
    SuffixText,
    Trust,
    grow_tree,
    occurrences,
    speculate,
    suffix_branch,
    trust_key,
)
from lookahead_core.models import encode_prompt
from lookahead_core.records import GuessSource, Method, SuffixRecord, Trace
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime
from lookahead_core.trace import decode_steps, lean_steps, record_trace, summarize
from lookahead_core.tree.layout import CURRENT
from tests.tiny import tiny_model

# ----------------------------------------------------------------------------------------------
# The index against brute force


def brute_longest(sequence: list[int], longest: int) -> int:
    """The longest suffix of `sequence` (at most `longest`) that occurs earlier in it, with a token after it."""
    found = [
        k for k in range(1, longest + 1) for end in range(k, len(sequence)) if sequence[end - k : end] == sequence[-k:]
    ]
    return max(found, default=0)


def brute_followers(sequence: list[int], text: list[int], length: int) -> Counter:
    """What followed each occurrence of the sequence's last `length` tokens in `text`: a count per next token."""
    key = sequence[-length:]
    return Counter(text[end] for end in range(length, len(text)) if text[end - length : end] == key)


@pytest.mark.parametrize("seed", range(6))
def test_the_index_finds_the_longest_match_and_what_followed_it_as_brute_force_does(seed):
    generator = torch.Generator().manual_seed(seed)
    text = torch.randint(0, 4, (120,), generator=generator).tolist()
    sequence = text[:80]
    own = SuffixText.of("", sequence)
    found = occurrences(sequence, [own], prompt_length=40, longest=12)
    longest = max(o.length for o in found)
    assert longest == brute_longest(sequence, 12)
    at_longest = [o for o in found if o.length >= longest]
    nodes = grow_tree(at_longest, longest, budget=1, min_probability=0.0, trust=Trust())
    followers = brute_followers(sequence, sequence, longest)
    assert nodes[0].count == max(followers.values()) and followers[nodes[0].token] == nodes[0].count
    assert all(o.source == (GuessSource.PROMPT if o.start < 40 else GuessSource.OUTPUT) for o in found)


def test_the_tree_grows_the_likeliest_node_first_and_keeps_its_parent_first():
    # after [7, 8]: 9 three times (then 1, 1, 2), 5 once; a 2-token match, so split shares are trusted at half
    earlier = SuffixText.of("earlier", [7, 8, 9, 1, 0, 7, 8, 9, 1, 0, 7, 8, 9, 2, 0, 7, 8, 5, 0])
    found = occurrences([3, 7, 8], [SuffixText.of("", [3, 7, 8]), earlier], prompt_length=3, longest=8)
    nodes = grow_tree(found, 2, budget=4, min_probability=0.0, trust=Trust())
    assert [(n.token, n.parent, n.count) for n in nodes] == [(9, CURRENT, 3), (5, CURRENT, 1), (1, 0, 2), (0, 1, 1)]
    assert [round(n.probability, 4) for n in nodes] == [0.375, 0.125, 0.125, round(0.125 * PRIOR[(True, 2)], 4)]
    assert all(n.source == GuessSource.EARLIER for n in nodes)
    config = SuffixConfig(min_probability=0.1)
    branch = suffix_branch(speculate([3, 7, 8], [SuffixText.of("", [3, 7, 8]), earlier], 3, config, Trust()))
    assert (9, 1) in [c.tokens for c in branch.candidates]
    assert all(branch.parents[r] < r for r in range(len(branch.tokens)))


def test_trust_follows_the_runs_own_verdicts():
    """A kind of node that keeps being rejected is trusted less, one that keeps being accepted more; the prior
    weighs PRIOR_WEIGHT shares."""
    trust, key = Trust(), trust_key(True, 3)
    assert trust.chance(key, 1.0) == PRIOR[key]
    for _ in range(8):
        trust.learn(key, 1.0, accepted=False)
    assert trust.chance(key, 1.0) == pytest.approx(PRIOR[key] / 2)
    split = trust_key(False, 1)
    for _ in range(40):
        trust.learn(split, 0.5, accepted=True)
    assert trust.chance(split, 0.5) > 0.7 > 0.15 == PRIOR[split] / 2  # accepted every time: trusted past its share
    assert trust.chance(trust_key(False, 2), 0.5) == PRIOR[(False, 2)] / 2  # another kind learns nothing from it


def test_a_short_match_guesses_little_a_long_one_up_to_the_tree_size_and_no_match_nothing():
    text = list(range(40)) * 2
    config = SuffixConfig(tree_size=16, alpha=1.0, min_probability=0.0)
    short = speculate([5, 99, 2], [SuffixText.of("", [5, 99, 2]), SuffixText.of("t", text)], 3, config, Trust())
    assert short.length == 1 and short.budget == 1 and len(short.nodes) == 1
    long = speculate(
        list(range(30)), [SuffixText.of("", list(range(30))), SuffixText.of("t", text)], 30, config, Trust()
    )
    assert (
        long.length == 30
        and long.budget == 16
        and [n.token for n in long.nodes] == list(range(30, 40)) + list(range(6))
    )
    none = speculate([100, 101], [SuffixText.of("", [100, 101]), SuffixText.of("t", text)], 2, config, Trust())
    assert none.nodes == () and none.score == 0


def test_a_node_below_the_least_probability_is_not_grown():
    text = [1, 2, 3, 1, 2, 4, 1, 2, 5, 1, 2, 6]  # four tokens followed [1, 2], once each: a quarter share each
    found = occurrences([0, 1, 2], [SuffixText.of("", [0, 1, 2]), SuffixText.of("t", text)], 3, 8)
    assert grow_tree(found, 2, budget=8, min_probability=0.13, trust=Trust()) == []
    level = grow_tree(found, 2, budget=4, min_probability=0.12, trust=Trust())
    assert sorted(n.token for n in level) == [3, 4, 5, 6] and all(n.parent == CURRENT for n in level)


def test_the_settings_are_checked():
    for bad in ({"tree_size": 0}, {"tree_size": 65}, {"alpha": 0}, {"alpha": True}, {"min_probability": 1.5}):
        with pytest.raises(SettingsError):
            SuffixConfig(**bad)


# ----------------------------------------------------------------------------------------------
# The store


def test_the_store_evicts_the_least_recently_used_past_its_budget():
    store = SuffixStore(budget=10)
    store.add("a", [1, 2, 3, 4])
    store.add("b", [5, 6, 7, 8])
    store.touch(["a"])
    store.add("c", [9, 10, 11])
    assert [t.name for t in store.texts()] == ["c", "a"]
    store.add("long", list(range(25)))
    assert [t.name for t in store.texts()] == ["long"] and store.texts()[0].tokens == list(range(15, 25))
    assert [t.name for t in store.texts(leaving_out="long")] == []


def test_two_stores_share_nothing_they_were_not_given():
    shipped = SuffixText.of("example", [1, 2, 3])
    mine, yours = SuffixStore(), SuffixStore()
    for store in (mine, yours):
        store.add_text(shipped)
    mine.add("my run", [4, 5, 6])
    assert [t.name for t in yours.texts()] == ["example"]


# ----------------------------------------------------------------------------------------------
# Decoding: exact, lean equals recorded, the record says what happened


def test_a_tiny_model_decodes_the_same_tokens_lean_and_recorded_with_a_warm_store():
    lm = tiny_model("llama")
    prompt = [5, 6, 7, 5, 6, 8, 5, 6, 7, 9]
    greedy = summarize(list(decode_steps(lm, prompt, DecodeRequest(method=Method.GREEDY, max_new_tokens=30))))
    store = SuffixStore()
    store.add("earlier", greedy.new_token_ids)
    request = DecodeRequest(method=Method.SUFFIX, max_new_tokens=30)
    recorded = list(decode_steps(lm, prompt, request, Runtime(store=store)))
    lean = list(lean_steps(lm, prompt, request, Runtime(store=store)))
    assert summarize(recorded).new_token_ids == summarize(lean).new_token_ids == greedy.new_token_ids
    assert summarize(recorded).steps < greedy.steps  # the earlier output is followed, many tokens a pass
    assert any(n.source == GuessSource.EARLIER for r in recorded[1:] for n in r.report(SuffixRecord).nodes)


def test_an_earlier_output_of_another_tokenizer_is_left_out():
    """A store's text with an id past the model's vocabulary (another tokenizer's: a store keyed by a model name two
    models share) is never matched, so no such id is fed; the run stays exact. The control: the same text within
    the vocabulary is matched."""
    lm = tiny_model("llama")
    vocabulary = lm.model.get_output_embeddings().weight.shape[0]
    prompt = [5, 6, 7, 5, 6, 8, 5, 6, 7, 9]
    greedy = summarize(list(decode_steps(lm, prompt, DecodeRequest(method=Method.GREEDY, max_new_tokens=20))))
    request = DecodeRequest(method=Method.SUFFIX, max_new_tokens=20)
    for extra, matched in ((vocabulary + 5, False), (vocabulary - 1, True)):
        store = SuffixStore()
        store.add("another model's", [*greedy.new_token_ids, extra])
        steps = list(decode_steps(lm, prompt, request, Runtime(store=store)))
        assert summarize(steps).new_token_ids == greedy.new_token_ids
        earlier = (o.source == GuessSource.EARLIER for r in steps[1:] for o in r.report(SuffixRecord).occurrences)
        assert any(earlier) == matched
        assert steps[-1].report(SuffixRecord).store_texts == int(matched)


@pytest.mark.parametrize("name", ["code-edit", "chat"])
def test_suffix_decoding_equals_hf_greedy_on_the_real_model_cold_and_warm(default_model, name):
    lm = default_model
    texts = {
        "code-edit": "def add(a, b):\n    return a + b\n\nAdd type hints to this function and return it whole.",
        "chat": "What are three tips for staying healthy?",
    }
    ids = encode_prompt(lm.tokenizer, texts[name], True)
    reference = lm.model.generate(torch.tensor([ids]), do_sample=False, max_new_tokens=40)[0, len(ids) :].tolist()
    request = DecodeRequest(method=Method.SUFFIX, max_new_tokens=40)
    cold = record_trace(lm, ids, request)
    store = SuffixStore()
    store.add("an earlier run", reference)
    warm = record_trace(lm, ids, request, Runtime(store=store))
    assert cold.summary.new_token_ids == warm.summary.new_token_ids == reference
    assert warm.summary.steps < cold.summary.steps
    assert cold.meta.settings.suffix.store == [] and warm.meta.settings.suffix.store == ["an earlier run"]
    assert Trace.from_json(warm.to_json()).steps[3].report(SuffixRecord) == warm.steps[3].report(SuffixRecord)
