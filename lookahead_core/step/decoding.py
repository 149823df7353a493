"""Plain decoding and the guess-and-verify methods, greedy or sampled, as step generators: one
StepRecord per forward pass of the target when the decoding is recorded, else one StepTally.

All share the prefill (step 0) and the commit rules (verify.commit). A guessing step reads:
propose (lookahead: the Jacobi window and the pool's guesses; prompt lookup: earlier matches;
speculative: a draft model's chain) -> plan (what of it to feed) -> lay out (one token tree) ->
forward (one pass of the unmodified model) -> verify (a StepVerdict) -> commit (and keep only the
committed rows in the KV cache) -> observe (the proposer and the planner learn from the verdict) ->
yield (the recorder's record, or its tally: recorder.py). The planner chooses among what was proposed,
so it runs after the proposer. Records hold token ids, counts, facts and measured seconds; nothing
here formats for display.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import replace

import torch

from ..device.forward import EagerPasses, Pass, Passes, output_device
from ..records import Branch, Method, StepKind, StepRecord, StepTally, StopReason
from ..request import DecodeRequest
from ..sampling import GREEDY, SamplingConfig, draw, probabilities
from ..tree.attention import attention_plan
from ..tree.layout import CURRENT, tree_layout
from .planning import FullPlanner, Plan, StepPlanner
from .proposers import Candidate, Outcome, Proposal, Proposer, StepContext, StepInput
from .recorder import StepFacts, step_record, step_tally
from .verify import StepVerdict, commit, verify, verify_sampled


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
            + (f" and guesses reaching {reach} tokens past the last one" if reach else "")
            + f" it would exceed the model's context of {context_length} tokens"
        )


def next_token(result: Pass, sampling: SamplingConfig, generator: torch.Generator | None) -> int:
    """The token after the pass's last row: its argmax (greedy), or a draw from its P (sampling)."""
    if sampling.is_greedy:
        return result.argmax[-1]
    return draw(probabilities(result.logits[-1:], sampling)[0], generator)


def yielded(recorded: bool) -> Callable[[StepFacts], StepRecord | StepTally]:
    """What a decoding yields for each step: its record (`recorded`), else its tally."""
    return step_record if recorded else step_tally


def prefill_facts(
    method: Method, prompt_ids: list[int], committed: list[int], stop, seconds: float, sampled: bool, wall: float
) -> StepFacts:
    """Step 0; `wall` adds what the method set up after the pass (a draft's own prefill)."""
    return StepFacts(
        step=0,
        method=method,
        kind=StepKind.PREFILL,
        position=0,
        tokens_fed=len(prompt_ids),
        committed=committed,
        stop=stop,
        forward_seconds=seconds,
        step_seconds=wall,
        sampled=sampled,
    )


# ----------------------------------------------------------------------------------------------
# Plain autoregressive decoding (greedy, or ordinary sampling)


def greedy_steps(
    model,
    prompt_ids: list[int],
    max_new_tokens: int,
    eos_ids: frozenset[int],
    sampling: SamplingConfig = GREEDY,
    passes: Passes | None = None,
    *,
    recorded: bool = True,
) -> Iterator[StepRecord | StepTally]:
    """Plain autoregressive decoding, greedy or sampled: one committed token per forward pass (the eager step's
    passes, or those of `passes`: the fixed-shape step's, one row each), each step's record yielded when
    `recorded`, else its tally."""
    passes = passes or EagerPasses(model)
    try:
        yield from plain_steps(model, passes, prompt_ids, max_new_tokens, eos_ids, sampling, yielded(recorded))
    finally:
        passes.release()


def plain_steps(
    model,
    passes: Passes,
    prompt_ids: list[int],
    max_new_tokens: int,
    eos_ids: frozenset[int],
    sampling: SamplingConfig,
    out: Callable[[StepFacts], StepRecord | StepTally],
) -> Iterator[StepRecord | StepTally]:
    generator = None if sampling.is_greedy else sampling.generator(output_device(model))
    sampled = not sampling.is_greedy
    result = passes.prefill(prompt_ids)
    token = next_token(result, sampling, generator)
    committed, stop = commit([token], max_new_tokens, eos_ids)
    yield out(prefill_facts(Method.GREEDY, prompt_ids, committed, stop, result.seconds, sampled, result.seconds))
    produced, step = 1, 0
    while stop is None:
        step += 1
        start = time.perf_counter()
        position = len(prompt_ids) + produced - 1
        result = passes.one(token)
        token = next_token(result, sampling, generator)
        committed, stop = commit([token], max_new_tokens - produced, eos_ids)
        produced += 1
        yield out(
            StepFacts(
                step=step,
                method=Method.GREEDY,
                kind=StepKind.DECODE,
                position=position,
                tokens_fed=1,
                committed=committed,
                stop=stop,
                forward_seconds=result.seconds,
                step_seconds=time.perf_counter() - start,
                sampled=sampled,
            )
        )


# ----------------------------------------------------------------------------------------------
# Guess and verify: every method with a proposer (methods.py says which proposes how)


def lay_out(current: int, proposal: Proposal, plan: Plan) -> StepInput:
    """Put the planned part of the proposal side by side after c, in global row numbers."""
    window = [proposal.window] if plan.feed_window else []  # a planner feeds a window only when one was proposed
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


