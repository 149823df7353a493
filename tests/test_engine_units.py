"""Unit tests of the engine's parts: pool, window, layout and mask, cache, settings.

Verification and the commit rules have their own file (test_verify.py), as do the proposers.
"""

from __future__ import annotations

import pytest
import torch
from transformers import DynamicCache

from lookahead_core.config import LookaheadConfig, SettingsError
from lookahead_core.device.forward import keep_rows, tree_mask
from lookahead_core.methods.lookahead import guess_branch, window_branch
from lookahead_core.methods.pool import Guess, NGramPool, chosen_guesses
from lookahead_core.methods.window import JacobiWindow
from lookahead_core.records import Branch, GuessReason, GuessSource, PlanReason
from lookahead_core.step.decoding import lay_out
from lookahead_core.step.planning import Plan
from lookahead_core.step.proposers import Proposal
from lookahead_core.tree.layout import CURRENT, chain_layout, tree_layout, visible_rows, window_geometry

# ------------------------------------------------------------------------------------------------
# N-gram pool


def test_pool_keeps_most_recent_last_and_evicts_the_oldest():
    pool = NGramPool(ngram=3, capacity=2)
    assert pool.insert(7, [1, 2], None, GuessSource.WINDOW) is None
    assert pool.insert(7, [3, 4], None, GuessSource.OUTPUT) is None
    assert [e.continuation for e in pool.entries(7)] == [(1, 2), (3, 4)]
    evicted = pool.insert(7, [5, 6], None, GuessSource.WINDOW)
    assert (evicted.continuation, evicted.source) == ((1, 2), GuessSource.WINDOW)
    assert [e.continuation for e in pool.entries(7)] == [(3, 4), (5, 6)]
    assert pool.size == 2


def test_pool_reinsertion_moves_to_the_end_without_growing():
    pool = NGramPool(ngram=3, capacity=2)
    pool.insert(7, [1, 2], None, GuessSource.PROMPT)
    pool.insert(7, [3, 4], None, GuessSource.WINDOW)
    assert pool.insert(7, [1, 2], None, GuessSource.WINDOW) is None
    assert [e.continuation for e in pool.entries(7)] == [(3, 4), (1, 2)]
    assert pool.insert(7, [5, 6], None, GuessSource.WINDOW).continuation == (3, 4)
    assert pool.size == 2


def test_pool_with_zero_capacity_stays_empty():
    pool = NGramPool(ngram=3, capacity=0)
    pool.insert_sequence([1, 2, 3, 4], GuessSource.PROMPT)
    assert pool.size == 0 and chosen_guesses(pool.entries(1), None, 5) == []


def test_pool_seeds_every_ngram_of_a_sequence():
    pool = NGramPool(ngram=3, capacity=4)
    assert pool.insert_sequence([5, 6, 7, 5, 8], GuessSource.PROMPT) == 3
    assert [e.continuation for e in pool.entries(5)] == [(6, 7)]
    assert [e.continuation for e in pool.entries(7)] == [(5, 8)]
    assert pool.entries(6)[0].previous == 5


def test_pool_guesses_prefer_the_two_token_key_then_the_newest():
    pool = NGramPool(ngram=3, capacity=4)
    pool.insert(9, [1, 1], previous=4, source=GuessSource.PROMPT)
    pool.insert(9, [2, 2], previous=5, source=GuessSource.WINDOW)
    pool.insert(9, [3, 3], previous=6, source=GuessSource.OUTPUT)
    guesses = chosen_guesses(pool.entries(9), previous=4, limit=2)
    assert [g.tokens for g in guesses] == [[1, 1], [3, 3]]
    assert [g.reason for g in guesses] == [GuessReason.TWO_TOKEN_KEY, GuessReason.ONE_TOKEN_KEY]
    assert [g.source for g in guesses] == [GuessSource.PROMPT, GuessSource.OUTPUT]


# ------------------------------------------------------------------------------------------------
# Jacobi window


