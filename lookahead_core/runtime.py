"""What a method runs with besides its request's settings, as one frozen bundle built once by the lab.

The request (request.py) says what to decode and with which settings; the runtime holds the objects a
decoding runs with: this hardware's auto settings (each decoding gets a fresh planner of their kind), the
draft model, the EAGLE layer, Medusa's heads, suffix decoding's store of earlier outputs, the request's
deadline, what learns from every decoding's records (the budget's prices), the step mode (eager, fixed,
cuda-graph, compiled: fixed.py) and that mode's step costs, which widen a fixed shape to the cheapest size that
holds it. Every entry of the engine and the lab takes it whole.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from .costs import SettledMode, StepCosts
from .device.fixed import chosen_mode
from .methods.draft import Draft
from .methods.medusa import Medusa
from .methods.suffix import SuffixStore
from .records import METHODS, Method, Needs, StepMode, StepRecord, StepTally
from .request import DecodeRequest
from .step.planning import StepPlanner
from .tuning import AutoSettings


class Deadline(Protocol):
    """A request's time (the lab's `budget.Deadline`): what is left, and the tests a decoding asks before a step."""

    seconds: float

    def left(self) -> float: ...

    def passed(self, upcoming: float = 0.0) -> bool: ...

    def share(self, decodings_left: int) -> Callable[..., bool]: ...

    def shares(self, methods) -> Callable[..., bool]: ...


@dataclass(frozen=True, kw_only=True)
class Runtime:
    """The objects a method runs with; each method takes what its table entry needs (`has` says whether it is
    here) and leaves the rest."""

    auto: AutoSettings | None = None  # lookahead at this hardware's auto settings, with a planner of their kind
    plan: Callable[[], StepPlanner] | None = None  # a fresh planner per decoding, in place of the auto settings' kind
    draft: Draft | None = None  # speculative decoding's draft model
    layer: Draft | None = None  # EAGLE's layer, drafting as a Draft
    heads: Medusa | None = None  # Medusa's heads with their tree
    store: SuffixStore | None = None  # suffix decoding's earlier outputs (None: a cold store, this run's text only)
    deadline: Deadline | None = None  # the request's time (the lab's; the engine asks only the callables it gets)
    # takes every timed decoding's steps, with its method (whose pace the budget's prices keep)
    learn: Callable[[list[StepRecord | StepTally], Method], None] | None = None
    mode: StepMode | None = None  # the step mode asked (None: the device's, fixed.default_mode); settled: the one run
    mode_note: str | None = None  # why the mode run is not the one asked ("" when it is); None: not settled yet
    costs: StepCosts | None = None  # that mode's step costs: a fixed shape runs their cheapest size that holds it
    # A timed lane's greedy fixed-shape steps (plain decoding and working_state.RESIDENT's methods) keep their
    # working state on the device; False: on the host (the step before it, for the GPU check's split).
    device_state: bool = True
    # A fixed-shape pass reads its span of the cache (fixed.span_for); False: the whole cache, the step before spans
    # (for the GPU check's split).
    spans: bool = True

    def has(self, needs: Needs) -> bool:
        """Whether what a method needs is here."""
        held = {Needs.NOTHING: self, Needs.DRAFT: self.draft, Needs.LAYER: self.layer, Needs.HEADS: self.heads}
        return held[needs] is not None

    def planner(self, method: Method) -> StepPlanner | None:
        """A fresh planner for one decoding of `method`, for a method with a window: `plan`'s, or the auto
        settings' kind, or None (the paper's full plan). The other methods feed all they propose."""
        if not METHODS[method].window:
            return None
        if self.plan is not None:
            return self.plan()
        return self.auto.make_planner() if self.auto is not None else None

    @classmethod
    def in_settled(cls, settled: SettledMode, **parts) -> Runtime:
        """A runtime of `parts` in the `settled` step mode (costs.settled_mode): the mode, why it is not the one
        asked, and the curve its fixed shapes widen on."""
        return cls(mode=settled.mode, mode_note=settled.note, costs=settled.shape_costs, **parts)

    def in_mode(self, model) -> Runtime:
        """This runtime with its step mode settled for `model`: the mode its decodings run and why that is not the
        mode asked (fixed.chosen_mode, asked here once; a settled runtime is returned as it is): trace.settle's, for
        a runtime built without a settled mode (the lab's builders give theirs one, costs.settled_mode)."""
        if self.mode_note is not None:
            return self
        mode, note = chosen_mode(model, self.mode)
        return replace(self, mode=mode, mode_note=note)

    def settled(self, request: DecodeRequest) -> DecodeRequest:
        """`request` with the auto settings' W, N, G in place of its own, when there are auto settings."""
        return replace(request, lookahead=self.auto.config) if self.auto is not None else request


NOTHING = Runtime()  # a runtime for the methods that need nothing: greedy, lookahead at its W, N, G, prompt lookup
