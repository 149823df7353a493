"""The race: greedy, lookahead, prompt lookup and speculative decoding on one prompt, timed in interleaved rounds.

Every method first runs once on a few tokens, untimed, so none pays for another's cold start
(kernels, allocations, the draft's first pass). Then the methods run in rounds, each once per
round in the same order, timed end to end with the device synchronised, for as many rounds as
the request's time allows (ROUNDS at most): a burst of load elsewhere hits every method
alike, and the spread over rounds says how steady the figures are (timing.py). A lane keeps
what its curve and its playback need: the tokens and the wall time after every step, and the
text each step added; the record keeps the lanes of one round (the lookahead lap of median
speed) and every round's figures. It also carries the step costs of this hardware, so a slow
method can be explained by what a wide step costs here, and what other programs used meanwhile.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import replace

from lookahead_core.costs import StepCosts
from lookahead_core.decoding import check_request
from lookahead_core.draft import Draft
from lookahead_core.forward import synchronize
from lookahead_core.medusa import Medusa
from lookahead_core.models import LoadedModel
from lookahead_core.records import (
    LookaheadSettings,
    LookupSettings,
    Method,
    RaceLane,
    RaceRecord,
    StepRecord,
)
from lookahead_core.request import DecodeRequest
from lookahead_core.trace import (
    Progress,
    candidate_tokens,
    decode_steps,
    machine_facts,
    method_reach,
    summarize,
    text_pieces,
    warming_up,
)
from lookahead_core.tuning import AutoSettings

from .budget import Deadline
from .busy import CpuWatch
from .timing import Lap, shown_round, timing_of

RACED = (Method.GREEDY, Method.LOOKAHEAD, Method.PROMPT_LOOKUP, Method.SPECULATIVE)


def acceptance(method: Method, records: list[StepRecord]) -> float | None:
    """Accepted candidate tokens over candidate tokens verified (None for plain decoding)."""
    if method == Method.GREEDY:
        return None
    offered, accepted = candidate_tokens(records)
    return accepted / offered if offered else 0.0


ROUNDS = 3  # rounds a race runs: fewer only when they do not fit its time
ROUND_MARGIN = 1.1  # another round starts only if the longest so far, times this, fits in the time left


def timed_lane(
    lm: LoadedModel,
    prompt_ids,
    request: DecodeRequest,
    runtime: dict,
    part: int,
    parts: int,
    until: Callable[[float], bool] | None = None,
    learn: Callable[[list[StepRecord]], None] | None = None,
) -> Generator[Progress, None, tuple[RaceLane, Lap]]:
    """Decode once, timed with nothing drawn, a Progress after every step; return the lane's figures
    (speedup and exact filled in later) and its lap.

    The clock runs only while a step runs, up to the device's sync: whatever the consumer does with
    a Progress is not charged to the method. The step figures leave out the prefill, which all
    methods share. `until` (a deadline) is asked before every step after the prefill, with the seconds
    the last step took (what the next is expected to take; after the prefill, the prefill's): True stops
    the lane there, its lap partial.
    `learn` takes the step records at the end (the budget's prices).
    """
    method, max_new_tokens = request.method, request.max_new_tokens
    tokens, seconds, fed, records = [0], [0.0], [], []
    steps = decode_steps(lm, prompt_ids, request, **runtime)
    synchronize(lm.device)
    partial = False
    while True:
        upcoming = records[-1].step_seconds if records else 0.0  # the next step, as the last (the prefill first)
        if records and records[-1].stop is None and until is not None and until(upcoming):
            partial = True
            break
        start = time.perf_counter()
        record = next(steps, None)
        if record is None:
            break
        synchronize(lm.device)
        seconds.append(seconds[-1] + time.perf_counter() - start)
        tokens.append(tokens[-1] + len(record.committed))
        fed.append(record.tokens_fed)
        records.append(record)
        yield Progress(
            part=part,
            parts=parts,
            method=method,
            warming_up=False,
            steps=len(records),
            tokens=tokens[-1],
            max_new_tokens=max_new_tokens,
        )
    if learn is not None:
        learn(records)
    steps = len(fed) - 1
    lane = RaceLane(
        method=method,
        tokens=tokens,
        seconds=seconds,
        tokens_fed=fed,
        pieces=text_pieces(lm.tokenizer, [r.committed for r in records]),
        new_token_ids=summarize(records).new_token_ids,
        steps=len(fed),
        tokens_per_step=tokens[-1] / len(fed),
        decode_step_seconds=(seconds[-1] - seconds[1]) / steps if steps else 0.0,
        mean_tokens_fed=sum(fed[1:]) / steps if steps else 0.0,
        decode_tokens_per_step=(tokens[-1] - tokens[1]) / steps if steps else 0.0,
        draft_seconds=sum(r.draft.seconds for r in records if r.draft is not None),
        speedup=0.0,
        exact=None,
        acceptance=acceptance(method, records),
    )
    return lane, Lap(method=method, tokens=tokens, seconds=seconds, partial=partial)


def lane_runtime(method: Method, auto: AutoSettings | None, draft: Draft | None, medusa: Medusa | None = None) -> dict:
    """A lane's planner (lookahead with auto settings: a fresh one of their kind), the draft and the heads."""
    planner = auto.make_planner() if auto is not None and method == Method.LOOKAHEAD else None
    return {"planner": planner, "draft": draft, "medusa": medusa}


def raced(medusa: Medusa | None) -> tuple[Method, ...]:
    """The methods a race runs, in lane order: Medusa last, where the model has heads."""
    return RACED + ((Method.MEDUSA,) if medusa is not None else ())


def another_round(deadline: Deadline | None, done: int, longest: float) -> bool:
    """Whether a race runs one more round: up to ROUNDS, each only while the longest round so far fits (with
    ROUND_MARGIN) in the time left, if there is a deadline."""
    return done < ROUNDS and (deadline is None or deadline.left() >= ROUND_MARGIN * longest)


def racing(
    lm: LoadedModel,
    prompt_ids: list[int],
    request: DecodeRequest,
    costs: StepCosts,
    draft: Draft,
    auto: AutoSettings | None = None,
    deadline: Deadline | None = None,
    learn: Callable[[list[StepRecord]], None] | None = None,
    planned_rounds: int = ROUNDS,
    medusa: Medusa | None = None,
) -> Iterator[Progress | RaceRecord]:
    """Every method of RACED, and Medusa given its heads, on one prompt with the request's settings (its
    method is not read; lookahead with `auto`'s settings and planner if given), in interleaved rounds: a
    Progress after every forward pass (warm-ups included, numbered as if `planned_rounds` rounds ran), the
    RaceRecord last.

    With a `deadline`, the first round shares the time left equally among the methods still to run (so each
    is measured, partial if its share runs out), and further rounds (ROUNDS in all) run while they fit.
    A round that the deadline stops is not counted. Speeds are compared over the same number of tokens in
    each round (sampled runs stop at different lengths: cut to the shortest). Sampled, every method draws
    with the same settings and seed, so outputs are not compared (`exact` is None).
    """
    config = auto.config if auto is not None else request.lookahead
    lookup, max_new_tokens = request.lookup, request.max_new_tokens
    request = replace(request, lookahead=config)
    watch = CpuWatch()

    methods = raced(medusa)

    def runtime(method: Method) -> dict:
        return lane_runtime(method, auto, draft, medusa)

    reach = max(method_reach(m, config, lookup, draft, medusa) for m in methods)
    check_request(prompt_ids, max_new_tokens, lm.context_length, reach)  # before any warm-up is spent
    parts = len(methods) * (1 + planned_rounds)
    warm = deadline.share(len(methods) + 1) if deadline is not None else None  # all warm-ups: one lane's share
    for part, method in enumerate(methods, 1):
        if warm is None or not warm(0.0):  # past the warm-ups' share, the rest start cold
            yield from warming_up(lm, prompt_ids, request, [method], part, parts, warm, **runtime(method))
    rounds: list[list[tuple[RaceLane, Lap]]] = []
    longest, cut = 0.0, False
    while not cut and (not rounds or another_round(deadline, len(rounds), longest)):
        started = time.perf_counter()
        parts = max(parts, len(methods) * (2 + len(rounds)))
        laps = []
        for i, method in enumerate(methods):
            until = None
            if deadline is not None:
                until = deadline.share(len(methods) - i) if not rounds else deadline.passed
            part = len(methods) * (1 + len(rounds)) + i + 1
            lane = replace(request, method=method)
            laps.append((yield from timed_lane(lm, prompt_ids, lane, runtime(method), part, parts, until, learn)))
        cut = bool(rounds) and any(lap.partial for _, lap in laps)  # a later round cut short is not counted
        if not cut:
            rounds.append(laps)
        longest = max(longest, time.perf_counter() - started)
    yield race_record(lm, request, rounds, watch, deadline, auto, costs, draft, medusa)


def race_record(
    lm: LoadedModel,
    request: DecodeRequest,
    rounds: list[list[tuple[RaceLane, Lap]]],
    watch: CpuWatch,
    deadline: Deadline | None,
    auto: AutoSettings | None,
    costs: StepCosts,
    draft: Draft,
    medusa: Medusa | None = None,
) -> RaceRecord:
    """The race's record: the lanes of the round shown, and every round's figures in its Timing."""
    laps = [[lap for _, lap in r] for r in rounds]
    shown = shown_round(laps, Method.LOOKAHEAD)
    timing = timing_of(laps, shown, watch.reading(), deadline.seconds if deadline is not None else 0.0)
    lanes = [lane for lane, _ in rounds[shown]]
    greedy = lanes[0]
    for lane, figures in zip(lanes, timing.methods, strict=True):
        lane.speedup = figures.speedup.median
        lane.exact = lane.new_token_ids == greedy.new_token_ids if request.sampling.is_greedy else None
    config, lookup = request.lookahead, request.lookup
    return RaceRecord(
        lanes=lanes,
        settings=auto.settings()
        if auto is not None
        else LookaheadSettings(window=config.window, ngram=config.ngram, guesses=config.guesses),
        lookup=LookupSettings(ngram=lookup.ngram, tokens=lookup.tokens, candidates=lookup.candidates),
        draft=draft.settings(),
        step_costs=costs.curve(),
        machine=machine_facts(lm),
        max_new_tokens=request.max_new_tokens,
        ran_at=time.strftime("%Y-%m-%dT%H:%M:%S"),
        sampling=request.sampling.record(),
        timing=timing,
        medusa=medusa.settings() if medusa is not None else None,
    )


def race(lm: LoadedModel, prompt_ids: list[int], *args, **kwargs) -> RaceRecord:
    """`racing` run to its end: the RaceRecord alone (same arguments)."""
    *_, result = racing(lm, prompt_ids, *args, **kwargs)
    return result
