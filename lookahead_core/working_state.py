"""A method's working state on the device, and a greedy step that reads and writes nothing else: plain decoding's,
lookahead's, prompt lookup's, Medusa's and EAGLE's timed steps in a fixed-shape mode, with one small read-back a step.

Lookahead: once the Jacobi window holds its N-1 levels (the warm-up steps run on the host, as every recorded step
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

Prompt lookup: from the first step, the committed sequence; the earlier occurrences of its last tokens are found
and their distinct continuations laid out where the host lays them out (`PromptLookupOnDevice`).

Medusa: from the first step, the current token and the hidden state behind it; the heads' top choices fill the
sparse tree, the pass verifies it, and the hidden state of the last row kept is the next step's.

EAGLE: after its first step (the host's drafting feeds the layer the prompt), the layer's own static KV cache, the
kept rows' hidden states with the tokens after them, and the chain of k the layer drafts from them, every step all k
(the confidence floor cuts the candidate, not the drafting: `EagleOnDevice`).

Plain decoding: the current token; the pass feeds it, the next is its argmax (`PlainPassesOnDevice`, the fixed
step's passes of a timed lane's greedy decoding).

Either way the host reads back the accepted count, the guesses offered and the block, commits (EOS, the budget)
and counts the step; the steps, tokens and counts equal the host step's, which tests/test_working_state.py checks
against the recorded step's records. Greedy only: sampled verification stays on the host (verify_sampled).
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from transformers.cache_utils import Cache, DynamicCache

from .config import LookaheadConfig, LookupConfig
from .decoding import GuessingDecoder
from .device.fixed import FixedPasses, FixedStep, SpanLayer, one_line, padded_tree
from .device.forward import Pass
from .layout import chain_layout, tree_layout, window_geometry
from .methods.draft import Draft
from .methods.medusa import Medusa, tree_widths
from .methods.pool import NGramPool
from .planning import FullPlanner
from .records import Method, StepKind, StepTally
from .request import DecodeRequest
from .verify import commit

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


def at(values: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """`values` (1-D) at `index` (any shape; where it is -1, the first value: the caller's `where` discards it)."""
    return values.index_select(0, index.clamp(min=0).reshape(-1)).view_as(index)


@dataclass(frozen=True)
class FixedTree:
    """A device step's token tree: each row's parent (row 0, c, has none: -1), and each candidate's rows in
    verification order, padded with row 0 to the longest, with the mask of its real rows."""

    parents: tuple[int, ...]
    rows: torch.Tensor  # (candidates, longest) long
    real: torch.Tensor  # (candidates, longest) bool

    @property
    def size(self) -> int:
        return len(self.parents)

    def fit(self, step: FixedStep) -> None:
        """Check that the step's shape holds this tree, then give the step its depths and mask."""
        shape = step.shape
        if self.size > shape.rows or shape.kept < self.rows.shape[1] + 1:
            raise ValueError(f"a tree of {self.size} rows reaching {self.rows.shape[1]} does not fit {shape}")
        depths, tree = padded_tree(tree_layout(self.parents), shape.rows, step.tree.dtype, step.tree.device)
        step.depths.copy_(depths)
        step.tree.copy_(tree)


def fixed_tree(parents: list[int], candidates: list[list[int]], device: torch.device) -> FixedTree:
    longest = max(map(len, candidates))
    rows = [c + [0] * (longest - len(c)) for c in candidates]
    real = [[True] * len(c) + [False] * (longest - len(c)) for c in candidates]
    return FixedTree(tuple(parents), torch.tensor(rows, device=device), torch.tensor(real, device=device))


def verified(rows: torch.Tensor, real: torch.Tensor, fed: torch.Tensor, argmax: torch.Tensor):
    """Greedy verification on the device, as verify.verify: each candidate's matched length (its tokens, at `rows`
    (candidates x longest) where `real`, against the argmax of the rows before them, while they agree), the longest
    (the first on ties), and (accepted, the winner's rows, the block: the argmax of c's row and of each of the
    winner's rows, the first 1 + accepted being the step's)."""
    tokens = fed.index_select(0, rows.reshape(-1)).view_as(rows)
    before = torch.cat([rows.new_zeros(rows.shape[0], 1), rows[:, :-1]], dim=1)
    predicted = argmax.index_select(0, before.reshape(-1)).view_as(rows)
    matched = ((tokens == predicted) & real).long().cumprod(dim=1).sum(dim=1)
    kept = rows.index_select(0, matched.argmax().view(1))[0]
    return matched.max(), kept, torch.cat([argmax[:1], argmax.index_select(0, kept)])


def kept_down(step: FixedStep, accepted: torch.Tensor, kept: torch.Tensor) -> None:
    """Copy c's row and the winner's rows down (past the accepted ones harmlessly) and advance L by 1 + accepted."""
    rows = torch.cat([kept.new_zeros(1), kept, kept.new_zeros(step.shape.kept - 1 - kept.shape[0])])
    step.sources.copy_(rows)
    step.kept_rows_down()
    step.length += 1 + accepted


class OnDevice:
    """A method's working state kept with one fixed-shape step's buffers, and its step as two device functions around
    the step's pass (FixedStep.run, recorded per span): `propose` writes the next pass's ids (and any tree it lays
    out) from the state, and `settle` reads the pass's argmax (and hidden states), verifies, keeps, learns, proposes
    the next pass and returns (accepted, guesses offered, the block) as int32, the step's one read-back. Neither
    reads the host. `settle` is recorded once by the shape's capture, after a first run on the first decoding's
    state, which is loaded again after it. Made once per FixedStep and settings (`kept_with`), loaded by each
    decoding."""

    drafts_inside = False  # whether `settle` drafts (a draft's passes inside the device step: StepTally)

    def __init__(self, step: FixedStep, tree: FixedTree | None) -> None:
        self.step, self.tree, self.run = step, tree, None

    @torch.inference_mode()
    def load(self, *state) -> None:
        """A decoding's state in (the method's `fill`), the tree and the cache's L given to the step, and its first
        pass proposed."""
        if self.run is None:
            self.fill(*state)
            self.run = self.step.capture(self.settle)
            self.run()
        self.fill(*state)
        self.propose()

    def fill(self, *state) -> None:
        raise NotImplementedError

    def propose(self) -> None:
        raise NotImplementedError

    def settle(self) -> torch.Tensor:
        raise NotImplementedError

    def counted(self, offered: int) -> tuple[int, int]:
        """The rows the host step feeds and the candidate tokens it verifies, when `offered` guesses are offered."""
        raise NotImplementedError


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


class MedusaOnDevice(OnDevice):
    """Medusa's state: the current token and the last hidden state of the row whose prediction it is. Its tree
    is the heads' sparse tree after c (medusa.tree_branch), each root-to-leaf path a candidate; each step the heads
    read the hidden state, their top choices fill the tree, and the hidden state of the last row kept is the next's."""

    def __init__(self, step: FixedStep, medusa: Medusa, model) -> None:
        device, tree = step.ids.device, medusa.tree
        row = {path: 1 + r for r, path in enumerate(tree)}
        parents = [-1, *(row[p[:-1]] if len(p) > 1 else 0 for p in tree)]
        inner = {p[:-1] for p in tree}
        paths = [[row[leaf[:j]] for j in range(1, len(leaf) + 1)] for leaf in tree if leaf not in inner]
        super().__init__(step, fixed_tree(parents, paths, device))
        self.medusa, self.model, self.width = medusa, model, max(tree_widths(tree))
        heads = medusa.heads.heads
        self.choices = torch.tensor([p[-1] * heads + len(p) - 1 for p in tree], device=device)  # into (width, K)
        self.verified_tokens = sum(map(len, paths))
        self.current = torch.zeros(1, dtype=torch.long, device=device)
        self.hidden = torch.zeros(medusa.heads.target.hidden_size, dtype=model.dtype, device=device)

    def fill(self, current: int, hidden: torch.Tensor, length: int) -> None:
        self.current.fill_(current)
        self.hidden.copy_(hidden)
        self.tree.fit(self.step)
        self.step.length.fill_(length)

    def counted(self, offered: int) -> tuple[int, int]:
        return self.tree.size, self.verified_tokens

    def propose(self) -> None:
        """The heads' top choices for the hidden state, filling the tree after c."""
        _, top = self.medusa.heads.top_scores(self.model, self.hidden, self.width)
        guesses = top.indices.reshape(-1).index_select(0, self.choices)
        self.step.ids[0, : self.tree.size] = torch.cat([self.current, guesses])

    def settle(self) -> torch.Tensor:
        step = self.step
        fed, argmax = step.ids[0, : self.tree.size], step.argmax.long()
        accepted, kept, block = verified(self.tree.rows, self.tree.real, fed, argmax)
        kept_down(step, accepted, kept)
        last = torch.cat([kept.new_zeros(1), kept]).index_select(0, accepted.view(1))
        self.hidden.copy_(step.states.index_select(0, last)[0])
        self.current.copy_(block.index_select(0, accepted.view(1)))
        self.propose()
        return torch.cat([accepted.view(1), accepted.new_zeros(1), block]).to(torch.int32)


class EagleOnDevice(OnDevice):
    """EAGLE's state: the layer's own static KV cache (its E positions, each fed with the model's true feature
    there), the rows still to feed it (the last pass's kept rows' hidden states, with the tokens after them: the
    block) and the chain drafted from them. Its tree is a chain of k after c. Each step the pass verifies the chain
    (only its first m tokens, m cut by the confidence floor as the host cuts it), the kept rows' hidden states and
    the block are fed to the layer at [E, E + 1 + k) (the rows past 1 + accepted written there too: past E, so
    masked from every later row until the drafts or the next step's feed write over them), E advances by
    1 + accepted, and the layer drafts k tokens one row at a time from the last kept row's prediction, the j-th
    drafted row at E + j seeing the positions up to its own. All k are drafted every step (no host read decides
    when to stop): those past m are fed and cannot win."""

    drafts_inside = True

    def __init__(self, step: FixedStep, draft: Draft, model) -> None:
        device, k = step.ids.device, draft.tokens
        super().__init__(step, fixed_tree([-1, *range(k)], [list(range(1, k + 1))], device))
        self.layer, self.model, self.confidence = draft.model, model, draft.confidence
        self.head, self.embed = self.layer.head_for(model), model.get_input_embeddings()
        config, width = self.layer.body.config, self.layer.target.hidden_size
        # past the C committed positions: a last step's block, which the device keeps whole past the budget the host
        # commits, and the k - 1 rows drafted after it
        positions = step.shape.capacity + 2 * (1 + k)
        keys = torch.zeros(1, config.num_key_value_heads, positions, config.head_dim, dtype=self.layer.dtype)
        keys, values = keys.to(device), keys.clone().to(device)
        self.length = torch.zeros((), dtype=torch.long, device=device)  # E: the layer's positions with true features
        self.rows, self.reach = torch.arange(1 + k, device=device), torch.arange(k, device=device)
        self.columns = torch.arange(positions, device=device)
        self.fed_slots = torch.zeros(1 + k, dtype=torch.long, device=device)
        self.drafted_slot = torch.zeros(1, dtype=torch.long, device=device)
        self.fed_cache = Cache(layers=[SpanLayer(keys, values, self.length, self.fed_slots)])
        self.drafted_cache = Cache(layers=[SpanLayer(keys, values, self.length, self.drafted_slot)])
        self.fresh = torch.zeros(1 + k, width, dtype=model.dtype, device=device)  # the rows to feed: true features
        self.after = torch.zeros(1 + k, dtype=torch.long, device=device)  # and the token after each
        self.fresh_count = torch.zeros((), dtype=torch.long, device=device)
        self.real = torch.zeros(k, dtype=torch.bool, device=device)  # the chain's first m tokens
        self.offered = torch.zeros((), dtype=torch.long, device=device)  # m

    def fill(self, cache: DynamicCache | None, cached: int, fresh: torch.Tensor, after: list[int], length: int):
        """The host proposer's state in: its layer cache's `cached` positions, the features still to feed and the
        tokens after them."""
        layer = self.fed_cache.layers[0]
        if cached:
            layer.keys[:, :, :cached] = cache.layers[0].keys[:, :, :cached]
            layer.values[:, :, :cached] = cache.layers[0].values[:, :, :cached]
        self.length.fill_(cached)
        self.fresh[: len(after)] = fresh.to(self.fresh.dtype)
        self.after[: len(after)] = torch.tensor(after, device=self.after.device)
        self.fresh_count.fill_(len(after))
        self.tree.fit(self.step)
        self.step.length.fill_(length)

    def counted(self, offered: int) -> tuple[int, int]:
        return 1 + offered, offered

    def propose(self) -> None:
        """Feed the fresh rows, then draft k tokens from the last one's prediction; c and the chain are the next
        pass's ids, and the chain's first m tokens its candidate (m: up to the first below the confidence floor)."""
        feature, tokens, chances = self.fed(), [], []
        k, vocabulary = self.reach.shape[0], self.head.vocabulary
        for j in range(k):
            logits = self.head.scores(self.model, feature.to(self.model.dtype)).float()
            q = torch.softmax(logits[0], dim=-1)  # as draft.draft_token's greedy draw: its argmax and its chance
            index = q.argmax().view(1)
            chances.append(q.index_select(0, index))
            tokens.append(index if vocabulary is None else vocabulary.index_select(0, index))
            if j + 1 < k:
                feature = self.drafted(feature, tokens[-1], j)
        below = torch.cat(chances).double() < self.confidence  # as the host compares: a float32 chance, a float
        self.offered.copy_(torch.where(below.any(), below.long().argmax() + 1, k))
        self.real.copy_(self.reach < self.offered)
        current = self.after.index_select(0, self.fresh_count.view(1) - 1)
        self.step.ids[0, : self.tree.size] = torch.cat([current, *tokens])

    def fed(self) -> torch.Tensor:
        """The fresh rows through the layer at [E, E + 1 + k); E advanced by the real ones; the prediction (1, d) of
        the last real one."""
        positions = self.length + self.rows
        self.fed_slots.copy_(positions)
        embedded = self.embed(self.after[None]).to(self.layer.dtype)
        predicted = self.layer.features(
            self.fresh[None].to(self.layer.dtype), embedded, self.fed_cache, self.mask(positions), positions[None]
        )
        self.length += self.fresh_count
        return predicted[0].index_select(0, self.fresh_count.view(1) - 1)

    def drafted(self, feature: torch.Tensor, token: torch.Tensor, j: int) -> torch.Tensor:
        """The j-th drafted row (the predicted feature, the token drafted from it) at E + j; its prediction (1, d)."""
        position = (self.length + j).view(1)
        self.drafted_slot.copy_(position)
        embedded = self.embed(token[None]).to(self.layer.dtype)
        predicted = self.layer.features(
            feature[None].to(self.layer.dtype), embedded, self.drafted_cache, self.mask(position), position[None]
        )
        return predicted[0]

    def mask(self, positions: torch.Tensor) -> torch.Tensor:
        """Each row sees the columns up to its own position (a row is written at its position): (1, 1, rows, cols)."""
        seen = self.columns[None, :] <= positions[:, None]
        least = torch.finfo(self.layer.dtype).min
        return torch.zeros(seen.shape, dtype=self.layer.dtype, device=seen.device).masked_fill(~seen, least)[None, None]

    def settle(self) -> torch.Tensor:
        step = self.step
        fed, argmax = step.ids[0, : self.tree.size], step.argmax.long()
        accepted, kept, block = verified(self.tree.rows, self.real[None], fed, argmax)
        report = torch.cat([accepted.view(1), self.offered.view(1), block]).to(torch.int32)
        kept_down(step, accepted, kept)
        self.fresh.copy_(step.states.index_select(0, torch.cat([kept.new_zeros(1), kept])))
        self.after.copy_(block)
        self.fresh_count.copy_(1 + accepted)
        self.propose()
        return report


class PromptLookupOnDevice(OnDevice):
    """Prompt lookup's state: the committed sequence and its length. Each step finds, as lookup.find_matches does,
    the earlier occurrences of the sequence's last tokens (longest key first, then latest) and keeps the first
    `candidates` whose continuations differ: every start's longest matching key is measured at once, then the best
    start is taken and every start with the same continuation dropped, `candidates` times. The continuations are
    laid out as the host lays them out (chains after c, each as long as its continuation, side by side, then pad
    rows that see only themselves), so each row is fed where the host step feeds it."""

    def __init__(self, step: FixedStep, config: LookupConfig) -> None:
        super().__init__(step, None)
        device, shape = step.ids.device, step.shape
        self.config = config
        self.sequence = torch.zeros(shape.capacity + shape.kept, dtype=torch.long, device=device)
        self.count = torch.zeros((), dtype=torch.long, device=device)
        self.starts = torch.arange(self.sequence.shape[0], device=device)
        self.rows = torch.arange(shape.rows, device=device)
        self.reach = torch.arange(config.tokens, device=device)
        self.back = torch.arange(config.ngram, device=device)
        self.candidates = torch.zeros(config.candidates, config.tokens, dtype=torch.long, device=device)  # their rows
        self.real = torch.zeros(config.candidates, config.tokens, dtype=torch.bool, device=device)
        self.total = torch.zeros((), dtype=torch.long, device=device)  # the candidates' tokens

    def fill(self, sequence: list[int], length: int) -> None:
        self.sequence[: len(sequence)] = torch.tensor(sequence, device=self.sequence.device)
        self.count.fill_(len(sequence))
        self.step.length.fill_(length)

    def counted(self, offered: int) -> tuple[int, int]:
        return 1 + offered, offered

    def matches(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The chosen continuations (candidates x tokens) and their lengths (0 for a slot left empty)."""
        sequence, count, tokens = self.sequence, self.count, self.config.tokens
        before = self.starts[:, None] - 1 - self.back  # (positions, ngram): the key's tokens, last first
        key = sequence.index_select(0, (count - 1 - self.back).clamp(min=0))
        agree = (at(sequence, before) == key) & (before >= 0) & (self.back < count - 1)
        depth = agree.long().cumprod(dim=1).sum(dim=1)  # each start's longest matching key
        score = torch.where((depth > 0) & (self.starts < count), depth * self.starts.shape[0] + self.starts, -1)
        spans = at(sequence, (self.starts[:, None] + self.reach).clamp(max=self.starts.shape[0] - 1))
        lengths = (count - self.starts).clamp(0, tokens)
        chosen, chosen_lengths = [], []
        for _ in range(self.config.candidates):
            best = score.argmax().view(1)
            length = lengths.index_select(0, best)
            chosen_lengths.append(torch.where(score.index_select(0, best) >= 0, length, 0))
            chosen.append(spans.index_select(0, best))
            score = torch.where(taken(spans, lengths, best, self.reach), -1, score)
        return torch.cat(chosen), torch.cat(chosen_lengths)

    def propose(self) -> None:
        """The chosen continuations laid out as chains after c, side by side, then pad rows."""
        step, tokens = self.step, self.config.tokens
        current = self.sequence.index_select(0, self.count.view(1) - 1)
        spans, lengths = self.matches()
        ends = lengths.cumsum(0)
        offsets = 1 + ends - lengths
        which = torch.searchsorted(ends, self.rows - 1, right=True).clamp(max=lengths.shape[0] - 1)
        depth = self.rows - offsets.index_select(0, which)  # a row's place in its chain, from 0
        real = (self.rows >= 1) & (self.rows < 1 + ends[-1])
        step.ids[0] = torch.where(real, at(spans.view(-1), which * tokens + depth.clamp(0, tokens - 1)), current)
        columns, start = self.rows[None, :], offsets.index_select(0, which)[:, None]
        chain = (which[None, :] == which[:, None]) & (columns >= start) & (columns <= self.rows[:, None])
        seen = real[:, None] & (chain & real[None, :] | (columns == 0)) | (columns == self.rows[:, None])
        step.depths.copy_(torch.where(real, depth + 1, 0))
        step.tree.copy_(torch.zeros_like(step.tree).masked_fill(~seen, torch.finfo(step.tree.dtype).min))
        self.candidates.copy_((offsets[:, None] + self.reach).clamp(max=self.rows.shape[0] - 1))
        self.real.copy_(self.reach < lengths[:, None])
        self.total.copy_(ends[-1])

    def settle(self) -> torch.Tensor:
        step = self.step
        fed, argmax = step.ids[0], step.argmax.long()
        accepted, kept, block = verified(self.candidates, self.real, fed, argmax)
        report = torch.cat([accepted.view(1), self.total.view(1), block]).to(torch.int32)
        kept_down(step, accepted, kept)
        self.sequence.index_copy_(0, self.count + torch.arange(block.shape[0], device=block.device), block)
        self.count += 1 + accepted
        self.propose()
        return report


def taken(spans: torch.Tensor, lengths: torch.Tensor, best: torch.Tensor, reach: torch.Tensor) -> torch.Tensor:
    """The starts whose continuation is the one at `best` (as long, the same tokens): dropped once it is chosen."""
    span, length = spans.index_select(0, best), lengths.index_select(0, best)
    return (lengths == length) & ((spans == span) | (reach >= length)).all(dim=1)


class PlainOnDevice(OnDevice):
    """Plain decoding's state: the current token c, fed as the pass's row 0 (and its pad rows, as the host feeds
    them). `settle` takes row 0's argmax as the next c and advances L by one: row 0 was written at L, so nothing
    moves down."""

    def __init__(self, step: FixedStep) -> None:
        super().__init__(step, None)

    def fill(self, current: int, length: int) -> None:
        step = self.step
        depths, tree = padded_tree(chain_layout(1), step.shape.rows, step.tree.dtype, step.tree.device)
        step.depths.copy_(depths)
        step.tree.copy_(tree)
        step.ids.fill_(current)
        step.length.fill_(length)

    def propose(self) -> None:
        """Nothing: `settle` wrote the next c where the pass reads it."""

    def settle(self) -> torch.Tensor:
        step = self.step
        following = step.argmax[:1].long()
        step.ids.copy_(following.expand_as(step.ids))
        step.length += 1
        return following.to(torch.int32)


class PlainPassesOnDevice(FixedPasses):
    """The fixed-shape passes of a timed lane's greedy plain decoding, c and L kept on the device (PlainOnDevice):
    after the prefill each pass is the pass over its span and one run of `settle`, whose read-back is the next
    token; the host only commits. Where the device step fails to capture, the passes are FixedPasses'
    (`moved_or_refused`)."""

    def __init__(self, passes: FixedPasses) -> None:
        vars(self).update(vars(passes))  # the same passes, before their prefill: every field theirs
        self.state: OnDevice | None = None
        self.moved = False

    @torch.inference_mode()
    def one(self, token: int) -> Pass:
        if not self.moved:
            self.moved, self.state = True, moved_or_refused(self, Method.GREEDY, lambda: self.loaded(token))
        if self.state is None:
            return super().one(token)
        start = time.perf_counter()
        self.step.run(self.span())
        following = self.state.run().item()  # the step's one read-back
        self.length += 1
        return Pass([following], None, time.perf_counter() - start)

    def loaded(self, token: int) -> OnDevice:
        state = kept_with(self.step, Method.GREEDY, lambda: PlainOnDevice(self.step))
        state.load(token, self.length)
        return state


def plain_passes(passes, request: DecodeRequest, recorded: bool):
    """Plain decoding's passes: a timed lane's (not `recorded`) greedy decoding in the fixed-shape step keeps c and
    L on the device (PlainPassesOnDevice); any other keeps `passes`."""
    if recorded or not request.sampling.is_greedy or type(passes) is not FixedPasses:
        return passes
    return PlainPassesOnDevice(passes)


def kept_with(step: FixedStep, key, make: Callable[[], OnDevice]) -> OnDevice:
    """The step's working state under `key` (a method's settings), made on its first use and kept with the step."""
    if key not in step.working:
        step.working[key] = make()
    return step.working[key]


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


def lookup_state(decoder: GuessingDecoder) -> OnDevice:
    passes, config = decoder.passes, decoder.proposer.config
    state = kept_with(passes.step, config, lambda: PromptLookupOnDevice(passes.step, config))
    state.load(decoder.sequence, passes.length)
    return state


def eagle_held(decoder: GuessingDecoder) -> OnDevice:
    passes, draft = decoder.passes, decoder.proposer.draft
    key = (draft.model, draft.tokens, draft.confidence)
    return kept_with(passes.step, key, lambda: EagleOnDevice(passes.step, draft, decoder.model))


def eagle_recorded(decoder: GuessingDecoder) -> OnDevice:
    """EAGLE's state with its `settle` recorded at the prefill, on a stand-in (an empty layer cache, c to feed):
    the first step's host drafting then fills the layer's cache, and no timed step holds the recording."""
    state = eagle_held(decoder)
    if state.run is None:
        fresh = torch.zeros(1, state.fresh.shape[1], dtype=state.fresh.dtype)
        state.load(None, 0, fresh, decoder.sequence[-1:], decoder.passes.length)
    return state


def eagle_state(decoder: GuessingDecoder) -> OnDevice:
    state, proposer = eagle_held(decoder), decoder.proposer
    after = decoder.sequence[proposer.cached + 1 :]
    state.load(proposer.cache, proposer.cached, decoder.fresh, after, decoder.passes.length)
    return state


def medusa_state(decoder: GuessingDecoder) -> OnDevice:
    passes, medusa = decoder.passes, decoder.proposer.medusa
    key = (medusa.heads, medusa.tree)
    state = kept_with(passes.step, key, lambda: MedusaOnDevice(passes.step, medusa, decoder.model))
    state.load(decoder.sequence[-1], decoder.fresh[-1], passes.length)
    return state


@dataclass(frozen=True)
class Resident:
    """A method whose timed steps may run on the device: whether a decoding can (`takes` its request and planner),
    when its state is ready to move (`ready`: the host steps run until then), how it moves (`state`), and, for a
    method whose state moves after some host steps, how its device function is recorded at the prefill
    (`recorded`)."""

    takes: Callable[[DecodeRequest, object], bool]
    ready: Callable[[GuessingDecoder], bool]
    state: Callable[[GuessingDecoder], OnDevice]
    recorded: Callable[[GuessingDecoder], OnDevice] | None = None


RESIDENT = {
    Method.LOOKAHEAD: Resident(
        # a window of two levels or more (N >= 3), a pool (G >= 1), the paper's full plan (what a fixed shape runs)
        lambda request, planner: (
            request.lookahead.ngram >= 3
            and request.lookahead.guesses >= 1
            and (planner is None or isinstance(planner, FullPlanner))
        ),
        lambda decoder: decoder.proposer.window.is_full,
        lookahead_state,
        lookahead_recorded,
    ),
    Method.PROMPT_LOOKUP: Resident(lambda request, planner: True, lambda decoder: True, lookup_state),
    Method.MEDUSA: Resident(lambda request, planner: True, lambda decoder: True, medusa_state),
    # after the first step, whose host drafting feeds the layer the prompt's features (more rows than a step's)
    Method.EAGLE: Resident(
        lambda request, planner: True, lambda decoder: decoder.step_index >= 1, eagle_state, eagle_recorded
    ),
}


REFUSED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> {method: why its device step failed}
REFUSED_LOCK = threading.Lock()


def refused(model) -> dict[Method, str]:
    """The methods whose device step failed on `model` (their steps keep their state on the host), and why."""
    with REFUSED_LOCK:
        return dict(REFUSED.get(model, {}))


class OnDeviceDecoder(GuessingDecoder):
    """A greedy guessing decoder in the fixed-shape step for a timed lane (tallies only), whose steps run on the
    device once its method's state is `ready` (lookahead: when the window is full, its `settle` recorded at the
    prefill; the steps before run on the host, as GuessingDecoder runs them): each is the pass over its span, one run
    of the state's `settle` and one read-back. A step's tally counts what the host step's would (the rows it would
    feed, the tokens verified, those accepted); its pass seconds are the whole device step's."""

    def steps(self) -> Iterator[StepTally]:
        resident = RESIDENT[self.method]
        try:
            yield self.prefill()
            if self.stop is None and resident.recorded is not None:
                self.tried(resident.recorded)
            while self.stop is None and not resident.ready(self):
                yield self.step()
            state = self.tried(resident.state) if self.stop is None else None
            while self.stop is None:
                yield self.device_step(state) if state is not None else self.step()
        finally:
            self.passes.release()

    def tried(self, moving: Callable[[GuessingDecoder], OnDevice]) -> OnDevice | None:
        return moved_or_refused(self.passes, self.method, lambda: moving(self))

    @torch.inference_mode()
    def device_step(self, state: OnDevice) -> StepTally:
        """The pass over the filled length's span, then `settle`; L follows on the host, for the next span."""
        start = time.perf_counter()
        self.step_index += 1
        passes = self.passes
        passes.step.run(passes.span())
        accepted, offered, *block = state.run().tolist()  # the step's one read-back
        seconds = time.perf_counter() - start
        passes.length += 1 + accepted
        committed, self.stop = commit(block[: 1 + accepted], self.max_new_tokens - self.produced, self.eos_ids)
        self.sequence = self.sequence + committed
        fed, verified_tokens = state.counted(offered)
        return StepTally(
            step=self.step_index,
            kind=StepKind.DECODE,
            tokens_fed=fed,
            committed=committed,
            stop=self.stop,
            forward_seconds=seconds,
            step_seconds=time.perf_counter() - start,
            verified_tokens=verified_tokens,
            accepted_tokens=accepted,
            drafted_inside=state.drafts_inside,
        )


def moved_or_refused(passes: FixedPasses, method: Method, moving: Callable[[], OnDevice]) -> OnDevice | None:
    """`moving()`'s state (recorded, or moved to the device); None, the steps going on on the host, when the
    method's device step failed on this model, now (kept in REFUSED, with the cache's L as it was) or before."""
    if method in REFUSED.get(passes.model, {}):
        return None
    length = passes.length
    try:
        return moving()
    except Exception as error:  # noqa: BLE001 - a capture that fails sends the steps back to the host, and says why
        with REFUSED_LOCK:
            REFUSED.setdefault(passes.model, {})[method] = one_line(error)
        passes.step.working.clear()
        with torch.inference_mode():
            passes.step.length.fill_(length)
        return None


def takes(request: DecodeRequest, passes, planner, recorded: bool) -> bool:
    """Whether a decoding can run its steps on the device: a timed lane's (not `recorded`), greedy, in the
    fixed-shape step, of a method RESIDENT lists, which `takes` its request and planner."""
    resident = RESIDENT.get(request.method)
    return (
        resident is not None
        and not recorded
        and request.sampling.is_greedy
        and isinstance(passes, FixedPasses)
        and resident.takes(request, planner)
    )
