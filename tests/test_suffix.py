"""Suffix decoding: the index answers what a suffix tree would (occurrences of the longest match, what followed
them and how often), the tree keeps to its budget (alpha x the match's length, the tree size), the store is bounded
and holds only what its holder put in, and every output is exact (greedy on the real model, cold and warm store;
the sampled distribution is tested with the other methods in test_sampling.py)."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from lookahead_core.config import SettingsError, SuffixConfig
from lookahead_core.layout import CURRENT
from lookahead_core.models import encode_prompt
from lookahead_core.records import GuessSource, Method, Trace
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime
from lookahead_core.suffix import (
    SuffixStore,
    SuffixText,
    grow_tree,
    occurrences,
    speculate,
    suffix_branch,
)
from lookahead_core.trace import decode_steps, lean_steps, record_trace, summarize
from tests.conftest import tiny_model

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
    nodes = grow_tree(at_longest, budget=1, min_probability=0.0)
    followers = brute_followers(sequence, sequence, longest)
    assert nodes[0].count == max(followers.values()) and followers[nodes[0].token] == nodes[0].count
    assert all(o.source == (GuessSource.PROMPT if o.start < 40 else GuessSource.OUTPUT) for o in found)


def test_the_tree_grows_the_likeliest_node_first_and_keeps_its_parent_first():
    # after [7, 8]: 9 three times (then 1, 1, 2), 5 once
    earlier = SuffixText.of("earlier", [7, 8, 9, 1, 0, 7, 8, 9, 1, 0, 7, 8, 9, 2, 0, 7, 8, 5, 0])
    found = occurrences([3, 7, 8], [SuffixText.of("", [3, 7, 8]), earlier], prompt_length=3, longest=8)
    nodes = grow_tree(found, budget=4, min_probability=0.0)
    assert [(n.token, n.parent, n.count) for n in nodes] == [(9, CURRENT, 3), (1, 0, 2), (0, 1, 2), (7, 2, 2)]
    assert [round(n.probability, 3) for n in nodes] == [0.75, 0.5, 0.5, 0.5]
    wider = grow_tree(found, budget=8, min_probability=0.0)
    assert (5, CURRENT, 1) in [(n.token, n.parent, n.count) for n in wider]
    assert all(n.source == GuessSource.EARLIER for n in nodes)
    branch = suffix_branch(speculate([3, 7, 8], [SuffixText.of("", [3, 7, 8]), earlier], 3, SuffixConfig()))
    assert branch.candidates[0].tokens[:3] == (9, 1, 0)
    assert all(branch.parents[r] < r for r in range(len(branch.tokens)))


def test_a_short_match_guesses_little_a_long_one_up_to_the_tree_size_and_no_match_nothing():
    text = list(range(40)) * 2
    config = SuffixConfig(tree_size=16, alpha=1.0, min_probability=0.0)
    short = speculate([5, 99, 2], [SuffixText.of("", [5, 99, 2]), SuffixText.of("t", text)], 3, config)
    assert short.length == 1 and short.budget == 1 and len(short.nodes) == 1
    long = speculate(list(range(30)), [SuffixText.of("", list(range(30))), SuffixText.of("t", text)], 30, config)
    assert (
        long.length == 30
        and long.budget == 16
        and [n.token for n in long.nodes] == list(range(30, 40)) + list(range(6))
    )
    none = speculate([100, 101], [SuffixText.of("", [100, 101]), SuffixText.of("t", text)], 2, config)
    assert none.nodes == () and none.score == 0


def test_a_node_below_the_least_probability_is_not_grown():
    text = [1, 2, 3, 1, 2, 4, 1, 2, 5, 1, 2, 6]
    found = occurrences([0, 1, 2], [SuffixText.of("", [0, 1, 2]), SuffixText.of("t", text)], 3, 8)
    assert grow_tree(found, budget=8, min_probability=0.3) == []
    level = grow_tree(found, budget=4, min_probability=0.25)  # four tokens followed [1, 2], once each
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
    twin = mine.copy()
    twin.add("later", [7])
    assert "later" not in [t.name for t in mine.texts()]


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
    assert any(n.source == GuessSource.EARLIER for r in recorded[1:] for n in r.suffix.nodes)


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
    assert cold.meta.suffix.store == [] and warm.meta.suffix.store == ["an earlier run"]
    assert Trace.from_json(warm.to_json()).steps[3].suffix == warm.steps[3].suffix
