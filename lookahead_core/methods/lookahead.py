"""Lookahead decoding's proposer (Fu et al., ICML 2024): the 2D Jacobi window (window.py) and the n-gram pool
(pool.py) it feeds, behind the proposer interface (lookahead_core.step.proposers); the window's columns'
trajectories and the pool's guesses as the branches a step lays out; and lookahead's spec (`SPEC`), its device form
in lookahead_on_device.py.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..config import LookaheadConfig
from ..method_spec import Guessing, MakeProposer, MethodSpec, Swept, same_runtime
from ..records import (
    METHODS,
    Branch,
    GuessReason,
    GuessSource,
    LookaheadSettings,
    Method,
    NGram,
    PoolRecord,
    WindowRecord,
)
from ..records import PoolEntry as PoolRecordEntry
from ..request import DecodeRequest
from ..step.proposers import Candidate, Outcome, Proposal, ProposedBranch, ProposerReport, StepContext, chain_branch
from ..tree.layout import window_geometry
from . import lookahead_on_device
from .pool import Guess, NGramPool, PoolEntry, chosen_guesses
from .window import JacobiWindow


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


# ----------------------------------------------------------------------------------------------
# Its spec


def lookahead_reach(config: LookaheadConfig) -> int:
    """How many positions past the current token a lookahead step's rows can reach.

    The window's deepest row sits W + N - 3 past it (during warm-up and after), a guess's N - 1.
    """
    return max(config.window + config.ngram - 3, config.ngram - 1)


def lookahead_settings(request: DecodeRequest, runtime) -> LookaheadSettings:
    """Lookahead's settings as records hold them: the auto choice with its figures, or W, N, G."""
    if runtime.auto is not None:
        return runtime.auto.settings()
    config = request.lookahead
    return LookaheadSettings(window=config.window, ngram=config.ngram, guesses=config.guesses)


def jacobi(model, prompt_ids: list[int], request: DecodeRequest, runtime) -> MakeProposer:
    """Lookahead: the Jacobi window and the n-gram pool, seeded with the prompt's n-grams."""
    return lambda sequence: JacobiProposer(request.lookahead, sequence, prompt_ids)


SPEC = MethodSpec(
    entry=METHODS[Method.LOOKAHEAD],
    guessing=Guessing(
        jacobi,
        lambda request, runtime: lookahead_reach(request.lookahead),
        lookahead_settings,
        lambda request, runtime: request.lookahead.tokens_per_step,
    ),
    resident=lookahead_on_device.RESIDENT,
    swept=Swept(
        lambda g: [{"window": w, "ngram": n, "guesses": w} for w in g.windows for n in g.ngrams],
        lambda r, s: replace(
            r, method=Method.LOOKAHEAD, lookahead=LookaheadConfig(s["window"], s["ngram"], s["guesses"])
        ),
        same_runtime,
    ),
)
