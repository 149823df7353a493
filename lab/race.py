"""The race: greedy, lookahead, prompt lookup and speculative decoding on one prompt, timed with nothing drawn.

Every method first runs once on a few tokens, untimed, so none pays for another's cold start
(kernels, allocations, the draft's first pass). Then each runs in turn, timed end to end with
the device synchronised. A lane keeps what its curve and its playback need: the tokens and the
wall time after every step, and the text each step added. The record (records.RaceRecord) also
carries the step costs of this hardware, so a slow method can be explained by what a wide step
costs here.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator
from dataclasses import replace

from lookahead_core.costs import StepCosts
from lookahead_core.decoding import check_request
from lookahead_core.draft import Draft
from lookahead_core.forward import synchronize
from lookahead_core.models import LoadedModel
from lookahead_core.records import LookaheadSettings, LookupSettings, Method, RaceLane, RaceRecord, StepRecord
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

RACED = (Method.GREEDY, Method.LOOKAHEAD, Method.PROMPT_LOOKUP, Method.SPECULATIVE)


def acceptance(method: Method, records: list[StepRecord]) -> float | None:
    """Accepted candidate tokens over candidate tokens verified (None for plain decoding)."""
    if method == Method.GREEDY:
        return None
    offered, accepted = candidate_tokens(records)
    return accepted / offered if offered else 0.0


def timed_lane(
    lm: LoadedModel,
    prompt_ids,
    request: DecodeRequest,
    runtime: dict,
    part: int,
    parts: int,
) -> Generator[Progress, None, RaceLane]:
    """Decode once, timed with nothing drawn, a Progress after every step; return the lane's figures
    (speedup and exact filled in later).

    The clock runs only while a step runs, up to the device's sync: whatever the consumer does with
    a Progress is not charged to the method. The step figures leave out the prefill, which all
    methods share.
    """
    method, max_new_tokens = request.method, request.max_new_tokens
    tokens, seconds, fed, records = [0], [0.0], [], []
    steps = decode_steps(lm, prompt_ids, request, **runtime)
    synchronize(lm.device)
    while True:
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
    steps = len(fed) - 1
    return RaceLane(
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


def racing(
    lm: LoadedModel,
    prompt_ids: list[int],
    request: DecodeRequest,
    costs: StepCosts,
    draft: Draft,
    auto: AutoSettings | None = None,
) -> Iterator[Progress | RaceRecord]:
    """Every method of RACED on one prompt with the request's settings (its method is not read; lookahead
    with `auto`'s settings and planner if given): a Progress after every forward pass (warm-ups included),
    the RaceRecord last.

    Speedup is tokens per second over plain decoding's (sampled runs may stop at different
    lengths). Sampled, every method draws with the same settings and seed, so outputs are not
    compared (`exact` is None).
    """
    config = auto.config if auto is not None else request.lookahead
    lookup, sampling, max_new_tokens = request.lookup, request.sampling, request.max_new_tokens
    request = replace(request, lookahead=config)

    def runtime(method: Method) -> dict:
        """A lane's planner (lookahead with auto settings: a fresh one of their kind) and the draft."""
        planner = auto.make_planner() if auto is not None and method == Method.LOOKAHEAD else None
        return {"planner": planner, "draft": draft}

    reach = max(method_reach(m, config, lookup, draft) for m in RACED)
    check_request(prompt_ids, max_new_tokens, lm.context_length, reach)  # before any warm-up is spent
    parts = 2 * len(RACED)
    for part, method in enumerate(RACED, 1):
        yield from warming_up(lm, prompt_ids, request, [method], part, parts, **runtime(method))
    lanes = []
    for part, method in enumerate(RACED, len(RACED) + 1):
        lane = replace(request, method=method)
        lanes.append((yield from timed_lane(lm, prompt_ids, lane, runtime(method), part, parts)))
    greedy = lanes[0]
    rate = greedy.tokens[-1] / greedy.seconds[-1]
    for lane in lanes:
        lane.speedup = (lane.tokens[-1] / lane.seconds[-1]) / rate
        lane.exact = lane.new_token_ids == greedy.new_token_ids if sampling.is_greedy else None
    yield RaceRecord(
        lanes=lanes,
        settings=auto.settings()
        if auto is not None
        else LookaheadSettings(window=config.window, ngram=config.ngram, guesses=config.guesses),
        lookup=LookupSettings(ngram=lookup.ngram, tokens=lookup.tokens, candidates=lookup.candidates),
        draft=draft.settings(),
        step_costs=costs.curve(),
        machine=machine_facts(lm),
        max_new_tokens=max_new_tokens,
        ran_at=time.strftime("%Y-%m-%dT%H:%M:%S"),
        sampling=sampling.record(),
    )


def race(lm: LoadedModel, prompt_ids: list[int], *args, **kwargs) -> RaceRecord:
    """`racing` run to its end: the RaceRecord alone (same arguments)."""
    *_, result = racing(lm, prompt_ids, *args, **kwargs)
    return result
