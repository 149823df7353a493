"""Plain and lookahead decoding, greedy or sampled, as step generators: one StepRecord per forward pass.

Both share the prefill (step 0) and the commit rules (verify.commit). A lookahead step reads:
propose (the Jacobi window and the pool's guesses) -> plan (what of it to feed) -> lay out (one
token tree) -> forward (one pass of the unmodified model) -> verify -> commit (and keep only
the committed rows in the KV cache) -> observe (the proposer and the planner learn) -> record.
The planner chooses among what was proposed, so it runs after the proposer. Records hold token
ids, counts, facts and measured seconds; nothing here formats for display.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import torch

from .config import LookaheadConfig
from .forward import Pass, decode_one_token, forward_tree, keep_rows, output_device, prefill
from .layout import CURRENT, StepLayout, tree_layout
from .planning import FullPlanner, Plan, StepPlanner
from .proposers import Candidate, JacobiProposer, Outcome, Proposal, Proposer, StepContext
from .records import Branch, InputRow, Method, StepKind, StepRecord, StopReason, TokenSource
from .sampling import GREEDY, SamplingConfig, draw, probabilities
from .verify import commit, commit_sources, verify, verify_sampled


class DecodingError(ValueError):
    """The request cannot be decoded as asked (empty prompt, no room in the context, ...)."""


def check_request(prompt_ids: list[int], max_new_tokens: int, context_length: int | None, reach: int = 0) -> None:
    """Refuse an empty prompt, a non-positive budget, or a request that outruns the model's context.

    `reach` is how far past the last committed token a step's guesses may sit (0 for greedy).
    """
    if not prompt_ids:
        raise DecodingError("the prompt is empty: give at least one token")
    if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise DecodingError(f"max_new_tokens must be an integer >= 1, got {max_new_tokens!r}")
    if context_length is not None and len(prompt_ids) + max_new_tokens + reach > context_length:
        raise DecodingError(
            f"the prompt has {len(prompt_ids)} tokens; with {max_new_tokens} new tokens"
            + (f" and a lookahead reach of {reach}" if reach else "")
            + f" it would exceed the model's context of {context_length} tokens"
        )


def next_token(result: Pass, sampling: SamplingConfig, generator: torch.Generator | None) -> int:
    """The token after the pass's last row: its argmax (greedy), or a draw from its P (sampling)."""
    if sampling.is_greedy:
        return result.argmax[-1]
    return draw(probabilities(result.logits[-1:], sampling)[0], generator)


def plain_source(sampling: SamplingConfig) -> TokenSource:
    return TokenSource.GUARANTEED if sampling.is_greedy else TokenSource.SAMPLED


def prefill_record(
    method: Method, prompt_ids: list[int], committed: list[int], stop, seconds: float, source
) -> StepRecord:
    return StepRecord(0, method, StepKind.PREFILL, 0, len(prompt_ids), committed, [source], stop, seconds, seconds)


# ----------------------------------------------------------------------------------------------
# Plain autoregressive decoding (greedy, or ordinary sampling)


def greedy_steps(
    model, prompt_ids: list[int], max_new_tokens: int, eos_ids: frozenset[int], sampling: SamplingConfig = GREEDY
) -> Iterator[StepRecord]:
    """Plain autoregressive decoding, greedy or sampled: one committed token per forward pass."""
    generator = None if sampling.is_greedy else sampling.generator(output_device(model))
    cache, result = prefill(model, prompt_ids)
    token = next_token(result, sampling, generator)
    committed, stop = commit([token], max_new_tokens, eos_ids)
    yield prefill_record(Method.GREEDY, prompt_ids, committed, stop, result.seconds, plain_source(sampling))
    produced, step = 1, 0
    while stop is None:
        step += 1
        start = time.perf_counter()
        position = len(prompt_ids) + produced - 1
        result = decode_one_token(model, cache, token)
        token = next_token(result, sampling, generator)
        committed, stop = commit([token], max_new_tokens - produced, eos_ids)
        produced += 1
        yield StepRecord(
            step,
            Method.GREEDY,
            StepKind.DECODE,
            position,
            1,
            committed,
            [plain_source(sampling)],
            stop,
            result.seconds,
            time.perf_counter() - start,
        )


# ----------------------------------------------------------------------------------------------
# Lookahead


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


def lay_out(current: int, proposal: Proposal, plan: Plan) -> StepInput:
    """Put the planned part of the proposal side by side after c, in global row numbers."""
    window = [proposal.window] if plan.feed_window and proposal.window is not None else []
    guesses = [g.cut(plan.length) for g in proposal.guesses[: plan.guesses]]
    tokens, parents, places = [current], [CURRENT], [(Branch.CURRENT, 0, 0)]
    per_branch = []
    for branch in window + guesses:
        offset = len(tokens)
        tokens += branch.tokens
        parents += [0 if p == CURRENT else offset + p for p in branch.parents]
        places += [(branch.kind, lane, index) for lane, index in branch.places]
        per_branch.append([replace(c, rows=tuple(offset + r for r in c.rows)) for c in branch.candidates])
    ordered = per_branch[len(window) :] + per_branch[: len(window)]  # guesses first: a guess wins a tie
    window_rows = range(1, 1 + len(window[0].tokens)) if window else range(0)
    return StepInput(tokens, tree_layout(tuple(parents)), places, window_rows, [c for part in ordered for c in part])


