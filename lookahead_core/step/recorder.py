"""The recorder: a step's facts (what was fed, the verdict, what was committed) turned into what the step yields.

A decoding settles once whether it keeps records. The stepper's does: `step_record` builds the StepRecord (the
rows and their mask, the plan, the proposer's report, the verification with each candidate's verdict, how each
committed token was produced). A timed lane's does not: `step_tally` counts the step (StepTally) and builds no
record and copies nothing. Either way the facts are the same, so a step decides the same whether it is recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..records import (
    CandidateRecord,
    InputRow,
    Method,
    PlanRecord,
    SlidingRecord,
    StepKind,
    StepRecord,
    StepTally,
    StopReason,
    TokenSource,
    Verdict,
    VerificationRecord,
)
from ..tree.attention import AttentionPlan, sliding_view
from ..tree.layout import StepLayout
from .planning import Plan
from .proposers import ProposerReport, StepInput
from .verify import Path, StepVerdict


@dataclass(frozen=True, kw_only=True)
class StepFacts:
    """What one forward pass did, as the decoder knows it when the step ends, held by reference.

    Every step: its number, method, kind, c's position (0 for the prefill), the rows fed, what it committed and
    whether decoding stops, its pass's seconds and its own (the step's work up to what it learned; building a
    record is not counted), whether it sampled, and a draft's seconds. A guessing step also: its input `fed`, its
    `plan`, the `verdict`, the pass's `argmax`, the model's `attention` plan, and, when recorded, the proposer's
    `report`.
    """

    step: int
    method: Method
    kind: StepKind
    position: int
    tokens_fed: int
    committed: list[int]
    stop: StopReason | None
    forward_seconds: float
    step_seconds: float
    sampled: bool
    draft_seconds: float = 0.0
    fed: StepInput | None = None
    plan: Plan | None = None
    verdict: StepVerdict | None = None
    argmax: Sequence[int] = ()
    attention: AttentionPlan | None = None
    report: ProposerReport | None = None


def step_tally(facts: StepFacts) -> StepTally:
    """The step as a timed lane counts it."""
    verified = sum(len(c.tokens) for c in facts.fed.candidates) if facts.fed is not None else 0
    return StepTally(
        step=facts.step,
        kind=facts.kind,
        tokens_fed=facts.tokens_fed,
        committed=facts.committed,
        stop=facts.stop,
        forward_seconds=facts.forward_seconds,
        step_seconds=facts.step_seconds,
        draft_seconds=facts.draft_seconds,
        verified_tokens=verified,
        accepted_tokens=facts.verdict.accepted if facts.verdict is not None else 0,
    )


def step_record(facts: StepFacts) -> StepRecord:
    """The step's record: a prefill's or a plain step's (what it fed and committed), a guessing step's in full."""
    if facts.fed is None:
        return StepRecord(
            step=facts.step,
            method=facts.method,
            kind=facts.kind,
            position=facts.position,
            tokens_fed=facts.tokens_fed,
            committed=facts.committed,
            sources=[TokenSource.SAMPLED if facts.sampled else TokenSource.GUARANTEED],
            stop=facts.stop,
            forward_seconds=facts.forward_seconds,
            step_seconds=facts.step_seconds,
        )
    fed, verdict, report = facts.fed, facts.verdict, facts.report
    return StepRecord(
        step=facts.step,
        method=facts.method,
        kind=facts.kind,
        position=facts.position,
        tokens_fed=facts.tokens_fed,
        committed=facts.committed,
        sources=commit_sources(len(facts.committed), verdict),
        stop=facts.stop,
        forward_seconds=facts.forward_seconds,
        step_seconds=facts.step_seconds,
        rows=input_rows(fed, facts.position),
        plan=plan_record(facts.plan),
        window=report.window,
        pool=report.pool,
        verification=verification_record(fed.candidates, verdict, facts.argmax),
        sliding=sliding_record(facts.attention, fed.layout, facts.position),
        method_report=report.method_report,
    )


def input_rows(fed: StepInput, position: int) -> list[InputRow]:
    """The rows as the record holds them: token, position id, parent, place, and the rows each sees."""
    return [
        InputRow(
            token=token,
            position=position + depth,
            parent=parent,
            branch=branch,
            lane=lane,
            index=index,
            sees=list(sees),
        )
        for token, depth, parent, (branch, lane, index), sees in zip(
            fed.tokens, fed.layout.depths, fed.layout.parents, fed.places, fed.layout.seen, strict=True
        )
    ]


def sliding_record(plan: AttentionPlan, layout: StepLayout, position: int) -> SlidingRecord | None:
    """What the rows saw on the sliding-window layers (None for a model without any)."""
    view = sliding_view(plan, layout.seen, layout.depths, position)
    if view is None:
        return None
    prefix_from, sees = zip(*view, strict=True)
    return SlidingRecord(window=plan.window, layers=plan.sliding_layers, prefix_from=list(prefix_from), sees=list(sees))


def plan_record(plan: Plan) -> PlanRecord:
    """What the step fed besides c, and why, as the record holds it."""
    return PlanRecord(
        reason=plan.reason,
        window_fed=plan.feed_window,
        guesses_offered=plan.offered,
        guesses_verified=plan.guesses,
        guess_length=plan.length,
        expected_tokens=plan.expected,
        relative_cost=plan.cost,
        idle_steps=plan.idle_steps,
    )


def judged(index: int, matched: int, winner: int | None, best: int) -> Verdict:
    """A candidate's verdict: won, as long as the winner but later, shorter, or no match at all."""
    if index == winner:
        return Verdict.WON
    if matched == 0:
        return Verdict.NO_MATCH
    return Verdict.TIED_LATER if matched == best else Verdict.SHORTER


