"""Lookahead's working state on the device (working_state.OnDevice), beside its host proposer.

Once the Jacobi window holds its N-1 levels (the warm-up steps run on the host, as every recorded step
does), a timed lane's fixed-shape step keeps on the device the committed sequence and its length, the window (an
(N-1) x W table of token ids, level 0 column 0 being c) and the n-gram pool (a table of G continuations under each
key, with the token before each and a stamp of when it was last inserted: the larger, the more recent). Device
functions then do what the host step does (`LookaheadOnDevice.propose`, the pass, `settle`): offer the pool's
guesses under c (those preceded by the token before c first, newest first within each), lay them out after c and
the window in the shape's fixed tree (every guess slot fed; an empty one's candidate cannot win), run the pass,
verify greedily (each candidate's tokens against the argmax of the rows before them, a cumulative product, the
longest match, the first on ties: guesses before the window's trajectories), copy the accepted rows down and
advance L, append the block to the sequence, apply the Jacobi update (the top level's argmax) and move the levels
down, insert the harvested columns and the output's fresh n-grams into the pool, and propose the next step.
The pool's inserts of a step are made at once and equal, entry for entry and in recency order, what the host's
NGramPool makes inserting them one at a time (`PoolTable.insert` says how).

What the device step shares with the other methods' (the tree, greedy verification, the copy-down, how a
state is kept with its step) is working_state's; tests/test_working_state.py checks it against the host step.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..config import LookaheadConfig
from ..device.fixed import FixedStep
from ..method_spec import Resident
from ..step.decoding import GuessingDecoder
from ..step.planning import FullPlanner
from ..tree.layout import window_geometry
from ..working_state import OnDevice, at, fixed_tree, kept_down, kept_with, verified
from .pool import NGramPool

NONE = -1  # no preceding token (an n-gram at the start of the sequence)

PREFERRED = 1 << 48  # added to a stamp when its entry's preceding token matches: above every stamp a run reaches


@dataclass
class PoolTable:
    """The n-gram pool as tables over the vocabulary (one extra row, `trash`, takes the writes of inserts not
    made): under key k, `continuations[k, g]` (N-1 tokens), `previous[k, g]` (the token before the key, NONE) and
    `stamps[k, g]` (0 for an empty slot; `clock` is the largest given)."""

    continuations: torch.Tensor  # (V + 1, G, N - 1) long
    previous: torch.Tensor  # (V + 1, G) long
    stamps: torch.Tensor  # (V + 1, G) long
    clock: torch.Tensor  # () long

    @classmethod
    def empty(cls, vocabulary: int, guesses: int, ngram: int, device: torch.device) -> PoolTable:
        def table(*size):
            return torch.zeros(vocabulary + 1, guesses, *size, dtype=torch.long, device=device)

        return cls(table(ngram - 1), table(), table(), torch.zeros((), dtype=torch.long, device=device))

    @property
    def trash(self) -> int:
        return self.stamps.shape[0] - 1

    def load(self, pool: NGramPool) -> None:
        """The host pool's entries in, each key's oldest first (stamps 1, 2, ...: only their order matters)."""
        keys, slots, continuations, previous, stamps = [], [], [], [], []
        for key in pool.keys():
            for slot, entry in enumerate(pool.entries(key)):
                keys.append(key)
                slots.append(slot)
                continuations.append(entry.continuation)
                previous.append(NONE if entry.previous is None else entry.previous)
                stamps.append(slot + 1)
        for table in (self.continuations, self.previous, self.stamps):
            table.zero_()
        if keys:
            device = self.stamps.device
            at = (torch.tensor(keys, device=device), torch.tensor(slots, device=device))
            self.continuations.index_put_(at, torch.tensor(continuations, device=device))
            self.previous.index_put_(at, torch.tensor(previous, device=device))
            self.stamps.index_put_(at, torch.tensor(stamps, device=device))
        self.clock.fill_(max(stamps, default=0))

    def offered(self, current: torch.Tensor, before: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The guesses under `current` (a 1-element tensor) in the host's order (pool.chosen_guesses): those whose
        preceding token is `before` first, newest first within each; (G, N-1) tokens and which slots hold one."""
        stamps = self.stamps.index_select(0, current)[0]
        preferred = self.previous.index_select(0, current)[0] == before
        order = torch.where(stamps > 0, stamps + PREFERRED * preferred, -1).argsort(descending=True)
        continuations = self.continuations.index_select(0, current)[0]
        return continuations.index_select(0, order), (stamps > 0).index_select(0, order)

    def insert(self, keys: torch.Tensor, continuations: torch.Tensor, previous: torch.Tensor, made: torch.Tensor):
        """Insert K n-grams at once (`keys` (K,), `continuations` (K, N-1), their `previous` tokens (K,), whether
        each is `made` (K,)), as the host pool inserts them one after another, the k-th at time clock + 1 + k.

        A least-recently-used bucket of G holds the G items last inserted, each stamped with its last insertion
        (the LRU stack property). An entry's preceding token and source are its entry's: one the host made at the
        last insertion that found the item absent, and that later insertions update with their preceding token
        when they have one. An insertion at b finds its item absent when nothing holds it: when it is new to the
        bucket, or when G other items were inserted (distinct, in this batch or, before the item's first insertion
        here, in the bucket and newer than it) since its last insertion. Every insertion computes its key's new
        bucket whole; insertions under one key write the same bucket."""
        count, guesses = keys.shape[0], self.stamps.shape[1]
        index = torch.arange(count, device=keys.device)
        times = self.clock + 1 + index
        old, stamps, before = (t.index_select(0, keys) for t in (self.continuations, self.stamps, self.previous))

        same_key, held, in_bucket, final_previous, last_of_item = item_histories(
            (keys, continuations, previous, made), old, stamps, before, guesses
        )

        # Each insertion's view of its key's new bucket: the G old slots, then the K insertions as new items.
        touches = same_key[:, :, None] & held[None, :, :]  # [b, j, g]: insertion j touches old slot g of b's key
        toucher = torch.where(touches, index[None, :, None], -1).max(1).values  # (K, G), -1 untouched
        slot_times = torch.where(toucher >= 0, at(times, toucher), stamps)
        slot_previous = torch.where(toucher >= 0, at(final_previous, toucher), before)
        new_item = same_key & (last_of_item & ~in_bucket)[None, :]
        item_times = torch.where(new_item, times[None, :], 0)
        all_times = torch.cat([slot_times, item_times], dim=1)  # (K, G + K)
        all_continuations = torch.cat([old, continuations[None].expand(count, -1, -1)], dim=1)
        all_previous = torch.cat([slot_previous, final_previous[None].expand(count, -1)], dim=1)
        newest = all_times.topk(guesses, dim=1).indices  # (K, G)
        target = torch.where(made, keys, self.trash)
        self.stamps.index_copy_(0, target, all_times.gather(1, newest))
        self.previous.index_copy_(0, target, all_previous.gather(1, newest))
        spans = newest[:, :, None].expand(-1, -1, continuations.shape[1])
        self.continuations.index_copy_(0, target, all_continuations.gather(1, spans))
        self.clock += count


