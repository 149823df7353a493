"""The race: greedy, lookahead, prompt lookup and speculative decoding on one prompt, timed in interleaved rounds.

Every method first runs once on a few tokens, untimed, so none pays for another's cold start
(kernels, allocations, the draft's first pass). Then the methods run in rounds, each once per
round in the same order, timed end to end with the device synchronised, for as many rounds as
the request's time allows (ROUNDS at most; on a busy machine the later ones cut to fit): a burst of
load elsewhere hits every method alike, and the spread over rounds says how steady the figures are
(timing.py). A lane keeps what its curve and its playback need: the tokens and the wall time after
every step, and the text each step added; the record keeps the lanes of one round (the lookahead lap
of median speed, or the first where the later ones were cut) and every round's figures. It also
carries the step costs of this hardware, so a slow method can be explained by what a wide step costs
here, and what other programs used meanwhile.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from dataclasses import replace

from lab.measure.busy import CpuWatch
from lab.measure.timing import ROUND_MARGIN, Lap, later_rounds, shown_round, timing_of
from lookahead_core.costs import StepCosts
from lookahead_core.device.forward import synchronize
from lookahead_core.models import LoadedModel
from lookahead_core.records import METHODS, Method, RaceLane, RaceRecord, StepTally, raced_on
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime
from lookahead_core.spec import method_settings
from lookahead_core.tokens import text_pieces
from lookahead_core.trace import (
    DecodingPlan,
    Progress,
    candidate_tokens,
    finished,
    lapses,
    machine_facts,
    planned_steps,
    settle,
    summarize,
    warming_up,
)


def acceptance(method: Method, records: list[StepTally]) -> float | None:
    """Accepted candidate tokens over candidate tokens verified (None for plain decoding)."""
    if not METHODS[method].guesses:
        return None
    offered, accepted = candidate_tokens(records)
    return accepted / offered if offered else 0.0


ROUNDS = 3  # rounds a race runs: fewer only when they do not fit its time


def timed_lane(
    lm: LoadedModel,
    prompt_ids,
    plan: DecodingPlan,
    runtime: Runtime,
    part: int,
    parts: int,
    until: Callable[[float], bool] | None = None,
    stop_at: int | None = None,
) -> Generator[Progress, None, tuple[RaceLane, Lap]]:
    """Decode once as `plan` settled it (trace.settle, not recorded), timed with nothing drawn and no step recorded
    (the lean path: each step tallied), a Progress after every step; return the lane's figures (speedup and exact
    filled in later) and its lap.

    The clock runs only while a step runs, up to the device's sync: whatever the consumer does with
    a Progress is not charged to the method. The step figures leave out the prefill, which all
    methods share. `until` (a deadline) is asked before every step after the prefill with what the next is
    expected to take: the seconds since the check before (trace.lapses), the last step and the consumer's turn (not
    charged to the method, but spent of the request's time); after the prefill, the prefill's, its set-up and turn
    included. True stops the lane there, its lap partial. `stop_at` stops it, whole, after the step that reached
    that many new tokens (a later round cut short to fit: its request, and so its shape, stay the first round's).
    The runtime's `learn` takes the step tallies at the end (the budget's prices).
    """
    method, max_new_tokens = plan.request.method, stop_at or plan.request.max_new_tokens
    tokens, seconds, records = [0], [0.0], []
    steps = planned_steps(lm, prompt_ids, plan, runtime)
    synchronize(lm.device)
    partial, lapse = False, lapses()
    while stop_at is None or tokens[-1] < stop_at:  # a lap cut to `stop_at` ends whole, before the deadline is asked
        upcoming = lapse()  # the next step, as the last and its consumer's turn (the prefill first)
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
    if runtime.learn is not None:
        runtime.learn(records, method)
    lane = race_lane(lm, method, records, tokens, seconds)
    return lane, Lap(method=method, tokens=tokens, seconds=seconds, partial=partial)


def race_lane(lm: LoadedModel, method: Method, records: list[StepTally], tokens: list[int], seconds: list[float]):
    """A lane's figures from its step records and the cumulative tokens and seconds after each step (speedup
    and exact filled in later); the step figures leave out the prefill, which all methods share."""
    fed = [record.tokens_fed for record in records]
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
        draft_seconds=sum(r.draft_seconds for r in records),
        drafted_inside=any(r.drafted_inside for r in records),
        speedup=0.0,
        exact=None,
        acceptance=acceptance(method, records),
    )


def raced(runtime: Runtime, device: str) -> tuple[Method, ...]:
    """The methods a race runs on a device of type `device`, in the table's order: those the table races there,
    where the runtime has what they need (Medusa where the model has heads)."""
    return tuple(m for m in raced_on(device) if runtime.has(METHODS[m].needs))


def racing(
    lm: LoadedModel,
    prompt_ids: list[int],
    request: DecodeRequest,
    runtime: Runtime,
    costs: StepCosts,
    planned_rounds: int = ROUNDS,
) -> Generator[Progress, None, RaceRecord]:
    """Every method `raced` names, on one prompt with the request's settings (its method is not read;
    lookahead with the runtime's auto settings and planner if given), in interleaved rounds: a Progress after
    every forward pass (warm-ups included, numbered as if `planned_rounds` rounds ran), and the RaceRecord
    returned.

    With the runtime's deadline, the first round shares the time left equally among the methods still to run
    (so each is measured, partial if its share runs out), and further rounds (ROUNDS in all) run while they
    fit; where after round 1 they would not all fit whole (a busy machine), every one decodes only the first new
    tokens they all fit (timing.later_rounds). A round that the deadline stops is not counted. Speeds are
    compared over the same number of tokens in every round (sampled runs stop at different lengths: cut to the
    shortest). Sampled, every method draws with the same settings and seed, so outputs are not compared (`exact`
    is None).
    """
    deadline = runtime.deadline
    watch = CpuWatch()
    methods = raced(runtime, lm.device.type)
    # each lane settled once, before any warm-up is spent: its request checked, its W, N, G and step mode decided
    plans = {m: settle(lm, prompt_ids, replace(request, method=m), runtime, recorded=False) for m in methods}
    parts = len(methods) * (1 + planned_rounds)
    warm = deadline.share(len(methods) + 1) if deadline is not None else None  # all warm-ups: one lane's share
    for part, method in enumerate(methods, 1):
        if warm is None or not warm(0.0):  # past the warm-ups' share, the rest start cold
            yield from warming_up(lm, prompt_ids, request, runtime, [method], part, parts, warm)
    rounds: list[list[tuple[RaceLane, Lap]]] = []
    longest, length = 0.0, None  # the longest round so far; the new tokens later rounds are cut to (None: all)
    while len(rounds) < ROUNDS:
        if len(rounds) == 1 and deadline is not None:  # decided once: every later round whole, or every one cut
            length = later_rounds([lap for _, lap in rounds[0]], longest, deadline.left(), ROUNDS - 1)
        whole_fits = deadline is None or deadline.left() >= ROUND_MARGIN * longest
        if length == 0 or rounds and length is None and not whole_fits:
            break
        started = time.perf_counter()
        parts = max(parts, len(methods) * (2 + len(rounds)))
        laps = []
        for i, method in enumerate(methods):
            until = None
            if deadline is not None:
                until = deadline.share(len(methods) - i) if not rounds else deadline.passed
            part = len(methods) * (1 + len(rounds)) + i + 1
            laps.append((yield from timed_lane(lm, prompt_ids, plans[method], runtime, part, parts, until, length)))
        if rounds and any(lap.partial for _, lap in laps):
            break  # a later round cut short by the deadline is not counted
        rounds.append(laps)
        longest = max(longest, time.perf_counter() - started)
    return race_record(lm, plans, runtime, rounds, watch, costs, length or 0)


def race_record(
    lm: LoadedModel,
    plans: dict[Method, DecodingPlan],
    runtime: Runtime,
    rounds: list[list[tuple[RaceLane, Lap]]],
    watch: CpuWatch,
    costs: StepCosts,
    later_tokens: int = 0,
) -> RaceRecord:
    """The race's record: the lanes of the round shown (the first, whole one where `later_tokens` cut the later
    rounds), every round's figures in its Timing, and the settings and step mode the lanes' plans settled."""
    laps = [[lap for _, lap in r] for r in rounds]
    shown = 0 if later_tokens else shown_round(laps, Method.LOOKAHEAD)
    deadline = runtime.deadline
    budget = deadline.seconds if deadline is not None else 0.0
    timing = timing_of(laps, shown, watch.reading(), budget, later_tokens)
    lanes = [lane for lane, _ in rounds[shown]]
    greedy = lanes[0]
    plan = plans[greedy.method]  # every lane's request but its method is the same, and so is every lane's mode
    request = plan.request
    for lane, figures in zip(lanes, timing.methods, strict=True):
        lane.speedup = figures.speedup.median
        lane.exact = same_as_far_as_both_wrote(lane, greedy) if request.sampling.is_greedy else None
    return RaceRecord(
        lanes=lanes,
        settings=method_settings(request, runtime, [lane.method for lane in lanes]),
        step_costs=costs.curve(),
        machine=machine_facts(lm),
        max_new_tokens=request.max_new_tokens,
        ran_at=time.strftime("%Y-%m-%dT%H:%M:%S"),
        sampling=request.sampling.record(),
        timing=timing,
        mode=plan.mode,
        mode_note=plan.mode_note,
    )


def same_as_far_as_both_wrote(lane: RaceLane, greedy: RaceLane) -> bool:
    """Whether a lane's output equals greedy's over the tokens both wrote: a lane the deadline cut short (greedy's
    too) wrote a prefix of its output, not another output."""
    compared = min(len(lane.new_token_ids), len(greedy.new_token_ids))
    return lane.new_token_ids[:compared] == greedy.new_token_ids[:compared]


def race(
    lm: LoadedModel, prompt_ids: list[int], request: DecodeRequest, runtime: Runtime, *args, **kwargs
) -> RaceRecord:
    """`racing` run to its end: the RaceRecord alone (same arguments)."""
    return finished(racing(lm, prompt_ids, request, runtime, *args, **kwargs))
