"""Verification and the commit rules: the one place that decides which guessed tokens are kept.

Every proposer's candidates go through `verify` (greedy) or `verify_sampled`, and the step
record holds the outcome, so the panels show this rule's decisions instead of re-deriving them.
Greedy: a candidate's token k (a pool guess, a prompt match, a draft token) is accepted while
it equals the model's prediction for its position (the guaranteed token for k = 0, the argmax
of token k-1's row after that). The longest match wins, the first on ties; m accepted tokens
give a block of m + 1, the last being the bonus token. Sampling (the paper's Algorithm 4, and
speculative sampling's rule for a draft model's tokens): see `verify_sampled`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import torch

from .records import (
    CandidateRecord,
    Draw,
    GuessReason,
    GuessSource,
    SampledPosition,
    StopReason,
    TokenSource,
    Verdict,
    VerificationRecord,
)
from .sampling import SamplingConfig, draw, probabilities, uniform


class Path(Protocol):
    """A candidate as the verifier reads it: tokens, their rows in the step's input, where it came from."""

    tokens: Sequence[int]
    rows: Sequence[int]
    source: GuessSource
    reason: GuessReason
    lane: int
    draft_probabilities: Sequence[float]  # a draft's q(token) per token (empty for deterministic guesses)
    distributions: torch.Tensor | None  # a sampled draft's q over the vocabulary, one row per token
    found_at: int | None
    key_length: int


def candidate_record(c: Path, expected: list[int], matched: int, judged: Verdict) -> CandidateRecord:
    """A candidate as the record keeps it: what it offered, what the model expected, and the verdict."""
    return CandidateRecord(
        source=c.source,
        reason=c.reason,
        lane=c.lane,
        tokens=list(c.tokens),
        rows=list(c.rows),
        expected=expected,
        matched=matched,
        verdict=judged,
        draft_probabilities=list(c.draft_probabilities),
        found_at=c.found_at,
        key_length=c.key_length,
    )


def matched_length(tokens: Sequence[int], expected: Sequence[int]) -> int:
    """How many leading tokens equal the model's predictions for their positions."""
    m = 0
    while m < len(tokens) and tokens[m] == expected[m]:
        m += 1
    return m


def verdict(index: int, matched: int, winner: int | None, best: int) -> Verdict:
    if index == winner:
        return Verdict.WON
    if matched == 0:
        return Verdict.NO_MATCH
    return Verdict.TIED_LATER if matched == best else Verdict.SHORTER


def verify(candidates: Sequence[Path], argmax: Sequence[int]) -> VerificationRecord:
    """Greedy verification of `candidates` (rows index `argmax`, row 0 being c) against one forward pass."""
    guaranteed = argmax[0]
    expected = [[guaranteed, *(argmax[r] for r in c.rows[:-1])] for c in candidates]
    matched = [matched_length(c.tokens, e) for c, e in zip(candidates, expected, strict=True)]
    best = max(matched, default=0)
    winner = matched.index(best) if best else None
    block = [guaranteed] + ([argmax[r] for r in candidates[winner].rows[:best]] if winner is not None else [])
    outcomes = [
        candidate_record(c, e, m, verdict(i, m, winner, best))
        for i, (c, e, m) in enumerate(zip(candidates, expected, matched, strict=True))
    ]
    return VerificationRecord(
        guaranteed=guaranteed,
        candidates=outcomes,
        winner=winner,
        accepted=best,
        bonus=block[-1] if best else None,
        block=block,
    )


@dataclass(frozen=True)
class Offer:
    """A token offered at a position: q is the draft's distribution there, None for a fixed guess."""

    token: int
    q: torch.Tensor | None


def offered_tokens(candidates: Sequence[Path], alive: list[int], offset: int) -> list[Offer]:
    """What the alive candidates offer at `offset`, in candidate order: each fixed token once, every draft token."""
    offers, fixed = [], set()
    for i in alive:
        c = candidates[i]
        if len(c.tokens) <= offset:
            continue
        q = None if c.distributions is None else c.distributions[offset]
        if q is None and c.tokens[offset] in fixed:
            continue
        if q is None:
            fixed.add(c.tokens[offset])
        offers.append(Offer(c.tokens[offset], q))
    return offers


