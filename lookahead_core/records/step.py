"""A step's records: one forward pass of the target (StepRecord) and what it holds: the rows fed and
their mask, the plan, the Jacobi window, the n-gram pool, verification (greedy and sampled), and the method's own
report of what it did before the pass (reports.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

from .codec import decode, expect, record
from .methods import METHODS
from .names import (
    Branch,
    GuessReason,
    GuessSource,
    Method,
    PlanReason,
    SchemaError,
    StepKind,
    StopReason,
    TokenSource,
    Verdict,
)
from .reports import DraftRecord, MethodReport

R = TypeVar("R")


@dataclass(kw_only=True)
class InputRow:
    """One token fed to the step's forward pass, where it sits, and what it may attend to.

    `lane` and `index` place it: (level, column) in the window, (guess number, token index) in
    a guess, (choice rank, head - 1) in Medusa's tree, (0, 0) for c. `sees` lists the rows of this
    step it attends to (its ancestors and itself); every row also sees the committed prefix. This is
    the mask the engine passed.
    """

    token: int
    position: int
    parent: int
    branch: Branch
    lane: int
    index: int
    sees: list[int]


@dataclass(kw_only=True)
class SlidingRecord:
    """The mask the engine passed to the model's sliding-window layers, where it differs from the rows' `sees`.

    On those `layers` (of the model's layers), a row at position t sees only keys at positions
    > t - `window`: of the committed prefix, positions `prefix_from[i]` onwards; of this step's
    rows, `sees[i]` (its ancestors and itself within the window). Full layers see what the rows say.
    """

    window: int
    layers: int
    prefix_from: list[int]
    sees: list[list[int]]


@dataclass(kw_only=True)
class PlanRecord:
    """What this step fed besides c, and why (figures only where a cost-aware planner weighed them)."""

    reason: PlanReason
    window_fed: bool
    guesses_offered: int
    guesses_verified: int
    guess_length: int  # tokens of each verified guess (N-1, or fewer when the plan cut them)
    expected_tokens: float | None = None
    relative_cost: float | None = None  # the planned step's measured cost, in 1-token steps
    idle_steps: int = 0  # steps the window had sat out before this one


@dataclass(kw_only=True)
class NGram:
    key: int
    continuation: list[int]
    source: GuessSource


@dataclass(kw_only=True)
class PoolEntry:
    """An entry under the current key before this step; `guess` is the guess it became, if picked."""

    continuation: list[int]
    source: GuessSource
    guess: int | None


@dataclass(kw_only=True)
class PoolRecord:
    """The n-gram pool at this step: the entries under the key, what was added and evicted, its size after."""

    key: int
    previous: int  # the token before c: the second token of a two-token key
    entries: list[PoolEntry]
    added: list[NGram]
    evicted: list[NGram]
    size: int
    size_before: int


@dataclass(kw_only=True)
class WindowRecord:
    """The Jacobi window before this step, where each level came from, and what the step did to it.

    `origins[l]` is the step whose Jacobi update produced level l (0: the initial fill from the
    prompt; level 0 column 0 is always c). `update` is this step's new top level (empty when the
    window was not fed), `harvested` the n-grams its columns gave the pool (empty in warm-up).
    """

    fed: bool
    warming_up: bool
    levels: list[list[int]]
    origins: list[int]
    update: list[int]
    harvested: list[list[int]]


@dataclass(kw_only=True)
class CandidateRecord:
    """One candidate token path and how verification judged it.

    `rows` are its rows in the step's input, `expected[k]` the model's prediction for the
    position of token k (the guaranteed token for k = 0, else the argmax of token k-1's row;
    sampling: the token committed there, up to its first mismatch only), `matched` how many
    leading tokens agreed with it. `lane` is its guess number, or the window
    column its trajectory ends atop.
    """

    source: GuessSource
    reason: GuessReason
    lane: int
    tokens: list[int]
    rows: list[int]
    expected: list[int]
    matched: int
    verdict: Verdict
    draft_probabilities: list[float] = field(default_factory=list)  # a draft's q(token) for each token
    found_at: int | None = None  # prompt lookup: the position in the sequence its tokens were copied from
    key_length: int = 0  # prompt lookup: how many trailing tokens matched there


@dataclass(kw_only=True)
class Draw:
    """Sampling: one candidate token tried at a position, accepted when `uniform` < `chance`.

    `probability` is P(token) renormalised after the rejections before it at this position, and
    `chance` the probability it was accepted with: P(token) for a fixed guess; for a draft
    model's token, whose `draft_probability` is q(token), min(1, P/q) (speculative sampling), the
    rejections before it taken out of P as max(0, P - q). It was accepted when `uniform` < `chance`.
    """

    token: int
    probability: float
    chance: float
    uniform: float
    accepted: bool
    draft_probability: float | None = None


@dataclass(kw_only=True)
class SampledPosition:
    """Sampling: one position of the verified block (offset 0 follows c), decided from row `row`'s P.

    The distinct candidate tokens offered there were tried in turn (`draws`); when all were
    rejected, or none was offered, `token` was drawn from what remained of P (`drawn` is True).
    """

    offset: int
    row: int
    draws: list[Draw]
    token: int
    drawn: bool


@dataclass(kw_only=True)
class VerificationRecord:
    """The outcome of verification: the candidates, the winner, the block it gives.

    Greedy: `block` is the guaranteed token followed by the winner's accepted tokens'
    predictions: m accepted tokens give m + 1, the last being the bonus token (None when nothing
    matched). Sampling: `guaranteed` is the first committed token (accepted or drawn), `positions`
    holds every draw, and `block` the accepted tokens plus the final draw.
    """

    guaranteed: int
    candidates: list[CandidateRecord]
    winner: int | None
    accepted: int
    bonus: int | None
    block: list[int]
    positions: list[SampledPosition] = field(default_factory=list)


@dataclass(kw_only=True)
class StepRecord:
    """One forward pass: what it fed, what it verified, what it committed, and how long it took.

    Greedy steps and the prefill carry no rows, plan, window, pool or verification.
    """

    step: int
    method: Method
    kind: StepKind
    position: int  # the current token's position (for the prefill: 0)
    tokens_fed: int
    committed: list[int]
    sources: list[TokenSource]
    stop: StopReason | None
    forward_seconds: float
    step_seconds: float
    rows: list[InputRow] = field(default_factory=list)
    plan: PlanRecord | None = None
    window: WindowRecord | None = None
    pool: PoolRecord | None = None
    verification: VerificationRecord | None = None
    sliding: SlidingRecord | None = None  # None: the model has no sliding-window layer
    # what the method did before the pass (reports.py), of the type its entry names (None: it reports nothing, as
    # greedy and lookahead); in JSON, tagged by this step's `method` (schema 15; before, `draft`, `heads`, `suffix`)
    method_report: MethodReport | None = None

    @classmethod
    def decoded(cls, value, where: str) -> StepRecord:
        """Read from JSON data (codec.decode): every field by its type, the method's report as its method's entry's
        report type."""
        value = expect(value, dict, where)
        report = value.get("method_report")
        step = record(cls)({k: v for k, v in value.items() if k != "method_report"}, where)
        if report is not None:
            kind = METHODS[step.method].report
            if kind is None:
                raise SchemaError(f"{where}.method_report: {step.method.value} reports nothing of its own")
            step.method_report = decode(kind, report, f"{where}.method_report")
        return step

    def report(self, kind: type[R]) -> R | None:
        """This step's method report if it is a `kind` (DraftRecord, HeadsRecord, SuffixRecord, ...), else None."""
        return self.method_report if isinstance(self.method_report, kind) else None

    @property
    def draft_seconds(self) -> float:
        """What a draft model's own passes took before this step's pass (0 without a draft)."""
        draft = self.report(DraftRecord)
        return draft.seconds if draft is not None else 0.0

    @property
    def drafted_inside(self) -> bool:
        """False: a recorded step's draft runs on the host, timed apart (StepTally's field of the same name)."""
        return False

    @property
    def verified_tokens(self) -> int:
        """The candidate tokens this step verified."""
        return sum(len(c.tokens) for c in self.verification.candidates) if self.verification is not None else 0

    @property
    def accepted_tokens(self) -> int:
        """The candidate tokens this step accepted."""
        return self.verification.accepted if self.verification is not None else 0

    def token_ids(self) -> set[int]:
        """Every token id this record mentions (what a trace's vocabulary must cover)."""
        ids = set(self.committed) | {row.token for row in self.rows}
        if self.window is not None:
            ids |= {t for level in self.window.levels for t in level} | set(self.window.update)
        if self.pool is not None:
            ids |= {self.pool.key, self.pool.previous}
            ids |= {t for e in self.pool.entries for t in e.continuation}
            ids |= {t for g in self.pool.added + self.pool.evicted for t in [g.key, *g.continuation]}
        if self.verification is not None:
            ids |= set(self.verification.block)
            ids |= {t for c in self.verification.candidates for t in c.tokens + c.expected}
        if self.method_report is not None:
            ids |= self.method_report.token_ids()
        return ids
