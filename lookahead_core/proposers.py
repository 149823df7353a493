"""Proposers: where a step's candidate token paths come from, behind one small interface.

A proposer `propose`s, for the step at hand, branches of input rows (each row extends a row of
its branch, or c) and the candidate paths among them that verification will check. After the
forward pass it `observe`s the outcome (the model's argmax at its rows, the verdict, what was
committed) and learns from it; only when the step is recorded is it asked to `report` what it did
for the record, so a timed step builds and copies nothing for display. The shape follows
transformers' candidate generators (`get_candidates`, `update_candidate_strategy`). The Jacobi
window with its n-gram pool is lookahead decoding's proposer; prompt lookup (lookup.py) and a
draft model (draft.py) plug in the same way, with no window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from .config import LookaheadConfig
from .layout import CURRENT, StepLayout, window_geometry
from .pool import Guess, NGramPool, PoolEntry, chosen_guesses
from .records import (
    Branch,
    DraftRecord,
    GuessReason,
    GuessSource,
    HeadsRecord,
    NGram,
    PoolRecord,
    SuffixRecord,
    WindowRecord,
)
from .records import PoolEntry as PoolRecordEntry
from .verify import StepVerdict
from .window import JacobiWindow


@dataclass(frozen=True)
class Candidate:
    """A token path to verify: its tokens, its rows in its branch, where it came from and why.

    A draft model's chain also carries q, the draft's probability of each token, and, when it
    sampled them, `distributions` (one row of q over the vocabulary per token: speculative
    sampling needs all of it). Prompt lookup's carries where it was copied from.
    """

    tokens: tuple[int, ...]
    rows: tuple[int, ...]
    source: GuessSource
    reason: GuessReason
    lane: int  # the guess number, or the window column whose trajectory it is
    draft_probabilities: tuple[float, ...] = ()
    distributions: object = field(default=None, compare=False)  # torch (tokens x vocab), sampled drafts only
    found_at: int | None = None
    key_length: int = 0


@dataclass(frozen=True)
class ProposedBranch:
    """Rows to feed, in local numbers: `parents[i]` is the row that row i extends (CURRENT for c).

    `places[i]` is (lane, index): (level, column) in the window, (guess number, token) in a guess.
    """

    kind: Branch
    tokens: tuple[int, ...]
    parents: tuple[int, ...]
    places: tuple[tuple[int, int], ...]
    candidates: tuple[Candidate, ...]

    def cut(self, length: int) -> ProposedBranch:
        """The first `length` rows of a chain branch, its candidates cut to match."""
        candidates = tuple(cut_candidate(c, length) for c in self.candidates)
        return ProposedBranch(self.kind, self.tokens[:length], self.parents[:length], self.places[:length], candidates)


def cut_candidate(candidate: Candidate, length: int) -> Candidate:
    q = candidate.distributions
    return replace(
        candidate,
        tokens=candidate.tokens[:length],
        rows=candidate.rows[:length],
        draft_probabilities=candidate.draft_probabilities[:length],
        distributions=None if q is None else q[:length],
    )


@dataclass
class Proposal:
    """What a proposer offers this step: a window (rows whose own chains are candidates) and guesses.

    The input lays the window out before the guesses; verification checks the guesses first, so
    a guess wins a tie with a window trajectory.
    """

    window: ProposedBranch | None
    guesses: list[ProposedBranch] = field(default_factory=list)
    draft_seconds: float = 0.0  # what a draft model's own passes took to propose (a timed lane counts it apart)


@dataclass
class StepInput:
    """A step's input as one token tree: row 0 is c, then the window (if fed), then the guesses.

    `candidates` are in verification order (guesses, then the window's trajectories), their rows
    numbered in this tree; `window_rows` are the global rows of the window branch.
    """

    tokens: list[int]
    layout: StepLayout
    places: list[tuple[Branch, int, int]]
    window_rows: range
    candidates: list[Candidate]


@dataclass
class StepContext:
    """What a proposer may read before a step: the committed sequence (prompt first) and the step number.

    `fresh_hidden` (m x d) holds the last hidden states of the m committed positions the last pass ran
    (the prompt, after the prefill; c's row and the accepted rows, after a step): the positions
    len(sequence) - 1 - m .. len(sequence) - 2, the last of them the row whose prediction is c (Medusa's
    heads read it; an EAGLE draft reads them all). None unless the decoder was asked to keep hidden states.
    """

    sequence: list[int]
    step: int
    fresh_hidden: object = None  # torch.Tensor | None

    @property
    def hidden(self):
        """The last hidden state (d,) of the row whose prediction is c (None without hidden states)."""
        return None if self.fresh_hidden is None else self.fresh_hidden[-1]


@dataclass(frozen=True)
class Outcome:
    """What a step decided, for proposers and planners to learn from: the committed sequence after it, the step,
    the candidates verified (in verification order) and the verdict over them.

    `window_argmax` is the argmax of c's row followed by that of each window row fed, in the
    branch's local order (empty when the window was not fed).
    """

    sequence: list[int]
    step: int
    window_fed: bool
    window_argmax: list[int]
    candidates: Sequence[Candidate]
    verdict: StepVerdict

    def judged(self) -> list[tuple[Candidate, int]]:
        """Each verified candidate with how many of its leading tokens matched."""
        return list(zip(self.candidates, self.verdict.matched, strict=True))


@dataclass
class ProposerReport:
    """What a proposer did in a step, for the step's record."""

    window: WindowRecord | None = None
    pool: PoolRecord | None = None
    draft: DraftRecord | None = None
    heads: HeadsRecord | None = None
    suffix: SuffixRecord | None = None


class Proposer(Protocol):
    """`propose` the step's branches; `observe` the step's outcome and learn from it; `report`, asked after
    `observe` and only when the step is recorded, what it did in the step, for the record."""

    def propose(self, context: StepContext) -> Proposal: ...

    def observe(self, outcome: Outcome) -> None: ...

    def report(self, outcome: Outcome) -> ProposerReport: ...


def chain_branch(candidate: Candidate, branch: Branch = Branch.GUESS) -> ProposedBranch:
    """`candidate` fed as one chain after c and verified as one candidate: its token k at row k of the branch
    (`candidate.rows` must be 0, 1, ...), its parent the token before (c for the first), its place (lane, k).
    The one builder of a chain: a pool guess's, a prompt-lookup match's, a draft's."""
    size = len(candidate.tokens)
    parents = (CURRENT, *range(size - 1)) if size else ()
    places = tuple((candidate.lane, k) for k in range(size))
    return ProposedBranch(branch, candidate.tokens, parents, places, (candidate,))


def guess_branch(guess: Guess, lane: int) -> ProposedBranch:
    """A pool guess as a chain after c, verified as one candidate."""
    tokens = tuple(guess.tokens)
    return chain_branch(Candidate(tokens, tuple(range(len(tokens))), guess.source, guess.reason, lane))


def window_branch(window: JacobiWindow) -> ProposedBranch:
    """The window's rows (all but c), with each column's Jacobi trajectory as a candidate."""
    geometry = window_geometry(len(window.levels), window.width)
    tokens = tuple(window.levels[level][column] for level, column in geometry.places)
    candidates = tuple(
        Candidate(tuple(tokens[r] for r in rows), rows, GuessSource.TRAJECTORY, GuessReason.JACOBI_TRAJECTORY, column)
        for column, rows in enumerate(geometry.trajectories)
        if rows
    )
    return ProposedBranch(Branch.WINDOW, tokens, geometry.parents, geometry.places, candidates)


def fresh_ngrams(harvested, levels, previous, sequence, pooled_upto, ngram):
    """This step's n-grams for the pool, as (key, continuation, preceding token, source).

    The window's harvested columns (preceded by the level-0 token left of them, or by the token
    before c), then every n-gram of the committed output that ends after `pooled_upto`.
    """
    for j, column in enumerate(harvested):
        yield column[0], column[1:], levels[0][j - 1] if j else previous, GuessSource.WINDOW
    for start in range(max(pooled_upto - ngram + 1, 0), len(sequence) - ngram + 1):
        yield (
            sequence[start],
            sequence[start + 1 : start + ngram],
            sequence[start - 1] if start else None,
            GuessSource.OUTPUT,
        )


@dataclass(frozen=True)
class BeforeStep:
    """What the proposer saw when it proposed, held by reference, never copied (the window makes new lists
    when it changes, the pool's entries come as a new list): the window's levels and origins, the pool's
    entries under c (oldest first) and size, the token before c, and the guesses offered, lane by lane."""

    levels: list[list[int]]
    origins: list[int]
    warming_up: bool
    entries: list[PoolEntry]
    size: int
    previous: int
    offered: list[Guess]


@dataclass(frozen=True)
class AfterStep:
    """What observing a step did: the window's new top level (empty when not fed), the n-grams it harvested, and
    the pool's insertions as (key, continuation, source) with what each evicted (None for none)."""

    update: list[int]
    harvested: list[list[int]]
    inserted: list[tuple[int, list[int], GuessSource, PoolEntry | None]]


class JacobiProposer:
    """Lookahead's proposer: the 2D Jacobi window and the n-gram pool it feeds.

    It offers the window (whose column trajectories are free candidates) and up to G guesses
    from the pool keyed by c. On observing, it applies the Jacobi update, harvests the columns
    and the committed output into the pool, and re-anchors the window on the new c.
    """

    def __init__(self, config: LookaheadConfig, sequence: list[int], prompt_ids: list[int], seed: int = 0) -> None:
        self.config = config
        self.pool = NGramPool(config.ngram, config.guesses)
        self.pool.insert_sequence(sequence, GuessSource.PROMPT)
        self.pooled_upto = len(sequence)
        self.window = JacobiWindow.initial(sequence[-1], prompt_ids, config.window, config.ngram, seed)

    def propose(self, context: StepContext) -> Proposal:
        current, previous = context.sequence[-1], context.sequence[-2]
        entries = self.pool.entries(current)
        offered = chosen_guesses(entries, previous, self.config.guesses)
        window = self.window
        self.before = BeforeStep(
            window.levels, window.origins, not window.is_full, entries, self.pool.size, previous, offered
        )
        return Proposal(window_branch(window), [guess_branch(g, i) for i, g in enumerate(offered)])

    def observe(self, outcome: Outcome) -> None:
        """The Jacobi update (when the window was fed) or a re-anchoring; the fresh n-grams into the pool."""
        before = self.before
        if outcome.window_fed:
            geometry = window_geometry(len(before.levels), len(before.levels[0]))
            update = [outcome.window_argmax[row + 1] for row in geometry.rows[-1]]
            harvested = self.window.harvest(update)
            self.window.advance(update, outcome.sequence[-1], outcome.step)
        else:
            update, harvested = [], []
            self.window.reanchor(outcome.sequence[-1])
        inserted = self.update_pool(harvested, before.levels, before.previous, outcome.sequence)
        self.after = AfterStep(update, harvested, inserted)

    def report(self, outcome: Outcome) -> ProposerReport:
        """The window as it stood before the step and what the step did to it; the pool under c, and what changed."""
        before, after = self.before, self.after
        window = WindowRecord(
            fed=outcome.window_fed,
            warming_up=before.warming_up,
            levels=[list(level) for level in before.levels],
            origins=list(before.origins),
            update=after.update,
            harvested=after.harvested,
        )
        return ProposerReport(window, self.pool_record(outcome))

    def pool_record(self, outcome: Outcome) -> PoolRecord:
        """The entries under the key as they stood before this step, each marked with the guess it became."""
        verified = {c.lane for c in outcome.candidates if c.source != GuessSource.TRAJECTORY}
        before = self.before
        lanes = {tuple(g.tokens): lane for lane, g in enumerate(before.offered) if lane in verified}
        inserted = self.after.inserted
        return PoolRecord(
            key=before.levels[0][0],
            previous=before.previous,
            entries=[
                PoolRecordEntry(continuation=list(e.continuation), source=e.source, guess=lanes.get(e.continuation))
                for e in before.entries
            ],
            added=[
                NGram(key=key, continuation=list(continuation), source=source)
                for key, continuation, source, _ in inserted
            ],
            evicted=[
                NGram(key=key, continuation=list(gone.continuation), source=gone.source)
                for key, _, _, gone in inserted
                if gone is not None
            ],
            size=self.pool.size,
            size_before=before.size,
        )

    def update_pool(self, harvested, levels, previous: int, sequence: list[int]) -> list:
        """Insert this step's fresh n-grams (`previous` precedes c); return each as (key, continuation, source,
        the entry it evicted or None)."""
        inserted = []
        for key, continuation, before, source in fresh_ngrams(
            harvested, levels, previous, sequence, self.pooled_upto, self.config.ngram
        ):
            inserted.append((key, continuation, source, self.pool.insert(key, continuation, before, source)))
        self.pooled_upto = len(sequence)
        return inserted