def try_in_turn(probs: torch.Tensor, offered: list[Offer], generator: torch.Generator) -> tuple[list[Draw], int | None]:
    """Try each offer s in turn: accept with probability min(1, P(s)/q(s)), else take q out of P.

    A fixed guess is a proposal q = point mass at s: it is accepted with probability P(s), and a
    rejection sets P(s) = 0 and renormalises. A draft token drawn from q is accepted with
    probability min(1, P(s)/q(s)), and a rejection moves P to norm(max(0, P - q)). Either way this
    is speculative sampling, round by round (recursive rejection sampling): the committed token
    has exactly the distribution P. `probs` is changed in place.
    """
    draws = []
    for offer in offered:
        total = float(probs.sum())
        p = float(probs[offer.token]) / total
        q = None if offer.q is None else float(offer.q[offer.token])
        chance = p if q is None else min(1.0, p / q)
        u = uniform(generator, probs.device)
        accepted = u < chance  # chance is exactly 1 when s holds all that remains, and u < 1
        draws.append(
            Draw(token=offer.token, probability=p, chance=chance, uniform=u, accepted=accepted, draft_probability=q)
        )
        if accepted:
            return draws, offer.token
        if offer.q is None:
            probs[offer.token] = 0.0
        else:
            take_out(probs, offer.q, total)
    return draws, None


def take_out(probs: torch.Tensor, q: torch.Tensor, total: float) -> None:
    """P := max(0, P - q) (unnormalised), in place; left as it is where rounding would leave nothing."""
    residual = torch.clamp(probs / total - q.to(probs.device), min=0.0)
    if float(residual.sum()) > 0.0:
        probs.copy_(residual)


def verify_sampled(
    candidates: Sequence[Path], logits: torch.Tensor, sampling: SamplingConfig, generator: torch.Generator
) -> VerificationRecord:
    """Sampled verification of `candidates` against one pass's `logits` (rows x vocab, row 0 being c).

    Position by position, from P of the row before it (c's for offset 0, then the row of the
    accepted token in the first candidate still agreeing): try the offered tokens in turn; on an
    acceptance the agreeing candidates carry on; when all are rejected the token is drawn from
    what remains of P and guesses stop; when a candidate was accepted to its end, the bonus token
    is drawn from P of its last row.
    """
    alive, block, positions, row = list(range(len(candidates))), [], [], 0
    while True:
        offset = len(block)
        probs = probabilities(logits[row : row + 1], sampling)[0]
        offered = offered_tokens(candidates, alive, offset)
        draws, token = try_in_turn(probs, offered, generator)
        drawn = token is None
        token = draw(probs, generator) if drawn else token
        positions.append(SampledPosition(offset=offset, row=row, draws=draws, token=token, drawn=drawn))
        block.append(token)
        if drawn:
            break
        alive = [i for i in alive if len(candidates[i].tokens) > offset and candidates[i].tokens[offset] == token]
        row = candidates[alive[0]].rows[offset]
    accepted = len(block) - 1
    bonus = block[-1] if accepted and not positions[-1].draws else None
    return outcome_record(candidates, block, accepted, bonus, positions)


def outcome_record(
    candidates: Sequence[Path], block: list[int], accepted: int, bonus: int | None, positions: list[SampledPosition]
) -> VerificationRecord:
    """Each candidate's agreement with the block's accepted tokens, its verdict, and the winner (first longest)."""
    matched = [matched_length(c.tokens, block[:accepted] + [-1] * len(c.tokens)) for c in candidates]
    winner = matched.index(accepted) if accepted else None
    outcomes = [
        candidate_record(c, block[: min(m + 1, len(c.tokens))], m, verdict(i, m, winner, accepted))
        for i, (c, m) in enumerate(zip(candidates, matched, strict=True))
    ]
    return VerificationRecord(
        guaranteed=block[0],
        candidates=outcomes,
        winner=winner,
        accepted=accepted,
        bonus=bonus,
        block=block,
        positions=positions,
    )


def commit(block: list[int], remaining: int, eos_ids: frozenset[int]) -> tuple[list[int], StopReason | None]:
    """The tokens of `block` that may be committed, and why decoding stops after them (or None).

    Stop at the first token of any EOS id, even inside an accepted block; never exceed `remaining`.
    """
    committed = []
    for token in block[:remaining]:
        committed.append(token)
        if token in eos_ids:
            return committed, StopReason.EOS
    return committed, (StopReason.MAX_NEW_TOKENS if len(committed) == remaining else None)


def commit_sources(length: int, verification: VerificationRecord) -> list[TokenSource]:
    """How each committed token was produced.

    Greedy: the guaranteed next token, accepted tokens, the bonus. Sampling: the accepted
    candidate tokens, then the bonus (a candidate accepted to its end) or a token drawn from P.
    """
    accepted = verification.accepted
    if verification.positions:
        last = TokenSource.BONUS if verification.bonus is not None else TokenSource.SAMPLED
        return ([TokenSource.ACCEPTED] * accepted + [last])[:length]
    if accepted == 0:
        return [TokenSource.GUARANTEED][:length]
    middle = [TokenSource.ACCEPTED] * (accepted - 1)
    return [TokenSource.GUARANTEED, *middle, TokenSource.BONUS][:length]