def test_window_warms_up_one_level_per_step_then_shifts():
    window = JacobiWindow.initial(current_token=100, prompt_ids=[1, 2, 3], window=3, ngram=4, seed=0)
    assert window.width == 3 + 4 - 2 and len(window.levels) == 1 and window.levels[0][0] == 100
    assert window.origins == [0]  # level 0 is the initial fill
    fill = window.levels[0][1:]
    assert set(fill) <= {1, 2, 3}
    window.advance([10, 11, 12, 13, 14], next_token=101, step=1)
    assert len(window.levels) == 2 and window.width == 4
    assert window.levels[1] == [11, 12, 13, 14]
    assert window.levels[0][0] == 101
    assert window.origins == [0, 1]
    window.advance([20, 21, 22, 23], next_token=102, step=2)
    assert window.is_full and window.width == 3
    assert window.levels == [[102, *fill[2:]], [12, 13, 14], [21, 22, 23]]
    assert window.origins == [0, 1, 2]
    assert window.harvest([30, 31, 32]) == [[102, 12, 21, 30], [fill[2], 13, 22, 31], [fill[3], 14, 23, 32]]
    window.advance([30, 31, 32], next_token=103, step=5)
    assert window.levels == [[103, 13, 14], [21, 22, 23], [30, 31, 32]]
    assert window.origins == [1, 2, 5]  # level 0 (from step 0) dropped; the top came from step 5


def test_window_with_two_gram_is_full_from_the_start():
    window = JacobiWindow.initial(current_token=5, prompt_ids=[1], window=1, ngram=2)
    assert window.levels == [[5]] and window.is_full
    assert window.harvest([6]) == [[5, 6]]


def test_a_window_left_out_keeps_its_levels_and_takes_the_new_current_token():
    window = JacobiWindow([[5, 6, 7], [8, 9, 10]], ngram=4, origins=[0, 3])
    window.reanchor(11)
    assert window.levels == [[11, 6, 7], [8, 9, 10]] and window.origins == [0, 3]


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


def hand_drawn_step():
    """The hand-drawn step laid out by the engine: c=10, levels [[10, 11, 12], [21, 22, 23]], guess [31, 32]."""
    window = JacobiWindow([[10, 11, 12], [21, 22, 23]], ngram=3)
    guess = guess_branch(Guess([31, 32], GuessSource.PROMPT, GuessReason.ONE_TOKEN_KEY), 0)
    plan = Plan(feed_window=True, guesses=1, length=2, reason=PlanReason.PAPER, offered=1)
    return lay_out(10, Proposal(window_branch(window), [guess]), plan)


def test_layout_matches_the_hand_drawn_example():
    fed = hand_drawn_step()
    assert fed.tokens == [10, 11, 12, 21, 22, 23, 31, 32]
    assert fed.layout.parents == (-1, 0, 1, 0, 1, 2, 0, 6)
    assert list(fed.layout.depths) == HAND_DRAWN_POSITIONS
    assert fed.places == [
        (Branch.CURRENT, 0, 0),
        *[(Branch.WINDOW, 0, 1), (Branch.WINDOW, 0, 2)],
        *[(Branch.WINDOW, 1, 0), (Branch.WINDOW, 1, 1), (Branch.WINDOW, 1, 2)],
        *[(Branch.GUESS, 0, 0), (Branch.GUESS, 0, 1)],
    ]
    assert fed.window_rows == range(1, 6)
    drawn = [[i for i, mark in enumerate(line) if mark == "x"] for line in HAND_DRAWN_MASK]
    assert visible_rows(fed.layout.parents) == drawn


def test_candidates_are_the_guesses_first_then_each_columns_trajectory():
    """Verification order: a guess wins a tie with a trajectory. Column j's trajectory is L0C1..L0Cj, then L1Cj."""
    fed = hand_drawn_step()
    assert [c.rows for c in fed.candidates] == [(6, 7), (3,), (1, 4), (1, 2, 5)]
    assert [c.tokens for c in fed.candidates] == [(31, 32), (21,), (11, 22), (11, 12, 23)]
    assert [c.source for c in fed.candidates] == [GuessSource.PROMPT] + [GuessSource.TRAJECTORY] * 3
    assert [c.lane for c in fed.candidates] == [0, 0, 1, 2]


def test_window_geometry_in_local_rows():
    geometry = window_geometry(levels=2, width=3)
    assert geometry.places == ((0, 1), (0, 2), (1, 0), (1, 1), (1, 2))
    assert geometry.rows == ((CURRENT, 0, 1), (2, 3, 4))
    assert geometry.parents == (CURRENT, 0, CURRENT, 0, 1)
    assert geometry.trajectories == ((2,), (0, 3), (0, 1, 4))