class GuessingDecoder:
    """One guess-and-verify run's state: KV cache, committed sequence, the proposer and the planner.

    `make_proposer(sequence)` builds the method's proposer once the prefill has committed the
    first token; the request's method names the records, its sampling settings and budget of new tokens
    hold. With `recorded` each step yields its StepRecord, else its StepTally (no record built, no
    proposer's report asked for). With `keep_hidden`, each pass also keeps its rows' last hidden states,
    and each step's context holds those of the positions the last pass committed. `passes` runs the
    forward passes (the eager step's unless given: the fixed-shape step's, fixed.py). Raises
    UnsupportedModel (attention.py) at once for a model whose attention cannot take a token tree's masks.
    """

    def __init__(
        self,
        model,
        prompt_ids: list[int],
        request: DecodeRequest,
        make_proposer: Callable[[list[int]], Proposer],
        eos_ids: frozenset[int],
        *,
        planner: StepPlanner | None = None,
        keep_hidden: bool = False,
        passes: Passes | None = None,
        recorded: bool = True,
    ):
        self.recorded, self.out = recorded, yielded(recorded)
        self.model, self.method, self.max_new_tokens = model, request.method, request.max_new_tokens
        self.eos_ids, self.keep_hidden, self.fresh = eos_ids, keep_hidden, None
        self.attention = attention_plan(model.config)
        self.passes = passes or EagerPasses(model)
        self.make_proposer = make_proposer
        self.planner = planner or FullPlanner()
        self.sampling = sampling = request.sampling
        self.generator = None if sampling.is_greedy else sampling.generator(output_device(model))
        self.prompt_ids = list(prompt_ids)
        self.stop: StopReason | None = None
        self.step_index = 0

    def prefill(self) -> StepRecord | StepTally:
        """Step 0: run the prompt, commit the first token, start the proposer from the prompt."""
        start = time.perf_counter()
        result = self.passes.prefill(self.prompt_ids, self.keep_hidden)
        self.fresh = result.hidden if self.keep_hidden else None
        token = next_token(result, self.sampling, self.generator)
        committed, self.stop = commit([token], self.max_new_tokens, self.eos_ids)
        self.sequence = self.prompt_ids + committed
        if self.stop is None:
            self.proposer = self.make_proposer(self.sequence)
        sampled, wall = not self.sampling.is_greedy, time.perf_counter() - start
        return self.out(
            prefill_facts(self.method, self.prompt_ids, committed, self.stop, result.seconds, sampled, wall)
        )

    def steps(self) -> Iterator[StepRecord | StepTally]:
        """The prefill, then one step per forward pass until a stop (or until the consumer stops asking)."""
        try:
            yield self.prefill()
            while self.stop is None:
                yield self.step()
        finally:
            self.passes.release()

    def step(self) -> StepRecord | StepTally:
        """One forward pass: propose, plan, lay out, forward, verify, commit, observe, then its record or tally."""
        start = time.perf_counter()
        self.step_index += 1
        position = len(self.sequence) - 1
        proposal = self.proposer.propose(StepContext(self.sequence, self.step_index, self.fresh))
        plan = self.planner.plan(proposal)
        fed = lay_out(self.sequence[-1], proposal, plan)
        result = self.passes.tree(fed.tokens, fed.layout, self.attention, self.keep_hidden)
        verdict = self.verify(fed, result)
        winner = fed.candidates[verdict.winner] if verdict.accepted else None
        committed = self.commit(verdict.block, winner)
        if self.keep_hidden:
            accepted = winner.rows[: verdict.accepted] if winner is not None else ()
            self.fresh = result.hidden[[0, *accepted]]
        argmax = result.argmax
        window_argmax = [argmax[0], *(argmax[r] for r in fed.window_rows)] if plan.feed_window else []
        outcome = Outcome(self.sequence, self.step_index, plan.feed_window, window_argmax, fed.candidates, verdict)
        self.proposer.observe(outcome)
        self.planner.observe(outcome)
        seconds = time.perf_counter() - start
        return self.out(
            StepFacts(
                step=self.step_index,
                method=self.method,
                kind=StepKind.DECODE,
                position=position,
                tokens_fed=fed.layout.size,
                committed=committed,
                stop=self.stop,
                forward_seconds=result.seconds,
                step_seconds=seconds,
                sampled=not self.sampling.is_greedy,
                draft_seconds=proposal.draft_seconds,
                fed=fed,
                plan=plan,
                verdict=verdict,
                argmax=argmax,
                attention=self.attention,
                report=self.proposer.report(outcome) if self.recorded else None,
            )
        )

    def verify(self, fed: StepInput, result: Pass) -> StepVerdict:
        """Greedy verification on the argmax, or the sampling rule on the logits, with the run's generator."""
        if self.sampling.is_greedy:
            return verify(fed.candidates, result.argmax)
        return verify_sampled(fed.candidates, result.logits, self.sampling, self.generator)

    def commit(self, block: tuple[int, ...], winner: Candidate | None) -> list[int]:
        """Commit what the rules allow of `block`; keep in the cache only c and the winner's accepted rows."""
        committed, self.stop = commit(block, self.max_new_tokens - self.produced, self.eos_ids)
        if self.stop is None:
            self.passes.keep(tuple(winner.rows[: len(block) - 1]) if winner is not None else ())
        self.sequence = self.sequence + committed
        return committed

    @property
    def produced(self) -> int:
        return len(self.sequence) - len(self.prompt_ids)
