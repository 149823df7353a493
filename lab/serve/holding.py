"""The one model a server holds for all its visitors, loaded on demand under a lock.

A request names its model; `ModelHolder.get` loads it when another is held, and hands the request
one `Held` to use from start to end, so a switch between two of its passes cannot mix two models.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import torch

from lab.serve.budget import (
    FRESH_SECONDS,
    PROBE_TOKENS,
    WARM_UP_PROMPT,
    Prices,
    TooBusy,
    check_budget,
    fit,
    probe,
    warmed_prices,
)
from lab.serve.threads import ThreadChoice, torch_threads
from lab.train.heads import Aids, runtime_for, ships
from lookahead_core.config import DEFAULT_DRAFT_TOKENS
from lookahead_core.costs import SettledMode, settled_mode
from lookahead_core.models import DEFAULT_MODEL, DTYPES, LoadedModel, encode_prompt, load_model
from lookahead_core.records import METHODS, Fit, Machine, Method, Needs, StepKind, StepMode, raced_on
from lookahead_core.request import DecodeRequest
from lookahead_core.runtime import Runtime
from lookahead_core.trace import decode_steps, machine_facts

AIDED = {Needs.NOTHING, Needs.DRAFT}  # what every held model's methods have (the draft: its own bfloat16 copy)


@dataclass
class Held:
    """One loaded model and what is made from it: its prices on this hardware (None: not priced), its settled
    step mode and, each on first use, its bfloat16 copy (the speculative draft) and its Medusa heads and EAGLE
    layer, where they ship (`aids`). Its work asks for step mode `mode` (None: the device's default,
    fixed.default_mode): the server's (lab.serve.space.step_mode), settled once with its curve (`settled`) and
    carried to every runtime, price and probe."""

    lm: LoadedModel
    prices: Prices | None = None
    threads: ThreadChoice | None = None  # the torch threads its work runs on (None: a GPU's, or not chosen yet)
    mode: StepMode | None = None
    kept: SettledMode | None = field(default=None, init=False)
    made: Aids | None = field(default=None, init=False)

    @property
    def settled(self) -> SettledMode:
        """The step mode this model's runs take, why, and its curve (costs.settled_mode), settled on first use,
        before any request's time starts (a GPU's first curve is measured then), and kept."""
        if self.kept is None:
            self.kept = settled_mode(self.lm, self.mode)
        return self.kept

    @property
    def aids(self) -> Aids:
        """The draft, heads and layer made for this model (its heads fitted to its settled curve), kept."""
        if self.made is None:
            self.made = Aids(self.lm, settled=self.settled)
        return self.made

    def admit(self, prompt_tokens: int, decodings: int, seconds: float) -> int:
        """The one gate of every card's model work (a Run, a race, a sweep), asked before its time starts: the torch
        threads for the machine as it is now (returned: the work runs on them, threads.running_on), prices renewed
        by a probe where their evidence is stale or was taken on another count, and BudgetError only for work of
        which not even a first token fits in `seconds` after its `decodings`' warm-ups (budget.check_budget). This OS
        thread's own count is left as it was, so the step-cost curves (cached per count) are read as measured."""
        if self.threads is None:
            threads, renew = torch.get_num_threads(), False
        else:
            before = self.threads.threads
            threads = self.threads.choose()
            renew = threads != before
        if self.prices is not None:
            with torch_threads(threads):
                self.judge(prompt_tokens, decodings, seconds, renew)
        return threads

    def judge(self, prompt_tokens: int, decodings: int, seconds: float, renew: bool) -> None:
        """BudgetError for work that does not fit (budget.check_budget), judged on fresh prices: renewed by a probe
        first where asked or where their evidence is stale. A refusal for the machine's load (TooBusy) is said only when
        a second probe, taken after it, agrees: a probe's few steps can catch a stall that is not the machine's pace
        (a Run was refused at 14.3x beside two CPU burners and a second test worker, the 2-core AMD EPYC (Zen 3),
        2026-12-07)."""
        if renew or self.prices.age() > FRESH_SECONDS:
            probe(self.lm, self.prices, self.settled)
        try:
            check_budget(self.prices, prompt_tokens, decodings, seconds, self.load_words())
        except TooBusy:
            probe(self.lm, self.prices, self.settled)
            check_budget(self.prices, prompt_tokens, decodings, seconds, self.load_words())

    def runtime(self, methods, **given) -> Runtime:
        """What `methods` run with for one request (heads.runtime_for): this model's aids, its prices learning
        from the run, its step mode, and without heads or a layer where none ship (`Runtime.has` says); `given` the
        rest."""
        learn = self.prices.learn if self.prices is not None else None
        return runtime_for(self.lm, methods, self.aids, learn=learn, lenient=True, settled=self.settled, **given)

    def load_words(self) -> str:
        """What other programs used of this CPU at the latest reading, as a clause for a refusal (or nothing)."""
        choice = self.threads
        if choice is None or choice.others is None:
            return ""
        return f" (other programs used {choice.others:.1f} of its {choice.cores} cores)"