def test_a_plan_without_the_window_and_with_cut_guesses_lays_out_only_that():
    window = JacobiWindow([[10, 11, 12], [21, 22, 23]], ngram=4)
    guesses = [
        guess_branch(Guess([31, 32, 33], GuessSource.OUTPUT, GuessReason.TWO_TOKEN_KEY), lane) for lane in range(2)
    ]
    plan = Plan(feed_window=False, guesses=1, length=2, reason=PlanReason.BEST_RATIO, offered=2)
    fed = lay_out(10, Proposal(window_branch(window), guesses), plan)
    assert fed.tokens == [10, 31, 32] and fed.layout.parents == (-1, 0, 1)
    assert fed.window_rows == range(0)
    assert [(c.tokens, c.rows) for c in fed.candidates] == [((31, 32), (1, 2))]


def test_tree_and_chain_layouts():
    assert tree_layout((-1, 0, 0, 2)).depths == (0, 1, 1, 2)
    chain = chain_layout(4)
    assert chain.parents == (-1, 0, 1, 2) and chain.depths == (0, 1, 2, 3) and chain.size == 4


def test_tree_mask_is_additive_with_zero_where_allowed():
    mask = tree_mask(hand_drawn_step().layout, torch.float32, torch.device("cpu"))
    allowed = [[mark == "x" for mark in line] for line in HAND_DRAWN_MASK]
    assert torch.equal(mask == 0, torch.tensor(allowed))
    assert torch.all(mask[mask != 0] == torch.finfo(torch.float32).min)


def test_layout_size_matches_the_configured_cost_once_warm():
    config = LookaheadConfig(window=15, ngram=5, guesses=15)
    window = JacobiWindow([list(range(15))] * 4, ngram=5)
    guesses = [
        guess_branch(Guess([1, 2, 3, 4], GuessSource.WINDOW, GuessReason.ONE_TOKEN_KEY), lane) for lane in range(15)
    ]
    plan = Plan(feed_window=True, guesses=15, length=4, reason=PlanReason.PAPER, offered=15)
    fed = lay_out(0, Proposal(window_branch(window), guesses), plan)
    assert fed.layout.size == config.tokens_per_step == 1 + 14 + 3 * 15 + 15 * 4


@pytest.mark.parametrize("ngram", range(2, 9))
@pytest.mark.parametrize("window", range(1, 9))
def test_no_step_feeds_more_than_the_configured_tokens(window, ngram):
    """The window's rows through warm-up and once full, plus G guesses, at most tokens_per_step, reached once: a
    fixed-shape step is sized by it (W=2, N=5: warm-up's 3 levels of 3 columns feed 8 rows, full 2 x 4 feed 7)."""
    config = LookaheadConfig(window=window, ngram=ngram, guesses=3)
    jacobi = JacobiWindow.initial(0, list(range(1, 50)), window, ngram)
    fed = []
    for step in range(ngram):
        fed.append(sum(len(level) for level in jacobi.levels) - 1)
        jacobi.advance(jacobi.levels[-1], next_token=step, step=step + 1)
    assert len(jacobi.levels) == ngram - 1 and len(jacobi.levels[0]) == window, "the walk reached a full window"
    assert max(fed) + 1 + 3 * (ngram - 1) == config.tokens_per_step


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
# Lookahead settings


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


class PieceTokenizer:
    """A tokenizer of three entries: a sentencepiece byte token, a byte-level BPE fragment, a whole word."""

    pieces = {0: "<0xE4>", 1: "ĠðŁĺ", 2: "word"}
    texts = {0: "\ufffd", 1: " \ufffd", 2: "word"}

    def convert_ids_to_tokens(self, token_id):
        return self.pieces[token_id]

    def decode(self, ids):
        return "".join(self.texts[i] for i in ids)


def test_a_token_holding_part_of_a_character_shows_its_bytes_marked():
    from lookahead_core.tokens import token_text

    tokenizer = PieceTokenizer()
    assert [token_text(tokenizer, i) for i in range(3)] == ["‹e4›", " ‹f0 9f 98›", "word"]


def test_the_cpus_name_counts_its_threads_in_the_singular_and_the_plural(monkeypatch):
    """A lab started with one torch thread once named its CPU "1 torch threads"; two threads are the control."""
    from lookahead_core import models

    monkeypatch.setattr(models.os, "cpu_count", lambda: 2)
    for threads, words in ((1, "CPU (2 cores, 1 torch thread)"), (2, "CPU (2 cores, 2 torch threads)")):
        monkeypatch.setattr(models.torch, "get_num_threads", lambda threads=threads: threads)
        assert models.device_name(torch.device("cpu")) == words