def item_histories(inserted: tuple, old: torch.Tensor, stamps: torch.Tensor, before: torch.Tensor, guesses: int):
    """For K insertions at once (`inserted`: keys, continuations, previous tokens, made, as WorkingPool.insert takes
    them) into buckets of G whose `old` continuations, `stamps` and `before` tokens are each key's (K, G, ...): which
    insertions share a key, which old slot holds each item, whether the bucket holds it, each insertion's preceding
    token once every insertion is done, and whether it is its item's last insertion."""
    keys, continuations, previous, made = inserted
    count = keys.shape[0]
    index = torch.arange(count, device=keys.device)
    same_key = made[:, None] & made[None, :] & (keys[:, None] == keys[None, :])
    same = same_key & (continuations[:, None] == continuations[None, :]).all(-1)  # the same item
    held = (old == continuations[:, None]).all(-1) & (stamps > 0)  # (K, G): the slot holding the item
    in_bucket, own_stamp = held.any(-1), (stamps * held).sum(-1)
    own_previous = torch.where(in_bucket, (before * held).sum(-1), NONE)

    earlier = index[None, :] < index[:, None]  # [b, j]: j before b
    last_time = torch.where(same & earlier, index[None, :], -1).max(-1).values  # the item's last insertion, -1
    next_time = torch.where(same & ~earlier & (index[None, :] != index[:, None]), index[None, :], count)
    next_time = next_time.min(-1).values
    since = earlier & (index[None, :] > last_time[:, None]) & (next_time[None, :] >= index[:, None])
    others = same_key & ~same & since  # [b, j]: j the last insertion before b of a distinct other item
    newer_held = in_bucket[None, :] & (own_stamp[None, :] > own_stamp[:, None])
    newer_in_bucket = ((stamps > own_stamp[:, None]) & (stamps > 0)).sum(-1)
    first = last_time < 0
    pushed_out = torch.where(
        first,
        ~in_bucket | (newer_in_bucket + (others & ~newer_held).sum(-1) >= guesses),
        others.sum(-1) >= guesses,
    )
    made_here = made & pushed_out  # the insertion made a fresh entry

    last_made = torch.where(same & made_here[None, :], index[None, :], -1).max(-1).values
    told = same & (index[None, :] >= last_made[:, None]) & (previous[None, :] != NONE)
    last_told = torch.where(told, index[None, :], -1).max(-1).values
    kept_previous = torch.where((last_made < 0) & in_bucket, own_previous, NONE)
    final_previous = torch.where(last_told >= 0, at(previous, last_told), kept_previous)
    last_of_item = torch.where(same, index[None, :], -1).max(-1).values == index
    return same_key, held, in_bucket, final_previous, last_of_item