class ModelHolder:
    """One loaded model for the whole server, loaded on demand under a lock: the one a request names.

    A request for another model (or dtype) loads it and lets the previous one go once no request uses
    it; a model that fails to load leaves the held one in place. With `warm`, a model is warmed up
    once after loading and its work priced on this hardware (budget.warmed_prices); on ZeroGPU each
    request warms up in its own GPU slot instead. Every model's work asks for step mode `mode` (Held.mode).
    """

    def __init__(self, warm: bool = True, mode: StepMode | None = None) -> None:
        self._held: Held | None = None
        self._warm, self._mode = warm, mode
        self._lock = threading.Lock()

    def get(self, choice: str = DEFAULT_MODEL, dtype: str = "auto") -> Held:
        """The model `choice` (DEFAULT_MODEL, GEMMA, a hub id or a folder) in `dtype`, loaded if another is held.

        Raises ModelLoadError or UnsupportedModel (the held model stays) for one that cannot be used.
        """
        with self._lock:
            if self._held is None or not holds(self._held.lm, choice, dtype):
                lm = load_model(None if choice == DEFAULT_MODEL else choice, dtype=dtype)
                self._held = Held(lm, mode=self._mode)
            if self._warm and self._held.prices is None:
                held = self._held
                held.threads = chosen_threads(held.lm)
                held.prices, held.kept = warmed_prices(held.lm, held.aids.draft(DEFAULT_DRAFT_TOKENS), held.settled)
                held.aids.settled = held.kept  # a curve measured again: the heads, made on first use, fit to it
            return self._held

    def put(self, lm: LoadedModel) -> None:
        with self._lock:
            self._held = Held(lm, mode=self._mode)

    def held_model(self) -> LoadedModel | None:
        """The model held now (None: none yet)."""
        held = self._held
        return held.lm if held is not None else None

    def facts(self) -> Machine | None:
        held = self._held
        return machine_facts(held.lm) if held is not None else None

    def fit(self, rounds: int) -> Fit | None:
        """What fits in a request's time at the held model's latest prices (None: none held, or unpriced), a race
        counted with the methods it runs there: those the table races on the device, Medusa and EAGLE where their
        heads or layer ship for the model (heads.ships)."""
        held = self._held
        if held is None or held.prices is None:
            return None
        needs = {method: METHODS[method].needs for method in raced_on(held.lm.device.type)}
        lanes = [method for method, need in needs.items() if need in AIDED or ships(held.lm, need)]
        return fit(held.prices, rounds, lanes)

    def loading(self, choice: str, dtype: str) -> bool:
        """Whether a request for `choice` would load it first (it is not the held model)."""
        held = self._held
        return held is None or not holds(held.lm, choice, dtype)


def chosen_threads(lm: LoadedModel) -> ThreadChoice | None:
    """The torch threads for a CPU model, measured on a few plain steps at each count (None on a GPU)."""
    if lm.device.type != "cpu":
        return None
    prompt_ids = encode_prompt(lm.tokenizer, WARM_UP_PROMPT, chat=False)
    plain = DecodeRequest(max_new_tokens=PROBE_TOKENS, method=Method.GREEDY)

    def steps() -> list[float]:
        return [r.step_seconds for r in decode_steps(lm, prompt_ids, plain) if r.kind == StepKind.DECODE]

    choice = ThreadChoice()
    choice.measure(steps)
    return choice


def holds(lm: LoadedModel, choice: str, dtype: str) -> bool:
    """Whether `lm` is the model `choice` in `dtype` (auto: in whatever dtype it was loaded)."""
    return lm.name == choice and (dtype == "auto" or lm.dtype == DTYPES.get(dtype))
