"""Verification and the commit rules: the one place that decides which guessed tokens are kept.

Every proposer's candidates go through `verify` (greedy) or `verify_sampled`, which return a StepVerdict: the
block of tokens it gives, how many were accepted, the winner and each candidate's agreement. That is all the
commit, the proposers and the planners read; the step's record is built from it elsewhere (recorder.py), only
when one is wanted. Greedy: a candidate's token k (a pool guess, a prompt match, a draft token) is accepted while
it equals the model's prediction for its position (the guaranteed token for k = 0, the argmax of token k-1's row
after that). The longest match wins, the first on ties; m accepted tokens give a block of m + 1, the last being
the bonus token. Sampling (the paper's Algorithm 4, and speculative sampling's rule for a draft model's tokens):
see `verify_sampled`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import torch

from ..records import Draw, GuessReason, GuessSource, SampledPosition, StopReason
from ..sampling import SamplingConfig, draw, probabilities, uniform


@dataclass(frozen=True)
class StepVerdict:
    """What verification decided. `block`: the tokens it gives, the guaranteed (greedy) or first committed
    (sampled) token first, then one per accepted token; m = `accepted` candidate tokens give m + 1. `winner`: the
    first candidate accepted that far (None when m = 0). `matched[i]`: how many leading tokens of candidate i
    agreed with the model (greedy: its predictions; sampled: the block). `positions`: every draw of sampled
    verification, position by position (empty when greedy)."""

    block: tuple[int, ...]
    accepted: int
    winner: int | None
    matched: tuple[int, ...]
    positions: tuple[SampledPosition, ...] = ()

    @property
    def bonus(self) -> int | None:
        """The block's last token when it follows a candidate accepted to its end (greedy: whenever m > 0, the
        prediction after the last accepted token; sampled: drawn from P after it, with nothing left to try)."""
        if not self.accepted or (self.positions and self.positions[-1].draws):
            return None
        return self.block[-1]


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


def greedy_matched(tokens: Sequence[int], rows: Sequence[int], argmax: Sequence[int]) -> int:
    """How many leading tokens equal the model's predictions for their positions: token 0 the guaranteed token
    (row 0's argmax), token k the argmax of token k-1's row."""
    m, expected = 0, argmax[0]
    while m < len(tokens) and tokens[m] == expected:
        expected = argmax[rows[m]]
        m += 1
    return m


def verify(candidates: Sequence[Path], argmax: Sequence[int]) -> StepVerdict:
    """Greedy verification of `candidates` (rows index `argmax`, row 0 being c) against one forward pass."""
    matched = tuple(greedy_matched(c.tokens, c.rows, argmax) for c in candidates)
    best = max(matched, default=0)
    winner = matched.index(best) if best else None
    accepted = tuple(argmax[r] for r in candidates[winner].rows[:best]) if winner is not None else ()
    return StepVerdict(block=(argmax[0], *accepted), accepted=best, winner=winner, matched=matched)


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
) -> StepVerdict:
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
    matched = tuple(sampled_matched(c.tokens, block[:accepted]) for c in candidates)
    winner = matched.index(accepted) if accepted else None
    return StepVerdict(
        block=tuple(block), accepted=accepted, winner=winner, matched=matched, positions=tuple(positions)
    )


def sampled_matched(tokens: Sequence[int], accepted: Sequence[int]) -> int:
    """How many leading tokens of a candidate equal the accepted tokens."""
    m = 0
    while m < min(len(tokens), len(accepted)) and tokens[m] == accepted[m]:
        m += 1
    return m


def commit(block: Sequence[int], remaining: int, eos_ids: frozenset[int]) -> tuple[list[int], StopReason | None]:
    """The tokens of `block` that may be committed, and why decoding stops after them (or None).

    Stop at the first token of any EOS id, even inside an accepted block; never exceed `remaining`.
    """
    committed = []
    for token in block[:remaining]:
        committed.append(token)
        if token in eos_ids:
            return committed, StopReason.EOS
    return committed, (StopReason.MAX_NEW_TOKENS if len(committed) == remaining else None)
