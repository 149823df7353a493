"""Recording: decode once and keep every step record as a Trace (see records/), or a Run of two.

A trace holds the meta facts (model, hardware, settings, prompt), one record per forward pass
(the prefill first), the text of every token id the steps mention, and the run's totals, so it
can be read and drawn with no model.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, replace

import torch
import transformers

from .device.fixed import Shape, step_passes
from .device.products import products_in_force
from .divergence import divergence
from .models import LoadedModel
from .records import (
    ENGINE_VERSION,
    METHODS,
    Divergence,
    Machine,
    Method,
    Progress,
    Run,
    StepMode,
    StepRecord,
    StepTally,
    StopReason,
    Summary,
    Trace,
    TraceMeta,
)
from .request import DecodeRequest
from .runtime import NOTHING, Runtime
from .spec import guessing_decoder, method_settings, reach, step_rows, step_shape
from .step.decoding import DecodingError, check_request, greedy_steps
from .tokens import text_pieces, vocab_for
from .working_state import plain_passes


@dataclass(frozen=True)
class DecodingPlan:
    """One decoding, settled before its first pass and carried down to it (`settle`): the request as it runs (with
    the runtime's auto settings, their W, N, G), the step mode it runs in and why that is not the mode asked for
    ("" when it is), the fixed shape of its passes (the eager step runs the rows it feeds instead), and whether its
    steps are recorded. What a record says of a decoding's settings and mode is read from its plan."""

    request: DecodeRequest
    mode: StepMode
    mode_note: str
    shape: Shape
    recorded: bool

    def shape_facts(self, runtime: Runtime) -> dict:
        """A trace meta's fixed-shape facts: the rows every pass ran and the most a step fed (both 0 for the eager
        step, whose passes run the rows they feed)."""
        if self.mode == StepMode.EAGER:
            return {"shape_rows": 0, "shape_needs": 0}
        return {"shape_rows": self.shape.rows, "shape_needs": step_rows(self.request, runtime)}


def settle(
    lm: LoadedModel, prompt_ids: list[int], request: DecodeRequest, runtime: Runtime, *, recorded: bool
) -> DecodingPlan:
    """Validate the request (DecodingError names what is missing or out of range) and settle how it runs: the one
    place a decoding's step mode (Runtime.in_mode: fixed.chosen_mode, once per runtime) and its auto settings' W, N,
    G (Runtime.settled) are decided. A plan's own request settles to the same plan."""
    if not runtime.has(METHODS[request.method].needs):
        raise DecodingError(METHODS[request.method].missing)
    settled = runtime.in_mode(lm.model)
    request = settled.settled(request)
    check_request(prompt_ids, request.max_new_tokens, lm.context_length, reach(request, runtime))
    return DecodingPlan(
        request, settled.mode, settled.mode_note, step_shape(request, runtime, len(prompt_ids)), recorded
    )


def plan_of_any_prompt(lm: LoadedModel, request: DecodeRequest, runtime: Runtime) -> DecodingPlan:
    """`request` settled as plain decoding on a one-token prompt: the settings (the auto settings' W, N, G in place)
    and the step mode every decoding of it takes, which no prompt changes; what a bench's or a tune map's report says
    its decodings ran with."""
    return settle(lm, [0], replace(request, method=Method.GREEDY), runtime, recorded=False)


def decode_steps(
    lm: LoadedModel, prompt_ids: list[int], request: DecodeRequest, runtime: Runtime = NOTHING
) -> Iterator[StepRecord]:
    """Validate the request, then yield the records of its method, one per forward pass (the stepper's path).

    The request carries the method and every method's settings, the sampling settings (a temperature above 0
    makes every method sample) and the budget of new tokens; `runtime` what the method runs with (the method
    table says what each needs: a draft, a layer, heads; with auto settings lookahead gets a fresh planner of
    their kind, else the paper's full plan), and in which step mode its passes run (fixed.chosen_mode: the
    runtime's, else the device's default, fixed.default_mode). DecodingError names what is missing or out of range.
    """
    return planned_steps(lm, prompt_ids, settle(lm, prompt_ids, request, runtime, recorded=True), runtime)


def lean_steps(
    lm: LoadedModel, prompt_ids: list[int], request: DecodeRequest, runtime: Runtime = NOTHING
) -> Iterator[StepTally]:
    """`decode_steps` as a timed lane runs it: the same steps, tokens and passes, each yielding its StepTally; no
    record is built and nothing is copied for one."""
    return planned_steps(lm, prompt_ids, settle(lm, prompt_ids, request, runtime, recorded=False), runtime)


def planned_steps(lm: LoadedModel, prompt_ids: list[int], plan: DecodingPlan, runtime: Runtime):
    """The steps of one settled decoding, recorded or tallied as its plan says."""
    request, recorded = plan.request, plan.recorded
    room = len(prompt_ids) + request.max_new_tokens
    passes = step_passes(lm.model, plan.mode, plan.shape, room, spans=runtime.spans)
    if not METHODS[request.method].guesses:
        sampling = request.sampling
        passes = plain_passes(passes, request, recorded) if runtime.device_state else passes
        return greedy_steps(
            lm.model, prompt_ids, request.max_new_tokens, lm.eos_ids, sampling, passes, recorded=recorded
        )
    return guessing_decoder(lm.model, prompt_ids, request, runtime, lm.eos_ids, passes, recorded=recorded).steps()


WARM_UP_TOKENS = 8


def reported(steps: Iterator, part: int, parts: int, method: Method, max_new_tokens: int, warming_up=False):
    """Yield a Progress after each step `steps` yields (a record or a tally); return what `steps` returns."""
    count = tokens = 0
    while True:
        try:
            record = next(steps)
        except StopIteration as done:
            return done.value
        count, tokens = count + 1, tokens + len(record.committed)
        yield Progress(
            part=part,
            parts=parts,
            method=method,
            warming_up=warming_up,
            steps=count,
            tokens=min(tokens, max_new_tokens),  # a warm-up's last step may commit past its WARM_UP_TOKENS
            max_new_tokens=max_new_tokens,
        )


def warming_up(
    lm: LoadedModel,
    prompt_ids: list[int],
    request: DecodeRequest,
    runtime: Runtime,
    methods,
    first_part: int,
    parts: int,
    until: Callable[[float], bool] | None = None,
) -> Generator[Progress, None, None]:
    """`warm_up`, one forward pass at a time: a Progress after each pass, the first numbered `first_part`.

    Each method decodes the request as asked, its budget included, but stops after WARM_UP_TOKENS tokens: so its
    passes have the shapes the timed run's will have (in a fixed-shape mode, one per method and bucket: the
    capture is made here). `until` (a deadline for all the warm-ups) is asked before every pass after a
    method's first, with the seconds since the check before (lapses): True ends the warm-ups there (a warm-up is
    untimed, so one cut short only warms less)."""
    for part, method in enumerate(methods, first_part):
        warming = replace(request, method=method)
        steps = first_tokens(lean_steps(lm, prompt_ids, warming, runtime), WARM_UP_TOKENS)
        if until is not None:
            steps = stopping(steps, until)
        yield from reported(steps, part, parts, method, WARM_UP_TOKENS, warming_up=True)
        if until is not None and until(0.0):
            return


def first_tokens(steps: Iterator[StepTally], count: int) -> Iterator[StepTally]:
    """`steps` until they have committed `count` tokens."""
    committed = 0
    for record in steps:
        yield record
        committed += len(record.committed)
        if committed >= count:
            return


def stopping(steps: Iterator[StepTally], until: Callable[[float], bool]) -> Iterator[StepTally]:
    """`steps` until `until(the seconds since the check before)` says True after a step (lapses)."""
    lapse = lapses()
    for record in steps:
        yield record
        if until(lapse()):
            return


def lapses() -> Callable[[], float]:
    """A clock for a deadline's checks: each read gives the seconds since the read before (the first, since it was
    made). Read after a step was handed on and its consumer asked for the next, it is what the next step is expected
    to take: the step and whatever the consumer did with it. A step's own seconds leave the consumer out, and a
    server's consumer (the page's update after every pass, under other visitors' events) can take longer than a
    small model's step: a Run on the app's model beside two CPU burners, checked with its steps' seconds, held the
    model 6.9 s of its 5 (a CI run, 2026-12-07), its 0.5 s reserve spent by the consumer's turns after the last
    checks. The first read after a prefill holds what the prefill set up once too (a fixed-shape mode's capture or
    compile, outside the prefill's own seconds): near the end of a share a cold decoding then stops after its
    prefill, where a step might still have fitted; the forecast errs early, never late."""
    last = time.perf_counter()

    def lapse() -> float:
        nonlocal last
        now = time.perf_counter()
        seconds, last = now - last, now
        return seconds

    return lapse


def warm_up(lm: LoadedModel, prompt_ids: list[int], request: DecodeRequest, runtime: Runtime, methods) -> None:
    """Decode a few tokens of each of `methods` with the request's settings, untimed, so that no timed run pays
    for another's cold start.

    The first passes of a method allocate, load kernels and fill caches (a draft's too); a run
    timed right after another would be charged for what the other left undone.
    """
    finished(warming_up(lm, prompt_ids, request, runtime, methods, 1, len(methods)))


def warm_up_prompts(
    lm: LoadedModel, prompts: list[list[int]], request: DecodeRequest, runtime: Runtime, methods
) -> list[list[int]]:
    """Of `prompts` (decoded in turn with `request` by `methods`), those whose warm-ups run every fixed shape the
    timed runs will: the first, then each that takes a cache bucket none before it took (the eager step has no
    fixed shapes: the first alone)."""
    seen, chosen = set(), []
    for ids in prompts:
        plans = [settle(lm, ids, replace(request, method=method), runtime, recorded=False) for method in methods]
        shapes = {plan.shape for plan in plans}
        if not chosen or (any(plan.mode != StepMode.EAGER for plan in plans) and not shapes <= seen):
            chosen.append(ids)
        seen |= shapes
    return chosen


def summarize(steps: Sequence[StepRecord | StepTally], text: str = "") -> Summary:
    """Totals of a run: committed ids, forward passes (prefill included), tokens per step, seconds."""
    new_ids = [t for record in steps for t in record.committed]
    seconds = sum(record.step_seconds for record in steps)
    return Summary(
        new_token_ids=new_ids,
        tokens=len(new_ids),
        steps=len(steps),
        tokens_per_step=len(new_ids) / len(steps) if steps else 0.0,
        seconds=seconds,
        tokens_per_second=len(new_ids) / seconds if seconds else 0.0,
        stop=steps[-1].stop if steps else None,
        text=text,
    )


def candidate_tokens(steps: Sequence[StepRecord | StepTally]) -> tuple[int, int]:
    """The candidate tokens a run verified and those accepted, over all its steps ((0, 0) for plain decoding)."""
    return sum(step.verified_tokens for step in steps), sum(step.accepted_tokens for step in steps)


def machine_facts(lm: LoadedModel) -> Machine:
    """What ran a decoding: the model, the hardware and software, and how a CPU took its products (the choice in
    force at the calling thread's count, as measured here)."""
    facts = lm.describe()
    return Machine(
        **facts,
        torch=str(torch.__version__),  # a plain str: torch gives a str subclass of its own
        transformers=transformers.__version__,
        python=platform.python_version(),
        platform=platform.platform(terse=True),
        engine=ENGINE_VERSION,
        products=products_in_force(lm.model),
    )


def tracing(
    lm: LoadedModel,
    prompt_ids: list[int],
    request: DecodeRequest,
    runtime: Runtime = NOTHING,
    prompt_text: str | None = None,
    until: Callable[[float], bool] | None = None,
) -> Generator[StepRecord, None, Trace]:
    """Decode once, yielding each step record as it is produced, and return the Trace that keeps them all.

    With the runtime's auto settings, lookahead runs their W, N, G and a fresh planner of their kind, and
    the trace keeps the measured step costs that planner weighed. `until` (a deadline) is asked before every
    step after the prefill, with the seconds since the check before (lapses: the last step and what its consumer
    did with it, what the next is expected to take; after the prefill, the prefill's, its set-up and turn
    included): once it says True, decoding stops there and the trace is partial, its stop reason DEADLINE.
    """
    plan = settle(lm, prompt_ids, request, runtime, recorded=True)
    request = plan.request
    steps, cut = [], False
    started, lapse = time.time(), lapses()
    for record in planned_steps(lm, prompt_ids, plan, runtime):
        steps.append(record)
        yield record
        upcoming = lapse()  # the next step, as this one and its consumer's turn (the first, as the prefill)
        if record.stop is None and until is not None and until(upcoming):
            cut = True
            break
    # the end-of-sequence ids are in the record (meta.eos_ids) even when neither the prompt nor the output holds one
    ids = set(prompt_ids).union(lm.eos_ids, *(record.token_ids() for record in steps))
    summary = summarize(steps)
    if cut:
        summary.stop = StopReason.DEADLINE
    summary.text = lm.tokenizer.decode(summary.new_token_ids, skip_special_tokens=True)
    meta = TraceMeta(
        method=request.method,
        max_new_tokens=request.max_new_tokens,
        prompt_text=prompt_text,
        prompt_token_ids=list(prompt_ids),
        eos_ids=sorted(lm.eos_ids),
        machine=machine_facts(lm),
        recorded_at=time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
        sampling=request.sampling.record(),
        prompt_shown=lm.tokenizer.decode(prompt_ids),
        mode=plan.mode,
        mode_note=plan.mode_note,
        **plan.shape_facts(runtime),
        settings=method_settings(request, runtime, [request.method]),
    )
    pieces = text_pieces(lm.tokenizer, [[token] for token in summary.new_token_ids])
    return Trace(meta=meta, steps=steps, vocab=vocab_for(lm.tokenizer, ids), summary=summary, pieces=pieces)


def finished(work: Generator):
    """Run a generator of work to its end and give what it returns (the convention: docs/engine.md)."""
    while True:
        try:
            next(work)
        except StopIteration as done:
            return done.value


def record_trace(
    lm: LoadedModel, prompt_ids: list[int], request: DecodeRequest, runtime: Runtime = NOTHING, **kwargs
) -> Trace:
    """`tracing` run to its end: the whole Trace at once (same arguments)."""
    return finished(tracing(lm, prompt_ids, request, runtime, **kwargs))


RUN_PARTS = 4  # a Run decodes four times: the two warm-ups, the method, plain decoding


def recording_run(
    lm: LoadedModel,
    prompt_ids: list[int],
    request: DecodeRequest,
    runtime: Runtime = NOTHING,
    prompt_text: str | None = None,
    *,
    until: Callable[[Method, float], bool] | None = None,
    parts: int = RUN_PARTS,
    warm_until: Callable[[float], bool] | None = None,
) -> Generator[Progress, None, Run]:
    """Both traces for one prompt, the request's method then plain decoding: a Progress after every forward
    pass (numbered out of `parts`, for a caller that decodes more afterwards), and the Run returned.

    Both methods are warmed up first, so neither is timed cold. A consumer that stops iterating
    stops the work between two forward passes. `until(method, upcoming)` (a deadline) is asked before
    every step after a prefill: True stops that method's trace there, partial (see `tracing`). Sampled,
    both use the same settings and seed; their outputs differ draw by draw, not in distribution.
    """
    method = request.method
    methods = (method, Method.GREEDY)
    yield from warming_up(lm, prompt_ids, request, runtime, methods, 1, parts, warm_until)

    def deadline(of: Method) -> Callable[[float], bool] | None:
        return None if until is None else lambda upcoming: until(of, upcoming)

    traced = tracing(lm, prompt_ids, request, runtime, prompt_text, deadline(method))
    trace = yield from reported(traced, 3, parts, method, request.max_new_tokens)
    greedy = replace(request, method=Method.GREEDY)
    plain = tracing(
        lm, prompt_ids, greedy, Runtime(mode=runtime.mode, costs=runtime.costs), prompt_text, deadline(Method.GREEDY)
    )
    greedy = yield from reported(plain, 4, parts, Method.GREEDY, request.max_new_tokens)
    return Run(trace=trace, greedy=greedy, divergence=parted(lm, prompt_ids, greedy, trace))


def parted(lm: LoadedModel, prompt_ids: list[int], greedy: Trace, trace: Trace) -> Divergence | None:
    """Where a greedy method's output left plain decoding's (None when sampled: draws differ by design)."""
    if trace.meta.sampling is not None:
        return None
    return divergence(lm, prompt_ids, greedy.summary.new_token_ids, trace.summary.new_token_ids)


def record_run(
    lm: LoadedModel, prompt_ids: list[int], request: DecodeRequest, runtime: Runtime = NOTHING, **kwargs
) -> Run:
    """`recording_run` run to its end: the Run alone (same arguments)."""
    return finished(recording_run(lm, prompt_ids, request, runtime, **kwargs))
