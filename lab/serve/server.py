"""This server's model work: the one model it holds, who may load what, and the GPU slots on a ZeroGPU Space.

`record` (a Run: one guessing method beside plain decoding) and `timed_race` (every method, timed)
are the only functions that touch the model. Each takes one checked ModelRequest (and the visitor's store of
earlier outputs, which suffix decoding matches and neither changes but for its order of use), yields a Progress
after every forward pass (a consumer that stops iterating stops the work between two passes), and
yields its result last with the seconds it took: on ZeroGPU, `spaces` runs each in another process inside a
GPU slot sized from its own request and passes on only what it yields (a generator's return value would be
lost), so here alone a result is yielded rather than returned (docs/engine.md). Elsewhere the decorator
changes nothing.
"""

from __future__ import annotations

try:  # ZeroGPU Spaces: `spaces` must be imported before anything touches CUDA (app.py imports it first)
    import spaces
except ImportError:
    spaces = None

import os
import time
from collections.abc import Iterator
from dataclasses import replace

from lab.measure.race import ROUNDS, raced, racing
from lab.measure.timed_run import RUN_ROUNDS, timed_run
from lab.serve import space
from lab.serve.access import access_from_environment
from lab.serve.budget import RACE_SECONDS, RESERVE, RUN_SECONDS, Deadline, Prices, fitted_tokens, round_seconds
from lab.serve.classes import Classes
from lab.serve.holding import ModelHolder
from lab.serve.line import Line
from lab.serve.questions import Answers
from lab.serve.requests import MAX_NEW_TOKENS, InputError, ModelRequest
from lab.serve.shelf import Shelf
from lab.serve.threads import running_on
from lookahead_core.methods.suffix import SuffixStore
from lookahead_core.models import encode_prompt, load_model
from lookahead_core.records import METHODS, Method, Needs, Progress, RaceRecord, Run, Timing, raced_on
from lookahead_core.request import DecodeRequest
from lookahead_core.tuning import auto_settings

ZERO_GPU = space.on_zero_gpu(spaces)
SERVER_NAME = os.environ.get("GRADIO_SERVER_NAME", "0.0.0.0")
ACCESS = access_from_environment(SERVER_NAME, ZERO_GPU)
MODEL = ModelHolder(warm=not ZERO_GPU, mode=space.step_mode(ZERO_GPU))
CAP = space.MAX_NEW_TOKENS if ZERO_GPU else MAX_NEW_TOKENS  # new tokens a request may ask for here
if ZERO_GPU:  # the platform's contract: load at module scope and move to CUDA; workers get the weights streamed
    MODEL.put(load_model(device="cpu", dtype="float32"))
    MODEL.get().lm.model.to("cuda")
SESSION_SECONDS = 3 * 3600  # a visitor's recorded run is kept this long after its last update
SHELF = Shelf(capacity=300, seconds=SESSION_SECONDS)  # recorded and opened runs, for links (?run=ID), gzipped
ANSWERS = Answers()  # one measurement per question, shared by every visitor (lab.serve.questions)
LINE = Line()  # Runs, races and sweeps hold the model alone, in turn, each told its place meanwhile (lab.serve.line)
CLASS_SECONDS = 3 * 3600  # a class ends this long after its driving page last changed what it shows
CLASSES = Classes(capacity=500, seconds=CLASS_SECONDS)  # open classes (?class=ID), each a few hundred bytes
RACES = Shelf(capacity=50, seconds=CLASS_SECONDS, kind=RaceRecord)  # the races driving pages showed their classes
GPU_WORK = []  # the functions that hold a GPU slot on ZeroGPU: all the model work there is
NO_HEADS = (
    "Medusa needs heads trained for the model: the lab ships them for SmolLM2-135M-Instruct only. Pick another method."
)
NO_LAYER = (
    "EAGLE needs a layer trained for the model: the lab ships one for SmolLM2-135M-Instruct only. Pick another method."
)
NOT_SHIPPED = {Needs.HEADS: NO_HEADS, Needs.LAYER: NO_LAYER}  # what a Run of a method says where its needs do not ship
# A ZeroGPU Space races on its GPU: a slot is sized for the lanes raced there (as many as on a CPU)
SPACE_LANES = len(raced_on("cuda"))


def on_gpu(duration):
    """On ZeroGPU, run the function with a GPU attached for `duration(*its arguments)` seconds at most."""

    def attach(fn):
        GPU_WORK.append(fn)
        return spaces.GPU(fn, duration=duration) if spaces is not None else fn

    return attach


def slot(request: ModelRequest, store: SuffixStore | None = None) -> int:
    """The GPU seconds a Run asks for: two recordings and their warm-ups (and, once, the draft's copy);
    auto may measure step costs."""
    return space.slot_seconds(request.decode.max_new_tokens, runs=3, measures_costs=request.decode.auto)


