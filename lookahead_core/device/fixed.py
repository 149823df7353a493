"""The fixed-shape step: every pass after the prefill feeds exactly T rows into a static KV cache, so that a CUDA
graph or torch.compile can record it once per shape and replay it (capture.py); and which step mode a run takes.

A shape is (T rows, D rows kept, C committed positions, hidden states or not): T is the most rows the method and
its settings can feed (the step's token tree padded to T: a pad row sees only itself), D = 1 + the method's reach
(c and the longest path a step can accept), C a power-of-two bucket of the positions a request can commit. The
cache holds C + T positions. A pass writes its rows at [L, L + T) (L a 0-d device tensor: the committed positions),
and attends to the first S key columns only, its span: L + T rounded up to SPAN (`span_for`), so a pass reads the
filled length of the cache, not all of it; each span is its own recording. Its mask is "column < L" and, over
[L, L + T), the T x T pattern of the tree, and on sliding-window layers also no key at or before a row's position -
window (one mask per layer type, as forward.py passes); its position ids are L + depth. After verification D rows
(c, the accepted rows, then anything) are copied down to [L, L + D) on the device and L advances by what was kept:
rows past L are masked and overwritten later, so over-copying is harmless. One read back per pass: the T rows'
argmax as int32, written with the rows' hidden states into the step's own buffers; the logits stay on the device
for sampled verification. The host still proposes, verifies, commits and records as in the eager step (or, in a
timed lane, working_state.py does it on the device), so the records cannot tell the modes apart. A shape's first
prefill is eager (its cache copied in makes the buffers); after it a prompt of at most CHUNKED_PREFILL passes goes
through the captured pass, T rows at a time (`FixedPasses.chunked`). The buffers of a shape live as long as the
model and are reused by every decoding of that shape, one at a time, so a capture of them is made once per span.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial

import torch
from transformers.cache_utils import Cache, DynamicCache, StaticLayer

from ..records import StepMode
from ..tree.attention import FULL, SLIDING, AttentionPlan, UnsupportedModel, attention_plan
from ..tree.layout import StepLayout, chain_layout
from .capture import as_it_is, capture_for
from .forward import EagerPasses, Pass, plain_head, prefill, synchronize
from .products import attention_kernels, engine_model

SMALLEST_BUCKET = 256  # committed positions of the smallest static cache; each bucket after it doubles
SPAN = 64  # a pass's key columns are a multiple of this: each span a recording, a pass reading what L + T fills
CHUNKED_PREFILL = 3  # a captured step takes a prompt of at most this many of its passes through them (`chunked`)


@dataclass(frozen=True)
class Shape:
    """One fixed shape: `rows` fed per pass (T), `kept` rows copied down after it (D), `capacity` committed
    positions (C), and whether a pass returns its rows' last hidden states."""

    rows: int
    kept: int
    capacity: int
    hidden: bool = False


def bucket(positions: int) -> int:
    """The smallest power of two, at least SMALLEST_BUCKET, that holds `positions`."""
    return max(SMALLEST_BUCKET, 1 << (positions - 1).bit_length())


