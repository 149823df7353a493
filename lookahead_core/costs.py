"""The measured cost of one forward pass against the number of tokens it is fed, on this hardware.

On a GPU a step of a hundred tokens costs about what a step of one does; on a CPU the cost grows
with every token. Lookahead pays off only when the tokens a step commits outgrow what the wider
step costs, so the auto settings start from this curve: measured once per model, device and
dtype, and kept as JSON in the user cache folder. It is measured in the step mode that runs there (fixed.py): the
eager step on a GPU is launch overhead and flat, a captured one pays for its rows (on an H200 a captured lookahead
step of 121 rows took 7.1-8.6 ms whole, plain decoding's 4.1-4.2 ms), so the eager curve would pick a window too
wide for it. The compiled mode is priced by the CUDA graph's curve: a compile per size would take minutes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import re
import statistics
import time
from functools import cached_property, partial

import torch

from .cache import cache_root
from .device.capture import capture_for
from .device.fixed import FixedPasses, chosen_mode, failed, shape_for
from .device.forward import forward_tree, keep_rows, prefill
from .device.product_ways import SIZES, fingerprint
from .models import LoadedModel
from .records import StepCostCurve, StepMode
from .tree.attention import attention_plan
from .tree.layout import chain_layout

CONTEXT = 256  # a prompt plus a few dozen new tokens: where the bench's steps run
PAD_GAIN = 0.9  # a fixed shape is widened only to a size at most this share of its cost (nearer, noise decides)


class StepCosts(StepCostCurve):
    """The measured curve (see records.StepCostCurve), read as the cost of a step of any width."""

    @classmethod
    def of(cls, curve: StepCostCurve) -> StepCosts:
        return cls(**dataclasses.asdict(curve))

    def curve(self) -> StepCostCurve:
        """The same figures as the records hold them (a record compares equal only to its own class)."""
        return StepCostCurve(**dataclasses.asdict(self))

    def relative(self, tokens: int) -> float:
        """The cost of feeding `tokens` tokens, in units of a one-token step (linear between sizes)."""
        return self.seconds_for(tokens) / self.seconds[0]

    def fitted_relative(self, tokens: int) -> float:
        """The same from a least-squares line through every measured size: robust to one noisy timing."""
        n = len(self.sizes)
        mean_x, mean_y = sum(self.sizes) / n, sum(self.seconds) / n
        spread = sum((x - mean_x) ** 2 for x in self.sizes)
        slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(self.sizes, self.seconds, strict=True)) / spread
        slope = max(slope, 0.0)
        intercept = mean_y - slope * mean_x
        one = max(intercept + slope, 1e-12)
        return (intercept + slope * tokens) / one

    def cheapest_rows(self, rows: int) -> int:
        """The rows a fixed shape that must hold `rows` runs: the measured size above `rows` that costs least,
        where it costs at most PAD_GAIN of `rows` (its pad rows are exact: each sees only itself, fixed.py), else
        `rows`. A captured GPU step's curve dips: on an H200 a 16-row step cost 1.9 one-row steps and a 24-row
        step 1.3 (docs/tune.md), so a step of 8 to 16 rows runs cheaper as 24. A rising curve (a CPU's) keeps
        every shape as it is."""
        wider = [(seconds, size) for size, seconds in zip(self.sizes, self.seconds, strict=True) if size > rows]
        if not wider:
            return rows
        seconds, size = min(wider)
        return size if seconds <= PAD_GAIN * self.seconds_for(rows) else rows

    def seconds_for(self, tokens: int) -> float:
        sizes, seconds = self.sizes, self.seconds
        if tokens <= sizes[0]:
            return seconds[0]
        for (a, ta), (b, tb) in itertools.pairwise(zip(sizes, seconds, strict=True)):
            if tokens <= b:
                return ta + (tb - ta) * (tokens - a) / (b - a)
        slope = max((seconds[-1] - seconds[-2]) / (sizes[-1] - sizes[-2]), 0.0)  # never cheaper than the widest
        return seconds[-1] + slope * (tokens - sizes[-1])


def measure_step_costs(
    lm: LoadedModel, sizes=SIZES, context: int = CONTEXT, repeats: int | None = None, mode: StepMode = StepMode.EAGER
) -> StepCosts:
    """Time one forward pass of each size (a causal chain after a `context`-token prefix) in step `mode`; the
    median of `repeats`.

    The sizes are interleaved (every size once per round, `repeats` rounds after one untimed round that
    warms allocators and kernels, and records a capture), so a burst of load elsewhere lands on every size alike
    instead of bending the curve at one width. A GPU step of a small model lasts milliseconds and jitters with the
    host, so it is timed 20 times (default); a CPU step 5 times.
    """
    repeats = repeats or (20 if lm.device.type == "cuda" else 5)
    generator = torch.Generator().manual_seed(0)
    prefix = torch.randint(0, lm.model.config.vocab_size, (context,), generator=generator).tolist()
    timers, release = pass_timers(lm, prefix, sizes, mode, repeats + 1)
    timings: list[list[float]] = [[] for _ in sizes]
    try:
        for attempt in range(repeats + 1):
            for i, timer in enumerate(timers):
                seconds = timer()
                if attempt:
                    timings[i].append(seconds)
    finally:
        release()
    facts = lm.describe()
    return StepCosts(
        sizes=list(sizes),
        seconds=[statistics.median(t) for t in timings],
        context=context,
        hardware=facts["device_name"],
        model=lm.name,
        dtype=facts["dtype"],
        measured_at=time.strftime("%Y-%m-%dT%H:%M:%S"),
    )


def pass_timers(lm: LoadedModel, prefix: list[int], sizes, mode: StepMode, rounds: int):
    """One timer per size (a call runs one pass of that many rows after `prefix`, returns its seconds) and the
    function that gives their buffers back. Eager: one cache, cropped back to the prefix after each pass. A fixed
    mode: one decoding per size in its own shape, each pass keeping one row, so `rounds` passes fit its cache."""
    plan = attention_plan(lm.model.config)
    if mode == StepMode.EAGER:
        cache, _ = prefill(lm.model, prefix)

        def eager(size: int):
            seconds = forward_tree(lm.model, cache, prefix[:size], chain_layout(size), plan).seconds
            keep_rows(cache, len(prefix), [])
            return seconds

        return [partial(eager, size) for size in sizes], lambda: None
    decodings = []
    for size in sizes:  # steps of their own, freed after: a curve's shapes are not a decoding's
        shape = shape_for(rows=size, reach=0, room=len(prefix) + rounds)
        passes = FixedPasses(lm.model, shape, capture_for(mode), registered=False)
        decodings.append(passes)
        passes.prefill(prefix)

    def fixed(passes, size: int):
        seconds = passes.tree(prefix[:size], chain_layout(size), plan).seconds
        passes.keep(())
        return seconds

    def release():
        for passes in decodings:
            passes.release()

    return [partial(fixed, passes, size) for passes, size in zip(decodings, sizes, strict=True)], release


# A cached curve is measured again when the engine's passes change what they cost (2: products.py; 3: the products
# chosen by measurement on each machine, product_ways.py)
CURVE_VERSION = 3


def costs_path(lm: LoadedModel, mode: StepMode = StepMode.EAGER):
    """Where the curve of `lm` in `mode` is cached: by model (its name and parameter count: a folder whose model was
    replaced, or a model cut to fewer layers, is another), device, dtype and mode, and on a CPU by the machine's
    fingerprint (the products' choice and the curve hold for that machine only)."""
    facts = lm.describe()
    mode_key = "" if mode == StepMode.EAGER else f"-{mode}"
    model = f"{lm.name}-{facts['parameters']}p"
    key = re.sub(r"[^A-Za-z0-9.]+", "-", f"{model}-{facts['device_name']}-{facts['dtype']}{mode_key}").strip("-")
    if lm.device.type == "cpu":
        machine = json.dumps(fingerprint(lm.dtype), sort_keys=True).encode()
        key += f"-{hashlib.sha256(machine).hexdigest()[:12]}"
    return cache_root() / "step-costs" / f"{key}-v{CURVE_VERSION}.json"


@dataclasses.dataclass(frozen=True)
class SettledMode:
    """The step mode a model's runs take when asked for one, why it is not the one asked ("" where it is), and
    that mode's cost curve (the CUDA graph's for the compiled mode): settled together by `settled_mode`, once for
    a held model, a command or a check, and carried to every runtime, price and auto setting made for it."""

    lm: LoadedModel = dataclasses.field(repr=False, compare=False)
    mode: StepMode
    note: str
    measured: StepCosts | None = dataclasses.field(default=None, repr=False)  # the curve, where settling measured it

    @cached_property
    def costs(self) -> StepCosts:
        """The mode's curve: the one settling measured, else (the eager step's, which no shape can fail) read from
        the cache or measured on first use: a run at given W, N, G needs none."""
        return self.measured if self.measured is not None else step_costs(self.lm, self.mode)

    @property
    def shape_costs(self) -> StepCosts | None:
        """The costs a fixed shape is widened on (Runtime.costs): None for the eager step, which has no shape. A
        CPU's fixed-shape curve rises, so there it widens nothing."""
        return None if self.mode == StepMode.EAGER else self.costs


def settled_mode(lm: LoadedModel, asked: StepMode | None = None, refresh: bool = False) -> SettledMode:
    """The step mode a run of `lm` asking for `asked` takes (fixed.chosen_mode; None: the device's default) with its
    cost curve (`refresh`: measured again). A mode other than the eager step has its curve measured here, from the
    cache or now: where a wider shape fails, the mode is marked failed for the model and the settled mode is the
    eager step, saying why. A settled mode asked again settles to itself."""
    mode, note = chosen_mode(lm.model, asked)
    if mode == StepMode.EAGER:
        return SettledMode(lm, mode, note, step_costs(lm, mode, refresh) if refresh else None)
    try:
        return SettledMode(lm, mode, note, step_costs(lm, mode, refresh))
    except Exception as error:  # a wider shape's capture failed: the mode fails on this model, its runs go eager
        failed(lm.model, mode, error)
        return settled_mode(lm, asked, refresh)


def step_costs(lm: LoadedModel, mode: StepMode, refresh: bool = False) -> StepCosts:
    """The cost curve of `lm` on its device and dtype in the settled step `mode` (compiled: the CUDA graph's): from
    the cache, or measured now (`refresh`: measured again) and cached. Raises what a failing wider shape raised."""
    mode = StepMode.CUDA_GRAPH if mode == StepMode.COMPILED else mode
    path = costs_path(lm, mode)
    if path.exists() and not refresh:
        try:
            return StepCosts(**json.loads(path.read_text()))  # the same fields as the records' curve
        except (ValueError, TypeError):
            pass  # a damaged cache file is measured again
    costs = measure_step_costs(lm, mode=mode)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dataclasses.asdict(costs), indent=1))
    return costs
