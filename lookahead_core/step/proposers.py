"""Proposers: where a step's candidate token paths come from, behind one small interface.

A proposer `propose`s, for the step at hand, branches of input rows (each row extends a row of
its branch, or c) and the candidate paths among them that verification will check. After the
forward pass it `observe`s the outcome (the model's argmax at its rows, the verdict, what was
committed) and learns from it; only when the step is recorded is it asked to `report` what it did
for the record, so a timed step builds and copies nothing for display. The shape follows
transformers' candidate generators (`get_candidates`, `update_candidate_strategy`). Each method's
proposer is in its own module of lookahead_core/methods/: the Jacobi window with its n-gram pool
(lookahead.py), prompt lookup, the draft model, EAGLE, Medusa and suffix decoding plug in the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from ..records import (
    Branch,
    GuessReason,
    GuessSource,
    MethodReport,
    PoolRecord,
    WindowRecord,
)
from ..tree.layout import CURRENT, StepLayout
from .verify import StepVerdict


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
    method_report: MethodReport | None = None  # what the method did before the pass (records.reports)


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
