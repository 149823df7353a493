"""One spec per method (method_spec.MethodSpec: what it is, its entry in the method table, records.METHODS: its
names and words, what it needs, its branch, its look; how the engine runs it, `Guessing`: its proposer, its reach and
rows, its settings as records hold them; its device-resident form, `Resident`; its sweep), each built-in
one its method's module's `SPEC` (methods/), registered in one place (`register`).

The records, the visuals, the bench, the race and the Run read the tables a registration fills (records.METHODS,
GUESSING, working_state.RESIDENT), so a method added with `register` (a new name from `Method.add`) runs wherever
the built-in ones do. Greedy guesses nothing: its spec has no Guessing, and it runs the plain loop
(decoding.greedy_steps).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from .device.fixed import Shape, shape_for
from .device.forward import Passes
from .method_spec import Guessing, MethodSpec, Swept
from .methods import draft, eagle, lookahead, lookup, medusa, suffix
from .records import METHODS, Method, MethodSettings
from .request import DecodeRequest
from .runtime import Runtime
from .step.decoding import GuessingDecoder
from .working_state import RESIDENT, OnDeviceDecoder, takes

# Each registered method's guessing and sweep, by method (its device form: working_state.RESIDENT)
GUESSING: dict[Method, Guessing] = {}
SWEPT: dict[Method, Swept] = {}


def register(spec: MethodSpec) -> MethodSpec:
    """Add `spec`'s method everywhere a method is read: its name to `Method` (and so to the bench's entrants), its
    entry to records.METHODS, its Guessing to GUESSING, its device form to working_state.RESIDENT, its sweep to
    SWEPT."""
    method = Method.add(spec.method.value, spec.method.name)
    METHODS[method] = spec.entry
    for table, part in ((GUESSING, spec.guessing), (RESIDENT, spec.resident), (SWEPT, spec.swept)):
        if part is not None:
            table[method] = part
    return spec


@contextmanager
def registered(spec: MethodSpec) -> Iterator[MethodSpec]:
    """`spec` registered while the block runs, then removed from every table (a method tried for a while)."""
    register(spec)
    try:
        yield spec
    finally:
        for table in (METHODS, GUESSING, RESIDENT, SWEPT):
            table.pop(spec.method, None)
        Method.remove(spec.method.value)


# The built-in methods: plain decoding, then each guessing method's spec, beside its proposer in methods/
BUILT_IN = (
    MethodSpec(entry=METHODS[Method.GREEDY]),
    lookahead.SPEC,
    lookup.SPEC,
    draft.SPEC,
    eagle.SPEC,
    medusa.SPEC,
    suffix.SPEC,
)
for built_in in BUILT_IN:
    register(built_in)


def reach(request: DecodeRequest, runtime: Runtime) -> int:
    """How far past the current token a step of the request's method may feed rows (0 for greedy)."""
    guessing = GUESSING.get(request.method)
    return guessing.reach(request, runtime) if guessing is not None else 0


def method_settings(request: DecodeRequest, runtime: Runtime, methods: Iterable[Method]) -> MethodSettings:
    """The settings of `methods` as records hold them, each with the request's and the runtime's (the others None:
    a trace's are its own method's, a race's its lanes', a bench's its entrants'; a method that records none, None)."""
    recorded = {method: GUESSING[method].recorded(request, runtime) for method in methods if method in GUESSING}
    return MethodSettings(**{method.name.lower(): kept for method, kept in recorded.items() if kept is not None})


def step_rows(request: DecodeRequest, runtime: Runtime) -> int:
    """The most rows a step of the request's method feeds (greedy: one)."""
    guessing = GUESSING.get(request.method)
    return guessing.rows(request, runtime) if guessing is not None else 1


def step_shape(request: DecodeRequest, runtime: Runtime, prompt_length: int) -> Shape:
    """The fixed shape of the request's steps (greedy: one row, nothing past it), its cache sized for the prompt
    and every new token; its rows the cheapest size on the runtime's step costs that holds step_rows
    (StepCosts.cheapest_rows; without costs, step_rows)."""
    guessing = GUESSING.get(request.method)
    rows = step_rows(request, runtime)
    if runtime.costs is not None:
        rows = runtime.costs.cheapest_rows(rows)
    hidden = guessing is not None and guessing.keep_hidden
    return shape_for(rows, reach(request, runtime), prompt_length + request.max_new_tokens, hidden)


def guessing_decoder(
    model,
    prompt_ids: list[int],
    request: DecodeRequest,
    runtime: Runtime,
    eos_ids,
    passes: Passes | None = None,
    *,
    recorded: bool = True,
) -> GuessingDecoder:
    """The decoder of a guessing method (the request's), its planner fresh from the runtime, its passes `passes`
    (the eager step's when None), yielding records when `recorded`, else tallies; lookahead's steps on the device
    where the runtime allows it and working_state.takes the decoding."""
    guessing = GUESSING[request.method]
    make_proposer = guessing.proposer(model, prompt_ids, request, runtime)
    planner = runtime.planner(request.method)
    on_device = runtime.device_state and takes(request, passes, planner, recorded)
    return (OnDeviceDecoder if on_device else GuessingDecoder)(
        model,
        prompt_ids,
        request,
        make_proposer,
        eos_ids,
        planner=planner,
        keep_hidden=guessing.keep_hidden,
        passes=passes,
        recorded=recorded,
    )
