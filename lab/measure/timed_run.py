"""A Run timed as a benchmark engineer would: the recorded traces, then more interleaved rounds while they fit.

Round 1 records both traces (the method's, then plain decoding's), each warmed up first and each
given an equal share of the request's time, partial if its share runs out. Further rounds time
the same two decodings again, with nothing recorded, while the longest round so far fits in the
time left (RUN_ROUNDS at most); where after round 1 they would not all fit whole (a busy machine), every one
decodes only the first new tokens they all fit (timing.later_rounds), and every rate counts that many. A round
the deadline stops is not counted. The Run keeps the round 1 traces (what the replay shows) and every round's
figures (records.Timing).
"""

from __future__ import annotations

import itertools
from collections.abc import Generator
from dataclasses import replace

from lab.measure.busy import CpuWatch
from lab.measure.race import timed_lane
from lab.measure.timing import ROUND_MARGIN, Lap, later_rounds, timing_of
from lookahead_core.models import LoadedModel
from lookahead_core.records import Method, Progress, Run, StopReason, Trace
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime
from lookahead_core.trace import RUN_PARTS, recording_run, settle

RUN_ROUNDS = 3  # rounds a Run times at most, when they fit its time


def trace_lap(trace: Trace) -> Lap:
    """A recorded trace as a lap: cumulative tokens and step seconds after each step."""
    tokens = [0, *itertools.accumulate(len(record.committed) for record in trace.steps)]
    seconds = [0.0, *itertools.accumulate(record.step_seconds for record in trace.steps)]
    return Lap(
        method=trace.meta.method, tokens=tokens, seconds=seconds, partial=trace.summary.stop == StopReason.DEADLINE
    )


def timed_run(
    lm: LoadedModel, prompt_ids: list[int], request: DecodeRequest, runtime: Runtime, prompt_text: str | None = None
) -> Generator[Progress, None, Run]:
    """The Run of `request` within the runtime's deadline (see the module's docstring): a Progress after every
    forward pass, and the Run with its Timing returned. The runtime's `learn` takes every step record (the
    budget's prices)."""
    deadline = runtime.deadline
    methods = (request.method, Method.GREEDY)
    watch = CpuWatch()
    parts = RUN_PARTS + len(methods) * (RUN_ROUNDS - 1)
    run = yield from recording_run(
        lm,
        prompt_ids,
        request,
        runtime,
        prompt_text,
        until=deadline.shares(methods),
        parts=parts,
        warm_until=deadline.share(len(methods) + 1),  # the warm-ups together: one share, as a decoding gets
    )
    if runtime.learn is not None:
        runtime.learn(run.trace.steps, request.method)
        runtime.learn(run.greedy.steps, Method.GREEDY)
    rounds = [[trace_lap(run.trace), trace_lap(run.greedy)]]
    longest = sum(lap.seconds[-1] for lap in rounds[0])
    # decided once: every later round whole (each while it fits), or every one cut to what they all fit
    length = later_rounds(rounds[0], longest, deadline.left(), RUN_ROUNDS - 1)
    # each later round's decodings settled once (trace.settle), as round 1's were
    plans = [settle(lm, prompt_ids, replace(request, method=method), runtime, recorded=False) for method in methods]
    while len(rounds) < RUN_ROUNDS and length != 0:
        if length is None and deadline.left() < ROUND_MARGIN * longest:
            break
        part = RUN_PARTS + len(methods) * (len(rounds) - 1)
        laps = []
        for i, plan in enumerate(plans, 1):
            _, lap = yield from timed_lane(lm, prompt_ids, plan, runtime, part + i, parts, deadline.passed, length)
            laps.append(lap)
        if any(lap.partial for lap in laps):
            break  # a round the deadline stopped is not counted
        rounds.append(laps)
        longest = max(longest, sum(lap.seconds[-1] for lap in laps))
    # the replay shows round 1's traces
    run.timing = timing_of(rounds, 0, watch.reading(), deadline.seconds, length or 0)
    return run
