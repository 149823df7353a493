"""Unit tests of the engine's parts: pool, window, layout and mask, verification, commit rules, cache."""

from __future__ import annotations

import pytest
import torch
from transformers import DynamicCache

from lookahead_core.config import LookaheadConfig, SettingsError
from lookahead_core.decoding import commit_block, commit_sources, verify
from lookahead_core.forward import keep_rows, tree_mask
from lookahead_core.layout import step_layout, visible_rows
from lookahead_core.pool import NGramPool
from lookahead_core.window import JacobiWindow

# ------------------------------------------------------------------------------------------------
# N-gram pool


def test_pool_keeps_most_recent_last_and_evicts_the_oldest():
    pool = NGramPool(ngram=3, capacity=2)
    assert pool.insert(7, [1, 2], None, "window") is None
    assert pool.insert(7, [3, 4], None, "window") is None
    assert [e.continuation for e in pool.entries(7)] == [(1, 2), (3, 4)]
    assert pool.insert(7, [5, 6], None, "window") == (1, 2)
    assert [e.continuation for e in pool.entries(7)] == [(3, 4), (5, 6)]
    assert pool.size == 2


def test_pool_reinsertion_moves_to_the_end_without_growing():
    pool = NGramPool(ngram=3, capacity=2)
    pool.insert(7, [1, 2], None, "prompt")
    pool.insert(7, [3, 4], None, "window")
    assert pool.insert(7, [1, 2], None, "window") is None
    assert [e.continuation for e in pool.entries(7)] == [(3, 4), (1, 2)]
    assert pool.insert(7, [5, 6], None, "window") == (3, 4)
    assert pool.size == 2


def test_pool_with_zero_capacity_stays_empty():
    pool = NGramPool(ngram=3, capacity=0)
    pool.insert_sequence([1, 2, 3, 4], "prompt")
    assert pool.size == 0 and pool.guesses(1, None, 5) == []


def test_pool_seeds_every_ngram_of_a_sequence():
    pool = NGramPool(ngram=3, capacity=4)
    assert pool.insert_sequence([5, 6, 7, 5, 8], "prompt") == 3
    assert [e.continuation for e in pool.entries(5)] == [(6, 7)]
    assert [e.continuation for e in pool.entries(7)] == [(5, 8)]
    assert pool.entries(6)[0].previous == 5


def test_pool_guesses_prefer_the_two_token_key_then_the_newest():
    pool = NGramPool(ngram=3, capacity=4)
    pool.insert(9, [1, 1], previous=4, source="prompt")
    pool.insert(9, [2, 2], previous=5, source="window")
    pool.insert(9, [3, 3], previous=6, source="output")
    guesses = pool.guesses(9, previous=4, limit=2)
    assert [g.tokens for g in guesses] == [[1, 1], [3, 3]]
    assert [g.reason for g in guesses] == ["two-token key", "one-token key"]
    assert guesses[0].source == "prompt"


# ------------------------------------------------------------------------------------------------
# Jacobi window


def test_window_warms_up_one_level_per_step_then_shifts():
    window = JacobiWindow.initial(current_token=100, prompt_ids=[1, 2, 3], window=3, ngram=4, seed=0)
    assert window.width == 3 + 4 - 2 and len(window.levels) == 1 and window.levels[0][0] == 100
    fill = window.levels[0][1:]
    assert set(fill) <= {1, 2, 3}
    window.advance([10, 11, 12, 13, 14], next_token=101)
    assert len(window.levels) == 2 and window.width == 4
    assert window.levels[1] == [11, 12, 13, 14]
    assert window.levels[0][0] == 101
    window.advance([20, 21, 22, 23], next_token=102)
    assert window.is_full and window.width == 3
    assert window.levels == [[102, *fill[2:]], [12, 13, 14], [21, 22, 23]]
    assert window.harvest([30, 31, 32]) == [[102, 12, 21, 30], [fill[2], 13, 22, 31], [fill[3], 14, 23, 32]]
    window.advance([30, 31, 32], next_token=103)
    assert window.levels == [[103, 13, 14], [21, 22, 23], [30, 31, 32]]