class LookaheadOnDevice(OnDevice):
    """Lookahead's state: the committed sequence and its length, the full window's levels, the pool's table. Its
    tree is the host's full plan (decoding.lay_out) with every guess slot fed: c, the window's rows, G chains of
    N - 1; the guesses, then the window's trajectories, verified."""

    def __init__(self, step: FixedStep, config: LookaheadConfig, vocabulary: int) -> None:
        device, shape = step.ids.device, step.shape
        levels, width, span = config.ngram - 1, config.window, config.ngram - 1
        geometry = window_geometry(levels, width)
        parents = [-1, *(0 if p == -1 else 1 + p for p in geometry.parents)]
        guesses = []
        for _ in range(config.guesses):
            first = len(parents)
            parents += [0, *range(first, first + span - 1)]
            guesses.append(list(range(first, first + span)))
        trajectories = [[1 + r for r in rows] for rows in geometry.trajectories]
        super().__init__(step, fixed_tree(parents, guesses + trajectories, device))
        self.config, self.span, self.trajectory_tokens = config, span, sum(map(len, trajectories))
        self.window_places = torch.tensor([lv * width + col for lv, col in geometry.places], device=device)
        self.top_rows = torch.tensor([1 + r for r in geometry.rows[-1]], device=device)
        self.everything = torch.ones(len(trajectories), dtype=torch.bool, device=device)
        self.offered = torch.zeros(config.guesses, dtype=torch.bool, device=device)  # the guess slots filled
        self.levels = torch.zeros(levels, width, dtype=torch.long, device=device)
        self.sequence = torch.zeros(shape.capacity + shape.kept, dtype=torch.long, device=device)
        self.count = torch.zeros((), dtype=torch.long, device=device)
        self.pool = PoolTable.empty(vocabulary, config.guesses, config.ngram, device)

    def fill(self, sequence: list[int], levels: list[list[int]], pool: NGramPool, length: int) -> None:
        self.sequence[: len(sequence)] = torch.tensor(sequence, device=self.sequence.device)
        self.count.fill_(len(sequence))
        self.levels.copy_(torch.tensor(levels, device=self.levels.device))
        self.pool.load(pool)
        self.tree.fit(self.step)
        self.step.length.fill_(length)

    def counted(self, offered: int) -> tuple[int, int]:
        empty = (self.config.guesses - offered) * self.span
        return self.tree.size - empty, offered * self.span + self.trajectory_tokens

    def propose(self) -> None:
        """The guesses under c, laid out after c and the window."""
        current, before = self.levels[0, :1], self.sequence.index_select(0, self.count.view(1) - 2)
        guesses, offered = self.pool.offered(current, before)
        self.offered.copy_(offered)
        fed = torch.cat([current, self.levels.view(-1).index_select(0, self.window_places), guesses.view(-1)])
        self.step.ids[0, : self.tree.size] = fed

    def settle(self) -> torch.Tensor:
        step = self.step
        fed, argmax = step.ids[0, : self.tree.size], step.argmax.long()
        usable = torch.cat([self.offered, self.everything])
        accepted, kept, block = verified(self.tree.rows, self.tree.real & usable[:, None], fed, argmax)
        report = torch.cat([accepted.view(1), self.offered.sum().view(1), block]).to(torch.int32)
        kept_down(step, accepted, kept)
        self.advance(argmax, accepted, block)
        self.propose()
        return report

    def advance(self, argmax: torch.Tensor, accepted: torch.Tensor, block: torch.Tensor) -> None:
        """The block onto the sequence; the window's columns harvested with the Jacobi update on top, then the
        output's fresh n-grams, into the pool; the levels moved down, the update on top, the new c at (0, 0)."""
        span, device = block.shape[0], block.device
        count = self.count.clone()
        self.sequence.index_copy_(0, count + torch.arange(span, device=device), block)
        grown = count + 1 + accepted
        update = argmax.index_select(0, self.top_rows)
        columns = torch.cat([self.levels.t(), update[:, None]], dim=1)
        before_current = self.sequence.index_select(0, count.view(1) - 2)
        keys, continuations, previous, made = output_ngrams(self.sequence, count, grown, self.config.ngram, span)
        self.pool.insert(
            torch.cat([columns[:, 0], keys]),
            torch.cat([columns[:, 1:], continuations]),
            torch.cat([before_current, self.levels[0, :-1], previous]),
            torch.cat([torch.ones_like(update, dtype=torch.bool), made]),
        )
        self.levels.copy_(torch.cat([self.levels[1:], update[None]]))
        self.levels[0, :1] = self.sequence.index_select(0, grown.view(1) - 1)
        self.count.copy_(grown)


