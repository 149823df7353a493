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
from collections.abc import Callable, Generator, Iterator

from lookahead_core.config import PROMPT_LOOKUP, LookaheadConfig, LookupConfig
from lookahead_core.costs import StepCosts
from lookahead_core.decoding import check_request
from lookahead_core.draft import Draft
from lookahead_core.forward import synchronize
from lookahead_core.models import LoadedModel
from lookahead_core.records import LookupSettings, Method, RaceLane, RaceRecord, Settings, StepRecord
from lookahead_core.sampling import GREEDY, SamplingConfig
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
    method: Method,
    setup: Callable[[Method], dict],
    max_new_tokens: int,
    part: int,
    parts: int,
) -> Generator[Progress, None, RaceLane]:
    """Decode once, timed with nothing drawn, a Progress after every step; return the lane's figures
    (speedup and exact filled in later).

    The clock runs only while a step runs, up to the device's sync: whatever the consumer does with
    a Progress is not charged to the method. The step figures leave out the prefill, which all
    methods share.
    """
    tokens, seconds, fed, records = [0], [0.0], [], []
    steps = decode_steps(lm, prompt_ids, method, max_new_tokens=max_new_tokens, **setup(method))
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
        yield Progress(part, parts, method, False, len(records), tokens[-1], max_new_tokens)
    steps = len(fed) - 1
    return RaceLane(
        method,
        tokens,
        seconds,
        fed,
        text_pieces(lm.tokenizer, [r.committed for r in records]),
        summarize(records).new_token_ids,
        len(fed),
        tokens[-1] / len(fed),
        (seconds[-1] - seconds[1]) / steps if steps else 0.0,
        sum(fed[1:]) / steps if steps else 0.0,
        (tokens[-1] - tokens[1]) / steps if steps else 0.0,
        sum(r.draft.seconds for r in records if r.draft is not None),
        0.0,
        None,
        acceptance(method, records),
    )


def racing(
    lm: LoadedModel,
    prompt_ids: list[int],
    config: LookaheadConfig,
    max_new_tokens: int,
    costs: StepCosts,
    draft: Draft,
    auto: AutoSettings | None = None,
    sampling: SamplingConfig = GREEDY,
    lookup: LookupConfig = PROMPT_LOOKUP,
) -> Iterator[Progress | RaceRecord]:
    """Every method of RACED on one prompt (lookahead with `auto`'s settings and planner if given): a
    Progress after every forward pass (warm-ups included), the RaceRecord last.

    Speedup is tokens per second over plain decoding's (sampled runs may stop at different
    lengths). Sampled, every method draws with the same settings and seed, so outputs are not
    compared (`exact` is None).
    """
    config = auto.config if auto is not None else config

    def setup(method: Method) -> dict:
        planner = auto.make_planner() if auto is not None and method == Method.LOOKAHEAD else None
        return {"config": config, "planner": planner, "sampling": sampling, "lookup": lookup, "draft": draft}

    reach = max(method_reach(m, config, lookup, draft) for m in RACED)
    check_request(prompt_ids, max_new_tokens, lm.context_length, reach)  # before any warm-up is spent
    parts = 2 * len(RACED)
    for part, method in enumerate(RACED, 1):
        yield from warming_up(lm, prompt_ids, [method], part, parts, **setup(method))
    lanes = []
    for part, method in enumerate(RACED, len(RACED) + 1):
        lanes.append((yield from timed_lane(lm, prompt_ids, method, setup, max_new_tokens, part, parts)))
    greedy = lanes[0]
    rate = greedy.tokens[-1] / greedy.seconds[-1]
    for lane in lanes:
        lane.speedup = (lane.tokens[-1] / lane.seconds[-1]) / rate
        lane.exact = lane.new_token_ids == greedy.new_token_ids if sampling.is_greedy else None
    yield RaceRecord(
        lanes,
        auto.settings() if auto is not None else Settings(config.window, config.ngram, config.guesses),
        LookupSettings(lookup.ngram, lookup.tokens, lookup.candidates),
        draft.settings(),
        costs.curve(),
        machine_facts(lm),
        max_new_tokens,
        time.strftime("%Y-%m-%dT%H:%M:%S"),
        sampling.record(),
    )


def race(lm: LoadedModel, prompt_ids: list[int], *args, **kwargs) -> RaceRecord:
    """`racing` run to its end: the RaceRecord alone (same arguments)."""
    *_, result = racing(lm, prompt_ids, *args, **kwargs)
    return result