def test_window_with_two_gram_is_full_from_the_start():
    window = JacobiWindow.initial(current_token=5, prompt_ids=[1], window=1, ngram=2)
    assert window.levels == [[5]] and window.is_full
    assert window.harvest([6]) == [[5, 6]]


# ------------------------------------------------------------------------------------------------
# Layout, attention mask and position ids: W=3, N=3 (two full levels), one guess of two tokens.
#
# rows:  0 c | 1 L0C1 | 2 L0C2 | 3 L1C0 | 4 L1C1 | 5 L1C2 | 6 g0 | 7 g1
# Each row sees the committed prefix plus (x):
#          0 1 2 3 4 5 6 7
HAND_DRAWN_MASK = [
    "x.......",  # c
    "xx......",  # level 0 column 1: c, itself
    "xxx.....",  # level 0 column 2: c, L0C1, itself
    "x..x....",  # level 1 column 0: c (level 0 column 0), itself
    "xx..x...",  # level 1 column 1: level 0 columns 0..1, itself
    "xxx..x..",  # level 1 column 2: level 0 columns 0..2, itself
    "x.....x.",  # guess token 0: c, itself
    "x.....xx",  # guess token 1: c, guess token 0, itself
]
HAND_DRAWN_POSITIONS = [0, 1, 2, 1, 2, 3, 1, 2]  # offsets from the current token's position


def test_layout_matches_the_hand_drawn_example():
    layout = step_layout(levels=2, width=3, guesses=1, guess_length=2)
    assert layout.parents == (-1, 0, 1, 0, 1, 2, 0, 6)
    assert list(layout.depths) == HAND_DRAWN_POSITIONS
    assert layout.window_rows == ((0, 1, 2), (3, 4, 5))
    assert layout.guess_rows == ((6, 7),)
    assert layout.trajectory_rows == ((3,), (1, 4), (1, 2, 5))
    drawn = [[i for i, mark in enumerate(line) if mark == "x"] for line in HAND_DRAWN_MASK]
    assert visible_rows(layout.parents) == drawn


def test_tree_mask_is_additive_with_zero_where_allowed():
    layout = step_layout(levels=2, width=3, guesses=1, guess_length=2)
    mask = tree_mask(layout, torch.float32, torch.device("cpu"))
    allowed = [[mark == "x" for mark in line] for line in HAND_DRAWN_MASK]
    assert torch.equal(mask == 0, torch.tensor(allowed))
    assert torch.all(mask[mask != 0] == torch.finfo(torch.float32).min)


def test_layout_size_matches_the_configured_cost_once_warm():
    config = LookaheadConfig(window=15, ngram=5, guesses=15)
    layout = step_layout(levels=4, width=15, guesses=15, guess_length=4)
    assert layout.size == config.tokens_per_step == 1 + 14 + 3 * 15 + 15 * 4


# ------------------------------------------------------------------------------------------------
# Verification and commit rules


def test_verify_takes_the_longest_match_and_the_bonus_token():
    layout = step_layout(levels=1, width=1, guesses=3, guess_length=3)
    input_ids = [5, 5, 9, 9, 5, 6, 7, 5, 6, 0]  # rows: c, guess 0 (1-3), guess 1 (4-6), guess 2 (7-9)
    argmax = [5, 6, 0, 0, 6, 7, 8, 6, 7, 0]
    paths = layout.guess_rows + layout.trajectory_rows
    matched, winner, block = verify(paths, input_ids, argmax)
    assert matched == [1, 3, 2, 0]  # the lone column's trajectory is empty: W = 1 on one level
    assert winner == 1
    assert block == [5, 6, 7, 8]  # three accepted guess tokens, then the bonus token 8
    assert commit_sources(len(block), 3) == ["guaranteed", "accepted", "accepted", "bonus"]


def test_verify_ties_go_to_the_first_and_misses_commit_one_token():
    paths = ((1, 2), (3, 4))
    assert verify(paths, [0, 4, 1, 4, 2], [4, 9, 9, 9, 9]) == ([1, 1], 0, [4, 9])
    assert verify(paths, [0, 4, 1, 4, 2], [3, 9, 9, 9, 9]) == ([0, 0], None, [3])
    assert verify((), [0], [7]) == ([], None, [7])