def expected_tokens(candidate: Path, verdict: StepVerdict, matched: int, argmax: Sequence[int]) -> list[int]:
    """The model's prediction for each token's position. Greedy: the guaranteed token, then the argmax of each
    token's row before the last. Sampled: the committed tokens, up to the candidate's first mismatch."""
    if verdict.positions:
        return list(verdict.block[: min(matched + 1, len(candidate.tokens))])
    return [argmax[0], *(argmax[r] for r in candidate.rows[:-1])]


def candidate_record(candidate: Path, expected: list[int], matched: int, verdict: Verdict) -> CandidateRecord:
    """A candidate as the record keeps it: what it offered, what the model expected, and the verdict."""
    return CandidateRecord(
        source=candidate.source,
        reason=candidate.reason,
        lane=candidate.lane,
        tokens=list(candidate.tokens),
        rows=list(candidate.rows),
        expected=expected,
        matched=matched,
        verdict=verdict,
        draft_probabilities=list(candidate.draft_probabilities),
        found_at=candidate.found_at,
        key_length=candidate.key_length,
    )


def verification_record(candidates: Sequence[Path], verdict: StepVerdict, argmax: Sequence[int]) -> VerificationRecord:
    """The verdict over `candidates` (in verification order) as the step's record holds it; `argmax` is the pass's
    (what greedy verification compared with)."""
    records = [
        candidate_record(c, expected_tokens(c, verdict, m, argmax), m, judged(i, m, verdict.winner, verdict.accepted))
        for i, (c, m) in enumerate(zip(candidates, verdict.matched, strict=True))
    ]
    return VerificationRecord(
        guaranteed=verdict.block[0],
        candidates=records,
        winner=verdict.winner,
        accepted=verdict.accepted,
        bonus=verdict.bonus,
        block=list(verdict.block),
        positions=list(verdict.positions),
    )


def commit_sources(length: int, verdict: StepVerdict) -> list[TokenSource]:
    """How each of the `length` committed tokens was produced.

    Greedy: the guaranteed next token, accepted tokens, the bonus. Sampling: the accepted
    candidate tokens, then the bonus (a candidate accepted to its end) or a token drawn from P.
    """
    accepted = verdict.accepted
    if verdict.positions:
        last = TokenSource.BONUS if verdict.bonus is not None else TokenSource.SAMPLED
        return ([TokenSource.ACCEPTED] * accepted + [last])[:length]
    if accepted == 0:
        return [TokenSource.GUARANTEED][:length]
    middle = [TokenSource.ACCEPTED] * (accepted - 1)
    return [TokenSource.GUARANTEED, *middle, TokenSource.BONUS][:length]