def output_ngrams(sequence: torch.Tensor, count: torch.Tensor, grown: torch.Tensor, ngram: int, span: int):
    """The committed output's fresh n-grams, as proposers.fresh_ngrams yields them: those ending past the `count`
    tokens the pool has seen, up to `grown`, at most `span` of them; (keys, continuations, preceding tokens, made)."""
    starts = count - ngram + 1 + torch.arange(span, device=sequence.device)
    made = (starts >= 0) & (starts + ngram <= grown)
    at = starts.clamp(min=0)[:, None] + torch.arange(ngram, device=sequence.device)
    grams = sequence.index_select(0, at.view(-1)).view(span, ngram)
    previous = torch.where(starts > 0, sequence.index_select(0, (starts - 1).clamp(min=0)), NONE)
    return grams[:, 0], grams[:, 1:], previous, made


def lookahead_held(decoder: GuessingDecoder) -> OnDevice:
    passes, config = decoder.passes, decoder.proposer.config
    vocabulary = decoder.model.get_output_embeddings().weight.shape[0]
    return kept_with(passes.step, config, lambda: LookaheadOnDevice(passes.step, config, vocabulary))


def lookahead_recorded(decoder: GuessingDecoder) -> OnDevice:
    """Lookahead's state with its `settle` recorded at the prefill, on a stand-in (every level c, an empty pool),
    before the warm-up steps that fill the window: so a decoding's first, untimed tokens hold the recording, however
    many tokens those steps accept."""
    state, config, current = lookahead_held(decoder), decoder.proposer.config, decoder.sequence[-1]
    if state.run is None:
        levels = [[current] * config.window for _ in range(config.ngram - 1)]
        state.load(decoder.sequence, levels, NGramPool(config.ngram, config.guesses), decoder.passes.length)
    return state


def lookahead_state(decoder: GuessingDecoder) -> OnDevice:
    state, proposer = lookahead_held(decoder), decoder.proposer
    state.load(decoder.sequence, proposer.window.levels, proposer.pool, decoder.passes.length)
    return state


# Lookahead moves to the device once its window is full (its `settle` recorded at the prefill): with a window of two
# levels or more (N >= 3), a pool (G >= 1), and the paper's full plan (what a fixed shape runs)
RESIDENT = Resident(
    lambda request, planner: (
        request.lookahead.ngram >= 3
        and request.lookahead.guesses >= 1
        and (planner is None or isinstance(planner, FullPlanner))
    ),
    lambda decoder: decoder.proposer.window.is_full,
    lookahead_state,
    lookahead_recorded,
)