def test_a_window_trajectory_is_verified_like_a_guess():
    layout = step_layout(levels=2, width=3, guesses=1, guess_length=2)
    # rows: 0 c | 1 L0C1 | 2 L0C2 | 3 L1C0 | 4 L1C1 | 5 L1C2 | 6 g0 | 7 g1
    input_ids = [10, 11, 12, 21, 22, 0, 11, 41]
    argmax = [11, 12, 0, 0, 0, 30, 40, 0]
    matched, best, block = verify(layout.guess_rows + layout.trajectory_rows, input_ids, argmax)
    # guess [11, 41]: 11 is the guaranteed token, 41 is not what row 6 predicts (40).
    # trajectory of column 2 [11, 12, 0]: each is what the row before it predicts.
    assert matched == [1, 0, 1, 3]
    assert best == 3 and block == [11, 12, 0, 30]


@pytest.mark.parametrize(
    ("block", "remaining", "eos", "expected"),
    [
        ([1, 2, 3], 5, frozenset(), ([1, 2, 3], None)),
        ([1, 2, 3], 2, frozenset(), ([1, 2], "max_new_tokens")),
        ([1, 2, 3], 3, frozenset(), ([1, 2, 3], "max_new_tokens")),
        ([1, 2, 3], 5, frozenset({2, 9}), ([1, 2], "eos")),
        ([1, 2, 3], 1, frozenset({2}), ([1], "max_new_tokens")),
        ([2, 2, 3], 1, frozenset({2}), ([2], "eos")),
    ],
)
def test_commit_block_stops_at_any_eos_and_at_the_budget(block, remaining, eos, expected):
    assert commit_block(block, remaining, eos) == expected


# ------------------------------------------------------------------------------------------------
# KV cache compaction


def filled_cache(length: int, layers: int = 2) -> DynamicCache:
    """A cache whose entry at index i holds the value i, so moves are visible."""
    cache = DynamicCache()
    for layer in range(layers):
        states = torch.arange(length, dtype=torch.float32).view(1, 1, length, 1).expand(1, 2, length, 3).clone()
        cache.update(states, states + 1000, layer)
    return cache


def cached_indices(cache: DynamicCache) -> list[list[int]]:
    return [layer.keys[0, 0, :, 0].int().tolist() for layer in cache.layers]


def test_keep_rows_moves_the_accepted_rows_down_and_crops():
    cache = filled_cache(12)
    keep_rows(cache, keep=4, rows=[8, 9, 10])
    assert cache.get_seq_length() == 7
    assert cached_indices(cache) == [[0, 1, 2, 3, 8, 9, 10]] * 2
    assert cache.layers[1].values[0, 1, :, 2].int().tolist() == [1000, 1001, 1002, 1003, 1008, 1009, 1010]


def test_keep_rows_moves_rows_that_start_in_place_but_skip_some():
    cache = filled_cache(10)
    keep_rows(cache, keep=4, rows=[4, 6, 8])
    assert cached_indices(cache)[0] == [0, 1, 2, 3, 4, 6, 8]


def test_keep_rows_with_contiguous_or_no_rows_only_crops():
    cache = filled_cache(10)
    keep_rows(cache, keep=4, rows=[4, 5])
    assert cached_indices(cache)[0] == [0, 1, 2, 3, 4, 5]
    keep_rows(cache, keep=3, rows=[])
    assert cached_indices(cache)[0] == [0, 1, 2]


# ------------------------------------------------------------------------------------------------
# Settings


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"window": 0}, "window W must be an integer >= 1"),
        ({"ngram": 1}, "n-gram size N must be an integer >= 2"),
        ({"guesses": -1}, "guesses G must be an integer >= 0"),
        ({"window": 2.5}, "window W must be an integer"),
        ({"window": 60, "ngram": 8, "guesses": 60}, "over the budget of 512"),
    ],
)
def test_out_of_range_settings_are_refused_with_the_reason(settings, message):
    with pytest.raises(SettingsError, match=message):
        LookaheadConfig(**settings)