def race_slot(request: ModelRequest, store: SuffixStore | None = None) -> int:
    """The GPU seconds a race asks for: every method (Medusa's too, where heads ship), each warmed up first;
    auto may measure step costs."""
    return space.slot_seconds(request.decode.max_new_tokens, runs=SPACE_LANES + 1, measures_costs=request.decode.auto)


def expected_rounds(prices: Prices | None, decode: DecodeRequest, seconds: float, lanes: tuple[Method, ...]) -> int:
    """How many race rounds the progress bar announces first: rounds of decodings of `lanes`, each at its method's
    latest pace, that fit in `seconds` (the race itself decides from the rounds it measures)."""
    if prices is None:
        return 1
    one_round = round_seconds(prices, lanes, decode.max_new_tokens)
    return max(1, min(ROUNDS, int(seconds // max(one_round, 1e-9))))


@on_gpu(slot)
def record(request: ModelRequest, store: SuffixStore | None = None) -> Iterator[Progress | tuple[Run, float]]:
    """A Run's model work: the method's trace and the plain trace for one prompt on the model the request
    names (loaded first if another is held), then more interleaved rounds of the two while they fit in
    RUN_SECONDS (lab.measure.timed_run), a Progress after every forward pass, and last the Run with the seconds it
    all took. With auto, lookahead runs this hardware's auto settings and records each step's plan. Suffix
    decoding matches `store` (the visitor's, for this model; the caller adds the Run's output to it after).
    """
    held = MODEL.get(request.model, request.dtype)
    d = request.decode
    lm = held.lm
    auto = auto_settings(lm, held.settled) if d.auto and METHODS[d.method].window else None
    prompt_ids = encode_prompt(lm.tokenizer, request.prompt, request.chat)
    threads = held.admit(len(prompt_ids), decodings=2, seconds=RUN_SECONDS)
    started = time.perf_counter()  # a model's first load, cost curve and probe are not the request's: it starts here
    deadline = Deadline(RUN_SECONDS, reserve=RESERVE)
    runtime = held.runtime([d.method], tokens=d.draft_tokens, auto=auto, deadline=deadline, store=store)
    needs = METHODS[d.method].needs
    if not runtime.has(needs):
        raise InputError(NOT_SHIPPED[needs])
    paced = (d.method, Method.GREEDY)
    fitted = replace(d, max_new_tokens=fitted_tokens(held.prices, d.max_new_tokens, paced, RUN_SECONDS, RUN_ROUNDS))
    run = yield from running_on(threads, timed_run(lm, prompt_ids, fitted, runtime, request.prompt))
    run.timing = as_asked(run.timing, d, fitted)
    yield run, time.perf_counter() - started  # the result yielded last: spaces passes on only what is yielded


@on_gpu(race_slot)
def timed_race(
    request: ModelRequest, store: SuffixStore | None = None
) -> Iterator[Progress | tuple[RaceRecord, float]]:
    """A race's model work on the model the request names: every method on the prompt, timed with nothing
    drawn (auto: W, N, G from measured costs; suffix decoding matching `store`), a Progress after every forward
    pass, and last the race with its seconds. The race runs interleaved rounds while they fit in RACE_SECONDS
    (lab.measure.race)."""
    held = MODEL.get(request.model, request.dtype)
    d = request.decode
    lm = held.lm
    costs = held.settled.costs  # the curve of the mode the held model's runs take
    prompt_ids = encode_prompt(lm.tokenizer, request.prompt, request.chat)
    auto = auto_settings(lm, held.settled) if d.auto else None  # as a Run's: the adopted settings, where adopted
    runtime = held.runtime(raced_on(lm.device.type), tokens=d.draft_tokens, auto=auto, store=store)
    lanes = raced(runtime, lm.device.type)
    threads = held.admit(len(prompt_ids), decodings=len(lanes), seconds=RACE_SECONDS)
    started = time.perf_counter()  # a model's first load, cost curve and probe are not the request's: it starts here
    runtime = replace(runtime, deadline=Deadline(RACE_SECONDS, reserve=RESERVE))
    fitted = replace(d, max_new_tokens=fitted_tokens(held.prices, d.max_new_tokens, lanes, RACE_SECONDS, ROUNDS))
    rounds = expected_rounds(held.prices, fitted, RACE_SECONDS, lanes)
    result = yield from running_on(threads, racing(lm, prompt_ids, fitted, runtime, costs, rounds))
    result.timing = as_asked(result.timing, d, fitted)
    yield result, time.perf_counter() - started  # the result yielded last: spaces passes on only what is yielded


def as_asked(timing: Timing, asked: DecodeRequest, fitted: DecodeRequest) -> Timing:
    """The timing of the `fitted` request, with the new tokens `asked` for where the machine's pace made it fewer."""
    if fitted.max_new_tokens == asked.max_new_tokens:
        return timing
    return replace(timing, asked_tokens=asked.max_new_tokens)