def span_for(length: int, shape: Shape) -> int:
    """The key columns a pass after `length` committed positions reads: L + T rounded up to SPAN, at most C + T."""
    return min(shape.capacity + shape.rows, -(-(length + shape.rows) // SPAN) * SPAN)


def shape_for(rows: int, reach: int, room: int, hidden: bool = False) -> Shape:
    """The shape of a request whose passes feed at most `rows` rows reaching `reach` past c, with `room` positions
    for the prompt and the new tokens (the copy-down may write D - 1 past the last committed one)."""
    kept = 1 + reach
    return Shape(rows=rows, kept=kept, capacity=bucket(room + kept), hidden=hidden)


# ----------------------------------------------------------------------------------------------
# The static cache: C committed positions and room for a pass's T rows after them


class SpanLayer(StaticLayer):
    """A static layer whose every update writes the pass's rows at `slots` (L, L + 1, ..., a tensor the step sets
    before each pass) and returns the first `span` key columns; its sequence length is the step's L (a model that
    asks for it gets the committed positions, as a tensor)."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, length: torch.Tensor, slots: torch.Tensor) -> None:
        super().__init__(max_cache_len=keys.shape[2])
        self.keys, self.values, self.is_initialized = keys, values, True
        self.cumulative_length, self.slots, self.span = length, slots, keys.shape[2]
        torch._dynamo.mark_static_address(keys)  # a fixed address, so a capture may keep it
        torch._dynamo.mark_static_address(values)

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        self.keys.index_copy_(2, self.slots, key_states)
        self.values.index_copy_(2, self.slots, value_states)
        return self.keys[:, :, : self.span], self.values[:, :, : self.span]


def span_cache(
    dynamic: DynamicCache, shape: Shape, length: torch.Tensor, slots: torch.Tensor
) -> tuple[Cache, list[torch.Tensor]]:
    """A cache of `shape` with each layer's heads, width and dtype as in `dynamic` (a prefill's), zeroed, its
    committed positions `length`, a pass's rows written at `slots`; and its blocks: every layer's keys and values
    are views into one tensor per size and dtype (layer, batch, heads, positions, width), so that the copy-down
    moves every layer's rows in two kernels, not four a layer (on a GPU each is a few microseconds)."""
    tensors = [t for layer in dynamic.layers for t in (layer.keys, layer.values)]
    kinds = [(*t.shape[:2], t.shape[3], t.dtype) for t in tensors]
    blocks = {}
    for kind, tensor in zip(kinds, tensors, strict=True):
        if kind not in blocks:
            blocks[kind] = tensor.new_zeros(kinds.count(kind), *kind[:2], shape.capacity + shape.rows, kind[2])
    taken = dict.fromkeys(blocks, 0)
    views = []
    for kind in kinds:
        views.append(blocks[kind][taken[kind]])
        taken[kind] += 1
    layers = [SpanLayer(keys, values, length, slots) for keys, values in zip(views[::2], views[1::2], strict=True)]
    return Cache(layers=layers), list(blocks.values())


@lru_cache(maxsize=256)
def padded_tree(layout: StepLayout, rows: int, dtype: torch.dtype, device: torch.device):
    """A layout padded to `rows`: its depths (pad rows 0) and its (rows, rows) additive mask, pad rows seeing only
    themselves and seen by no real row."""
    allowed = torch.eye(rows, dtype=torch.bool)
    for row, seen in enumerate(layout.seen):
        allowed[row, list(seen)] = True
    mask = torch.full((rows, rows), torch.finfo(dtype).min, dtype=dtype).masked_fill(allowed, 0.0)
    depths = torch.zeros(rows, dtype=torch.long)
    depths[: layout.size] = torch.tensor(layout.depths)
    return depths.to(device), mask.to(device)


def scored_rows(model, head, hidden: bool, **inputs) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Every fed row's logits (rows x vocab) and, when `hidden`, last hidden states, on the device: the model's
    own base and its plain output layer `head` (forward.plain_head), or with no such head the model's forward."""
    if head is None:
        out = model(**inputs, output_hidden_states=hidden)
        return out.logits[0], out.hidden_states[-1][0] if hidden else None
    states = model.base_model(**inputs).last_hidden_state[0].to(head.weight.device)
    return head(states), states if hidden else None


# ----------------------------------------------------------------------------------------------
# One shape's buffers and its two device functions: the pass, the copy-down


class FixedStep:
    """A shape's static buffers over one model, the pass and the copy-down as functions of them alone (what a
    capture records), each wrapped by `capture` (capture.py: as it is, a CUDA graph, or torch.compile), the pass once
    per span it runs. It holds the model only while a decoding has taken it (`model` is None when it is free), so
    that the registry of steps, kept beside the model and not in it, lets the model go."""

    def __init__(self, model, shape: Shape, capture: Callable) -> None:
        device, dtype, rows = model.device, model.dtype, shape.rows
        self.model, self.viewed, self.shape, self.capture = None, None, shape, capture
        self.head, self.attention = plain_head(model), attention_plan(model.config)
        self.ids = torch.zeros(1, rows, dtype=torch.long, device=device)
        self.depths = torch.zeros(rows, dtype=torch.long, device=device)
        self.tree = torch.zeros(rows, rows, dtype=dtype, device=device)
        self.length = torch.zeros((), dtype=torch.long, device=device)  # L: the committed positions in the cache
        self.slots = torch.zeros(rows, dtype=torch.long, device=device)  # where a pass writes its rows: L, L + 1, ...
        self.sources = torch.zeros(shape.kept, dtype=torch.long, device=device)  # the pass's rows to copy down
        self.columns = torch.arange(shape.capacity + rows, device=device)
        self.row_numbers = self.columns[:rows]
        self.offsets = torch.arange(shape.kept, device=device)
        self.argmax = torch.zeros(rows, dtype=torch.int32, device=device)  # the last pass's, as it returns them
        width = model.config.get_text_config(decoder=True).hidden_size if shape.hidden else 0
        self.states = torch.zeros(rows, width, dtype=dtype, device=device)
        self.cache: Cache | None = None
        self.blocks: list[torch.Tensor] = []  # the cache's layers stacked (span_cache)
        self.runs: dict[int, Callable] = {}  # the pass, recorded per span
        self.working: dict = {}  # a method's working state kept on the device with these buffers, by its settings

    def load(self, dynamic: DynamicCache, length: int) -> None:
        """Copy a prefill's cache of `length` positions in; the first load allocates, and wraps and records the
        copy-down on rows that stay where they are (a copy-down run twice moves rows it already moved: a capture's
        warm-up runs must find nothing to move)."""
        first = self.cache is None
        if first:
            self.cache, self.blocks = span_cache(dynamic, self.shape, self.length, self.slots)
            self.copy_down = self.capture(self.kept_rows_down)
        for layer, prefilled in zip(self.cache.layers, dynamic.layers, strict=True):
            layer.keys[:, :, :length] = prefilled.keys
            layer.values[:, :, :length] = prefilled.values
        self.length.fill_(length)
        if first:  # recorded now, copying every row onto itself: a capture's warm-up runs it again and again
            self.sources.copy_(self.offsets)
            self.copy_down()

    def run(self, span: int):
        """The pass reading `span` key columns, recorded on its first call (capture)."""
        if span not in self.runs:
            self.runs[span] = self.capture(partial(self.forward, span))
        with attention_kernels(self.model):  # what a capture records, and an uncaptured pass runs
            return self.runs[span]()

    def viewing(self) -> None:
        """Take the engine's view of the model (products.engine_model, checked) for a decoding, once at its start,
        not in every pass (its checks took 0.8 ms of host time with SmolLM2's fused copies on the 2-core AMD CPU)
        nor inside one (a compile traces a plain module). A view built anew (a layer swapped, a weight its fused
        copy no longer holds) drops the recordings made on the old one: they would replay its products."""
        viewed = engine_model(self.model, checked=True)
        if viewed is not self.viewed:
            self.runs, self.viewed = {}, viewed

    def record(self, spans: list[int]) -> None:
        """Record the passes of `spans` not yet recorded, before a decoding's first pass, so that none is recorded
        inside a timed one (a pass writes only past L and into its outputs: harmless now). The uncaptured step
        records nothing."""
        if self.capture is as_it_is:
            return
        for span in spans:
            if span not in self.runs:
                self.run(span)

    def masks(self, positions: torch.Tensor, span: int):
        """The pass's 4D mask over `span` columns: "column < L", then the tree's pattern over [L, L + T); on
        sliding-window layers also no key at or before a row's position - window (a committed key's position is its
        column, a row's L + its depth; one mask per layer type where types mix, as forward.py passes)."""
        rows, dtype, least = self.shape.rows, self.tree.dtype, torch.finfo(self.tree.dtype).min
        columns = self.columns[:span]
        fed = (columns - self.length).clamp(0, rows - 1)  # the row each column holds, where it holds one
        committed, written = columns < self.length, (columns >= self.length) & (columns < self.length + rows)
        tree = torch.where(written, self.tree.index_select(1, fed), least)
        masks = {FULL: torch.where(committed, torch.zeros((), dtype=dtype, device=tree.device), tree)}
        if self.attention.window is not None:
            keys = torch.where(committed, columns, self.length + self.depths.index_select(0, fed))
            beyond = keys[None, :] <= positions[:, None] - self.attention.window
            masks[SLIDING] = masks[FULL].masked_fill(beyond, least)
        if not self.attention.mixed:
            return masks[self.attention.layer_types[0]][None, None]
        return {kind: mask[None, None] for kind, mask in masks.items()}

    def forward(self, span: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """The pass: T rows after the L committed positions, reading `span` key columns; each row's logits, and its
        argmax (int32) and hidden states in the step's own buffers."""
        positions = self.depths + self.length
        self.slots.copy_(self.length + self.row_numbers)
        for layer in self.cache.layers:
            layer.span = span
        logits, states = scored_rows(
            self.viewed,
            self.head,
            self.shape.hidden,
            input_ids=self.ids,
            attention_mask=self.masks(positions, span),
            position_ids=positions[None],
            past_key_values=self.cache,
            use_cache=True,
        )
        self.argmax.copy_(logits.argmax(dim=-1))
        if states is not None:
            self.states.copy_(states)
        return logits, self.argmax, self.states if states is not None else None

    def kept_rows_down(self) -> None:
        """Copy the pass's rows `sources` (at L + source) to [L, L + D) on every layer, all layers' at once (L
        advances on the host's word, or the device step's)."""
        targets, sources = self.offsets + self.length, self.sources + self.length
        for block in self.blocks:
            block.index_copy_(3, targets, block.index_select(3, sources))


STEPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> {(shape, capture): [FixedStep]}
STEPS_LOCK = threading.Lock()


def acquired(model, shape: Shape, capture: Callable) -> FixedStep:
    """A free FixedStep of this shape and capture for `model` (a new one when all are in use), taken."""
    with STEPS_LOCK:
        steps = STEPS.setdefault(model, {}).setdefault((shape, capture), [])
        step = next((s for s in steps if s.model is None), None)
        if step is None:
            step = FixedStep(model, shape, capture)
            steps.append(step)
        step.model = model
        return step


# ----------------------------------------------------------------------------------------------
# One decoding's passes through a shape


class FixedPasses:
    """The fixed-shape step's passes over one decoding (the calls of forward.Passes). The shape's buffers are
    taken at the prefill and given back by `release` (the decoders do, when they end or are dropped)."""

    def __init__(
        self,
        model,
        shape: Shape,
        capture: Callable,
        registered: bool = True,
        spans: bool = True,
        room: int | None = None,
    ) -> None:
        self.model, self.shape, self.capture, self.registered = model, shape, capture, registered
        self.spans, self.room, self.step = spans, room, None  # room: the most positions the decoding commits

    @torch.inference_mode()
    def prefill(self, prompt_ids: list[int], hidden: bool = False) -> Pass:
        """The prompt into the shape's buffers, every span this decoding can reach recorded. A captured step whose
        buffers are already made takes the prompt through its own pass, T rows at a time (`chunked`), where that is
        at most CHUNKED_PREFILL passes; otherwise the eager prefill, its cache copied in."""
        self.step = acquired(self.model, self.shape, self.capture) if self.registered else self.own_step()
        self.step.viewing()
        if self.step.cache is not None and self.capture is not as_it_is:
            if 0 < len(prompt_ids) <= CHUNKED_PREFILL * self.shape.rows:
                return self.chunked(prompt_ids, hidden)
        cache, result = prefill(self.model, prompt_ids, hidden)
        self.step.load(cache, len(prompt_ids))
        self.length = len(prompt_ids)
        self.step.record(self.reachable_spans())
        return result

    def chunked(self, prompt_ids: list[int], hidden: bool) -> Pass:
        """The prefill as the step's own passes: each chunk of T prompt tokens a causal chain after the ones before
        it, kept where it was written. On a GPU a replay of the captured pass replaces the eager prefill's thousands
        of launches (2,884 torch calls for SmolLM2-135M's, 2026-11-28). Its result is the eager prefill's: the last
        row's argmax and logits, and every prompt row's hidden states when `hidden`."""
        self.length = 0
        self.step.length.fill_(0)
        self.step.record(self.reachable_spans())
        rows, seconds, states = self.shape.rows, 0.0, []
        for start in range(0, len(prompt_ids), rows):
            chunk = prompt_ids[start : start + rows]
            result = self.tree(chunk, chain_layout(len(chunk)), None, hidden)
            self.keep(tuple(range(1, len(chunk))))
            seconds += result.seconds
            states += [result.hidden] if hidden else []
        return Pass(result.argmax[-1:], result.logits[-1:].clone(), seconds, torch.cat(states) if hidden else None)

    def reachable_spans(self) -> list[int]:
        """The spans this decoding's passes can read: from the prompt's to the one at `room` committed positions
        (the whole cache when not told), each SPAN apart; the whole cache alone where spans are not apart."""
        whole = self.shape.capacity + self.shape.rows
        if not self.spans:
            return [whole]
        last = span_for(self.room, self.shape) if self.room is not None else whole
        return sorted({*range(self.span(), last, SPAN), last})

    def one(self, token: int) -> Pass:
        result = self.tree([token], chain_layout(1), None)
        self.keep(())
        return result

    @torch.inference_mode()
    def tree(self, tokens: list[int], layout: StepLayout, plan: AttentionPlan | None, hidden: bool = False) -> Pass:
        """One pass of T rows: the tree's, then pad rows (c's token, at c's position, seeing only themselves)."""
        step, rows = self.step, self.shape.rows
        if layout.size > rows:
            raise ValueError(f"a step of {layout.size} rows does not fit the fixed shape of {rows}")
        synchronize(self.model.device)
        start = time.perf_counter()
        depths, tree = padded_tree(layout, rows, step.tree.dtype, step.tree.device)
        step.ids.copy_(torch.tensor([tokens + tokens[:1] * (rows - layout.size)]))
        step.depths.copy_(depths)
        step.tree.copy_(tree)
        logits, argmax, states = step.run(self.span())
        fed = argmax[: layout.size].tolist()  # the one read back of the pass
        states = states[: layout.size].clone() if hidden else None  # a replay overwrites the captured output
        return Pass(fed, logits[: layout.size], time.perf_counter() - start, states)

    def span(self) -> int:
        """The key columns this decoding's next pass reads: the filled length's span, or the whole cache where
        spans are not recorded apart (`spans` False: the compiled mode, where each would be a compile)."""
        shape = self.shape
        return span_for(self.length, shape) if self.spans else shape.capacity + shape.rows

    @torch.inference_mode()
    def keep(self, accepted: tuple[int, ...]) -> None:
        """Keep c's row and the rows `accepted` of the last pass: D rows copied down (none where they are the pass's
        first rows, already in place: plain decoding's every step), L advanced."""
        kept = (0, *accepted)
        if kept != tuple(range(len(kept))):  # rows 0, 1, ... were written at L, L + 1, ...: nothing to move
            self.step.sources.copy_(torch.tensor(kept + (0,) * (self.shape.kept - len(kept))))
            self.step.copy_down()
        self.length += len(kept)
        self.step.length.fill_(self.length)

    def own_step(self) -> FixedStep:
        """A step of this shape for these passes alone (not kept beside the model: freed with them)."""
        step = FixedStep(self.model, self.shape, self.capture)
        step.model = self.model
        return step

    def release(self) -> None:
        if self.step is not None:
            self.step.model, self.step = None, None


# ----------------------------------------------------------------------------------------------
# The step mode of a run


def fixed_refusal(model) -> str:
    """Why the fixed-shape step cannot drive `model` exactly, in words; "" when it can."""
    try:
        attention_plan(model.config)
    except UnsupportedModel as refused:
        return refused.reason
    if len({p.device for p in model.parameters()}) > 1:
        return "its layers sit on more than one device"
    return ""


# The default per device. On CUDA the CUDA graph: on an H200 (2026-11-26, docs/bench/h200-*-cuda-graph-2026-11-26.json)
# it was exact for every method in float32 and plain decoding's whole step took 4.2 ms, where the eager 1-token pass
# alone took 17.4 ms. Every other device runs the eager step: a CPU pays for every pad row of a fixed shape, and
# nothing captures there.
DEFAULT_MODES = {"cuda": StepMode.CUDA_GRAPH}


def default_mode(model) -> StepMode:
    """The mode a run of `model` takes when none is asked for: DEFAULT_MODES' for its device, else eager."""
    return DEFAULT_MODES.get(model.device.type, StepMode.EAGER)


PROBED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> {mode: why its step failed, or ""}
PROBE_LOCK = threading.Lock()


def probe_failure(model, mode: StepMode) -> str:
    """Why `mode`'s step fails on `model` (in one line), or "" when it runs: tried once per model and mode on a
    1-row shape of its own, its pass compared with the eager step's (`disagreement`: a capture that cannot be
    recorded, or replays wrong, fails here); a failure met later (`failed`, by the cost curve's wider shapes) is
    kept too."""
    with PROBE_LOCK:
        known = PROBED.setdefault(model, {})
        if mode not in known:
            known[mode] = tried(model, mode)
        return known[mode]


def failed(model, mode: StepMode, error: BaseException) -> str:
    """Keep `error`, met running `mode`'s step on `model`, as why the mode fails there; returns it in one line."""
    why = one_line(error)
    with PROBE_LOCK:
        PROBED.setdefault(model, {})[mode] = why
    return why


PROBE_PROMPT, PROBE_TOKEN = [1, 2], 3  # ids every vocabulary has


def tried(model, mode: StepMode) -> str:
    """The probe: a 2-token prefill (recording the copy-down) and one pass in `mode` and in the eager step; the
    failure in one line, or "" when the two agree (`disagreement`)."""
    shape = shape_for(rows=1, reach=0, room=len(PROBE_PROMPT) + 1)
    passes = FixedPasses(model, shape, capture_for(mode), False, spans=mode != StepMode.COMPILED)
    try:
        passes.prefill(PROBE_PROMPT)
        got = passes.one(PROBE_TOKEN)
        eager = EagerPasses(model)
        eager.prefill(PROBE_PROMPT)
        wanted = eager.one(PROBE_TOKEN)
    except Exception as error:  # noqa: BLE001 - any failure of the mode's step sends the run to the eager step
        return one_line(error)
    finally:
        passes.release()
    return disagreement(got, wanted, model.dtype)


ROUNDING = 16  # units of the dtype's eps times the largest logit that two half-precision passes may differ by


def disagreement(got: Pass, wanted: Pass, dtype: torch.dtype) -> str:
    """How a probe's pass disagrees with the eager pass, or "" when it does not. In float32 the fixed step is exact,
    so any other token is a failure. In half precision two passes of different shapes round apart (on an H200 in
    bfloat16 by up to 0.81 on logits near 25, and a probe's top two logits were 0.375 apart: a tie broken the other
    way), so a pass agrees when its logits are within rounding of the eager pass's (ROUNDING eps of the largest)
    and its token is one the eager pass rates within that of its best; a capture that replays wrong misses both
    by the logits' own size."""
    if torch.finfo(dtype).bits >= 32:
        return (
            ""
            if got.argmax == wanted.argmax
            else f"its token {got.argmax[0]} differed from the eager step's {wanted.argmax[0]}"
        )
    ours, theirs = got.logits[-1].float(), wanted.logits[-1].float()
    allowed = ROUNDING * torch.finfo(dtype).eps * theirs.abs().max().item()
    apart = (ours - theirs).abs().max().item()
    if apart > allowed:
        return f"its logits differed from the eager step's by {apart:.3g}, past {allowed:.3g}, {dtype}'s rounding"
    short = (theirs.max() - theirs[got.argmax[-1]]).item()
    if short > allowed:
        return f"its token {got.argmax[-1]} fell {short:.3g} short of the eager step's best, past {dtype}'s rounding"
    return ""


def one_line(error: BaseException) -> str:
    first = (str(error).strip().splitlines() or [""])[0][:160]
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


def chosen_mode(model, asked: StepMode | None) -> tuple[StepMode, str]:
    """The mode a run of `model` takes when `asked` for one (None: its device's default), and why it differs
    from what was asked ("" when it does not): eager for a model the fixed-shape step cannot drive or whose
    step failed its probe, the fixed step uncaptured off CUDA."""
    wanted = default_mode(model) if asked is None else StepMode(asked)
    if wanted == StepMode.EAGER:
        return wanted, ""
    refusal = fixed_refusal(model)
    if refusal:
        return StepMode.EAGER, f"the fixed-shape step cannot drive this model exactly ({refusal}): it ran eagerly"
    note = ""
    if wanted != StepMode.FIXED and model.device.type != "cuda":
        where = model.device.type
        wanted, note = (
            StepMode.FIXED,
            f"{wanted} needs a CUDA device, this is {where}: the fixed-shape step ran uncaptured",
        )
    failure = probe_failure(model, wanted)
    if failure:
        return StepMode.EAGER, f"the {wanted} step failed on this model ({failure}): it ran eagerly"
    return wanted, note


def step_passes(model, mode: StepMode, shape: Shape, room: int | None = None, spans: bool = True):
    """The passes of a decoding in `mode` that commits at most `room` positions (prompt and new tokens): the eager
    step's, or the fixed-shape step's wrapped by its capture, each pass reading its span of the cache (`spans`;
    never in the compiled mode, where a span apart would be a compile of its own) or else the whole cache."""
    if mode == StepMode.EAGER:
        return EagerPasses(model)
    return FixedPasses(model, shape, capture_for(mode), spans=spans and mode != StepMode.COMPILED, room=room)
