"""Verification and the commit rules: the one place that decides which guessed tokens are kept.

Every proposer's candidates go through `verify`, and the step record holds its outcome, so the
panels show this rule's decisions instead of re-deriving them. Greedy: a candidate's token k is
accepted while it equals the model's prediction for its position (the guaranteed token for
k = 0, the argmax of token k-1's row after that). The longest match wins, the first on ties;
m accepted tokens give a block of m + 1, the last being the bonus token.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from .records import CandidateRecord, Reason, Source, StopReason, TokenSource, Verdict, VerificationRecord


class Path(Protocol):
    """A candidate as the verifier reads it: tokens, their rows in the step's input, where it came from."""

    tokens: Sequence[int]
    rows: Sequence[int]
    source: Source
    reason: Reason
    lane: int


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
        CandidateRecord(c.source, c.reason, c.lane, list(c.tokens), list(c.rows), e, m, verdict(i, m, winner, best))
        for i, (c, e, m) in enumerate(zip(candidates, expected, matched, strict=True))
    ]
    return VerificationRecord(guaranteed, outcomes, winner, best, block[-1] if best else None, block)


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


def commit_sources(length: int, accepted: int) -> list[TokenSource]:
    """How each committed token was produced: the guaranteed next token, accepted tokens, the bonus."""
    if accepted == 0:
        return [TokenSource.GUARANTEED][:length]
    middle = [TokenSource.ACCEPTED] * (accepted - 1)
    return [TokenSource.GUARANTEED, *middle, TokenSource.BONUS][:length]