def input_rows(fed: StepInput, position: int) -> list[InputRow]:
    """The rows as the record holds them: token, position id, parent, place, and the rows each sees."""
    return [
        InputRow(token, position + depth, parent, branch, lane, index, list(sees))
        for token, depth, parent, (branch, lane, index), sees in zip(
            fed.tokens, fed.layout.depths, fed.layout.parents, fed.places, fed.layout.seen, strict=True
        )
    ]


class LookaheadDecoder:
    """One lookahead run's state: KV cache, committed sequence, the proposer and the planner."""

    def __init__(
        self,
        model,
        prompt_ids: list[int],
        config: LookaheadConfig,
        max_new_tokens: int,
        eos_ids: frozenset[int],
        seed: int = 0,
        planner: StepPlanner | None = None,
        sampling: SamplingConfig = GREEDY,
        proposer: Callable[..., Proposer] = JacobiProposer,
    ):
        self.model, self.config, self.max_new_tokens, self.eos_ids = model, config, max_new_tokens, eos_ids
        self.planner = planner or FullPlanner()
        self.sampling = sampling
        self.make_proposer = proposer  # called as (config, sequence, prompt_ids, seed) after the prefill
        self.generator = None if sampling.is_greedy else sampling.generator(output_device(model))
        self.prompt_ids = list(prompt_ids)
        self.seed = seed
        self.stop: StopReason | None = None
        self.step_index = 0

    def prefill(self) -> StepRecord:
        """Step 0: run the prompt, commit the first token, start the proposer from the prompt."""
        self.cache, result = prefill(self.model, self.prompt_ids)
        token = next_token(result, self.sampling, self.generator)
        committed, self.stop = commit([token], self.max_new_tokens, self.eos_ids)
        self.sequence = self.prompt_ids + committed
        self.proposer = self.make_proposer(self.config, self.sequence, self.prompt_ids, self.seed)
        source = plain_source(self.sampling)
        return prefill_record(Method.LOOKAHEAD, self.prompt_ids, committed, self.stop, result.seconds, source)

    def step(self) -> StepRecord:
        """One forward pass: propose, plan, lay out, forward, verify, commit, observe, record."""
        start = time.perf_counter()
        self.step_index += 1
        position = len(self.sequence) - 1
        proposal = self.proposer.propose(StepContext(self.sequence, self.step_index))
        plan = self.planner.plan(proposal)
        fed = lay_out(self.sequence[-1], proposal, plan)
        result = forward_tree(self.model, self.cache, fed.tokens, fed.layout)
        verification = self.verify(fed, result)
        committed = self.commit(
            verification.block, fed.candidates[verification.winner] if verification.accepted else None
        )
        argmax = result.argmax
        window_argmax = [argmax[0], *(argmax[r] for r in fed.window_rows)] if plan.feed_window else []
        outcome = Outcome(self.sequence, self.step_index, plan.feed_window, window_argmax, verification)
        report = self.proposer.observe(outcome)
        self.planner.observe(outcome)
        return StepRecord(
            self.step_index,
            Method.LOOKAHEAD,
            StepKind.DECODE,
            position,
            fed.layout.size,
            committed,
            commit_sources(len(committed), verification),
            self.stop,
            result.seconds,
            time.perf_counter() - start,
            input_rows(fed, position),
            plan.record,
            report.window,
            report.pool,
            verification,
        )

    def verify(self, fed: StepInput, result: Pass):
        """Greedy verification on the argmax, or the sampling rule on the logits, with the run's generator."""
        if self.sampling.is_greedy:
            return verify(fed.candidates, result.argmax)
        return verify_sampled(fed.candidates, result.logits, self.sampling, self.generator)

    def commit(self, block: list[int], winner: Candidate | None) -> list[int]:
        """Commit what the rules allow of `block`; keep in the cache only c and the winner's accepted rows."""
        position = len(self.sequence) - 1
        committed, self.stop = commit(block, self.max_new_tokens - self.produced, self.eos_ids)
        if self.stop is None:
            accepted = winner.rows[: len(block) - 1] if winner is not None else ()
            keep_rows(self.cache, position + 1, [position + r for r in accepted])
        self.sequence = self.sequence + committed
        return committed

    @property
    def produced(self) -> int:
        return len(self.sequence) - len(self.prompt_ids)


def lookahead_steps(
    model,
    prompt_ids: list[int],
    config: LookaheadConfig,
    max_new_tokens: int,
    eos_ids: frozenset[int],
    seed: int = 0,
    planner: StepPlanner | None = None,
    sampling: SamplingConfig = GREEDY,
) -> Iterator[StepRecord]:
    """Lookahead decoding (Jacobi window + n-gram pool + verification): greedy output equals greedy
    decoding's; sampled output has the distribution of ordinary sampling with the same settings.

    `planner` picks each step's input (default: the paper's full window and G guesses).
    """
    decoder = LookaheadDecoder(model, prompt_ids, config, max_new_tokens, eos_ids, seed, planner, sampling)
    yield decoder.prefill()
    while decoder.stop is None:
        yield decoder.step()
