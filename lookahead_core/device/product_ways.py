"""The ways a float32 linear layer's product can be taken on a CPU, each timed on the machine it runs on, and the
fastest kept per group of layers and per number of rows: the choice the engine's view (products.py) applies.

A kernel measured on one CPU is no rule on another: W @ x.T made one 2-core AMD CPU's one-row pass 1.4x faster
and a 2-core Intel Xeon's 1.86x slower (issue 60). So at a model's first pass on a machine every way is timed for
each group of its layers that share a shape and bias (the output layer usually a group of its own), at each of
SIZES rows, the ways and sizes interleaved round by round, and the fastest way by median is kept per size.
nn.Linear's own kernel is one of the ways and keeps every size where no other beats it by MARGIN, so the choice
is never slower than it as measured. A row count between two sizes takes the way of the next size up; above the
largest, nn.Linear's. The choice is cached by the machine's fingerprint (the CPU's model and flags, cores, torch,
its threads, dtype) and the model's groups, and measured again when any of them changes. Layers too small to
time (a tiny test model's) take nn.Linear's kernel unmeasured.

The ways: nn.Linear's kernel (x @ W.T), W @ x.T, oneDNN's prepacked weights, and the engine's own panel kernel
(panel_kernel.py, built here for this CPU) streaming one or two panels of 16 columns at a time. A way that packs
holds a copy of the weights; a group keeps one copy at most, and only where it fits PACKED_SHARE of free memory."""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial

import torch
from torch import nn
from torch.nn.functional import linear

from ..cache import cache_root
from ..records import ProductChoice, ProductGroup, SchemaError, to_data
from ..records.codec import decode
from .cpu import cpu_flags, cpu_model
from .panel_kernel import bound_panel_rows, pack_panels, panel_library

SIZES = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128)  # the row counts timed, here and on the step-cost curve
ROUNDS = 3  # timed rounds per way and size, after one untimed round that warms kernels and packs
SMALLEST_TIMED = 1 << 20  # a group of fewer weight bytes than this is not timed: nn.Linear's kernel, microseconds
PACKED_SHARE = 0.25  # the most of the machine's free memory a group's packed copy may take
MARGIN = 0.03  # another way is kept over nn.Linear's where its median is at least this share faster
PACK_ROWS = 32  # the row count oneDNN is told to pack for (the layout it picks; any count is then taken)
CHOICE_VERSION = 2  # a cached choice is measured again when the ways change (2: the panel kernel)


# ----------------------------------------------------------------------------------------------
# The ways: each takes rows (rows x in) and returns (rows x out), from the weight or from its packed copy


@dataclass(frozen=True)
class Way:
    """One way of taking `linear(x, weight, bias)` for a 2D `x`: `bind(weight, bias, packed)` makes it a function
    of the rows alone (what it can work out once, it works out there: the panel kernel's pointers), `packed` being
    what `pack(weight)` made (None for a way that packs nothing). A pass and the timing both call the bound function."""

    name: str
    bind: Callable[..., Callable[[torch.Tensor], torch.Tensor]]
    pack: Callable[[torch.Tensor], torch.Tensor] | None = None

    def take(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, packed=None) -> torch.Tensor:
        """The product of `x` once (bound and called: for checks, not for passes)."""
        return self.bind(weight, bias, packed)(x)


def unpacked(product: Callable[..., torch.Tensor]) -> Callable[..., Callable[[torch.Tensor], torch.Tensor]]:
    """A way's `bind` from its product of (x, weight, bias): the weight and bias held, nothing packed."""

    def bind(weight: torch.Tensor, bias: torch.Tensor | None, packed=None) -> Callable[[torch.Tensor], torch.Tensor]:
        return partial(product, weight=weight, bias=bias)

    return bind


def w_at_x(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """W @ x.T: a matrix-matrix product in the weight's own layout; one row is fed twice (as a single column a BLAS
    runs its matrix-vector kernel, the one nn.Linear runs). The product comes out transposed and is laid out as
    nn.Linear's (rows x out, contiguous): a query left transposed kept SDPA from its fused CPU kernels, and every
    pass of more than one row ran attention's math kernel (9 ms of a 16-row pass of SmolLM2, 2-core Xeon)."""
    rows = x.shape[0]
    y = (weight @ (x.repeat(2, 1) if rows == 1 else x).T).T[:rows].contiguous()
    return y if bias is None else y + bias


def onednn_bind(weight: torch.Tensor, bias: torch.Tensor | None, packed: torch.Tensor):
    return lambda x: torch.ops.mkldnn._linear_pointwise(x, packed, bias, "none", [], "")


def onednn_pack(weight: torch.Tensor) -> torch.Tensor:
    return torch.ops.mkldnn._reorder_linear_weight(weight, PACK_ROWS)


NN_LINEAR = Way("nn.Linear", unpacked(linear))
ONEDNN = Way("oneDNN prepacked", onednn_bind, onednn_pack)
# the panel kernel streaming one or two panels of 16 columns side by side: both ways read one packed copy
PANELS = tuple(Way(f"panels of {16 * wide}", partial(bound_panel_rows, wide=wide), pack_panels) for wide in (1, 2))
WAYS = {way.name: way for way in (NN_LINEAR, Way("W @ x.T", unpacked(w_at_x)), ONEDNN, *PANELS)}


def works(way: Way) -> bool:
    """Whether `way` runs here and gives nn.Linear's product to float rounding, on a small case."""
    try:
        generator = torch.Generator().manual_seed(0)
        weight, bias = torch.randn(40, 24, generator=generator), torch.randn(40, generator=generator)
        x = torch.randn(3, 24, generator=generator)
        taken = way.take(x, weight, bias, way.pack(weight) if way.pack else None)
        return torch.allclose(taken, linear(x, weight, bias), rtol=1e-4, atol=1e-4)
    except (RuntimeError, AttributeError, OSError):
        return False


@cache
def available_ways() -> tuple[Way, ...]:
    """The ways this machine can take: oneDNN's where torch was built with it and its ops answer, the panel kernel
    where this machine's compiler builds it (panel_kernel.py: seconds, once)."""
    ways = [NN_LINEAR, WAYS["W @ x.T"]]
    if torch.backends.mkldnn.is_available() and works(ONEDNN):
        ways.append(ONEDNN)
    if panel_library() is not None and all(works(way) for way in PANELS):
        ways += PANELS
    return tuple(ways)


# ----------------------------------------------------------------------------------------------
# The machine and the model's groups


def fingerprint(dtype: torch.dtype) -> dict[str, str]:
    """What a measurement of the products holds for: change any of it and they are measured again."""
    return {
        "cpu": cpu_model(),
        "flags": hashlib.sha256(cpu_flags().encode()).hexdigest()[:12],
        "cores": str(os.cpu_count()),
        "torch": str(torch.__version__),
        "threads": str(torch.get_num_threads()),
        "dtype": str(dtype).removeprefix("torch."),
    }


GroupKey = tuple[int, int, bool]  # out_features, in_features, biased


def group_key(layer: nn.Linear) -> GroupKey:
    return layer.out_features, layer.in_features, layer.bias is not None


def layer_groups(model: nn.Module) -> dict[GroupKey, list[nn.Linear]]:
    """The model's float32 CPU linear layers (its output layer among them) by shape and bias."""
    groups: dict[GroupKey, list[nn.Linear]] = {}
    for module in model.modules():
        if type(module) is nn.Linear and module.weight.dtype == torch.float32 and module.weight.device.type == "cpu":
            groups.setdefault(group_key(module), []).append(module)
    return groups


def weight_bytes(layers: list[nn.Linear]) -> int:
    return sum(layer.weight.numel() * layer.weight.element_size() for layer in layers)


def free_memory() -> int | None:
    """The machine's free memory in bytes (None where the system does not say)."""
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def ways_for(layers: list[nn.Linear]) -> list[Way]:
    """The ways timed for a group: every available one, a packing way only where its copy fits PACKED_SHARE of
    the free memory."""
    free = free_memory()
    fits = free is None or weight_bytes(layers) <= PACKED_SHARE * free
    return [way for way in available_ways() if way.pack is None or fits]


# ----------------------------------------------------------------------------------------------
# Timing and choosing


Timer = Callable[[list[nn.Linear], list[Way], tuple[int, ...]], dict[str, list[float]]]


@torch.inference_mode()
def time_ways(layers: list[nn.Linear], ways: list[Way], sizes: tuple[int, ...]) -> dict[str, list[float]]:
    """Each way's median seconds for one product of every layer in `layers` at each of `sizes` rows: ROUNDS timed
    rounds after an untimed one, every way and size once a round, so a burst of load lands on all alike. The
    layers are taken in turn, as a pass takes them, so each weight comes from memory as in a pass."""
    generator = torch.Generator().manual_seed(0)
    inputs = {size: torch.randn(size, layers[0].in_features, generator=generator) for size in sizes}
    copies = {way.pack: [way.pack(layer.weight) for layer in layers] for way in ways if way.pack is not None}
    packed = {way.name: copies.get(way.pack, [None] * len(layers)) for way in ways}
    takes = {  # bound as a pass binds them, so the timing holds each call's Python as a pass pays it
        way.name: [way.bind(layer.weight, layer.bias, p) for layer, p in zip(layers, packed[way.name], strict=True)]
        for way in ways
    }
    seconds: dict[str, list[list[float]]] = {way.name: [[] for _ in sizes] for way in ways}
    for attempt in range(ROUNDS + 1):
        for way in ways:
            for i, size in enumerate(sizes):
                x = inputs[size]
                start = time.perf_counter()
                for take in takes[way.name]:
                    take(x)
                if attempt:
                    seconds[way.name][i].append(time.perf_counter() - start)
    return {name: [statistics.median(times) for times in per_size] for name, per_size in seconds.items()}


def fastest(seconds: dict[str, list[float]], sizes: tuple[int, ...]) -> list[str]:
    """At each size, the way of least median seconds, where it beats nn.Linear's by MARGIN; else nn.Linear's (the
    model's own kernel, no copy: a lead inside the timings' jitter is no reason to leave it). A group keeps one
    packed copy at most: of the ways that pack (oneDNN's, the panels'), those sharing the copy that serves the
    group best (least time relative to nn.Linear's, summed over the sizes) compete; the others do not."""
    linear_seconds = seconds.get(NN_LINEAR.name, [float("inf")] * len(sizes))
    unpacked = [name for name in seconds if WAYS[name].pack is None]
    copies = {WAYS[name].pack for name in seconds} - {None}
    contenders = [unpacked] + [unpacked + [n for n in seconds if WAYS[n].pack is copy] for copy in copies]

    def kept(names: list[str]) -> list[str]:
        chosen = []
        for i in range(len(sizes)):
            best = min(names, key=lambda name: seconds[name][i])
            chosen.append(best if seconds[best][i] < (1 - MARGIN) * linear_seconds[i] else NN_LINEAR.name)
        return chosen

    def relative(chosen: list[str]) -> float:
        return sum(seconds.get(name, linear_seconds)[i] / linear_seconds[i] for i, name in enumerate(chosen))

    return min((kept(names) for names in contenders), key=relative)


def measure_choice(model: nn.Module, timer: Timer = time_ways, sizes: tuple[int, ...] = SIZES) -> ProductChoice:
    """Time every group's ways (`timer`: time_ways, or a test's stand-in) and keep the fastest per size."""

    def timed(layers: list[nn.Linear]) -> tuple[list[str], dict[str, list[float]]]:
        if weight_bytes(layers) < SMALLEST_TIMED:
            return [NN_LINEAR.name] * len(sizes), {}
        seconds = timer(layers, ways_for(layers), sizes)
        return fastest(seconds, sizes), seconds

    return choice_of(model, timed, sizes, time.strftime("%Y-%m-%dT%H:%M:%S"))


def one_way_choice(model: nn.Module, way: str, sizes: tuple[int, ...] = SIZES) -> ProductChoice:
    """The choice that takes `way` for every group at every size, timed by nothing: what the engine runs when a
    script or a test puts one way against another (scripts/row_cost.py), never what it chooses."""
    return choice_of(model, lambda layers: ([way] * len(sizes), {}), sizes, measured_at="")


def choice_of(model: nn.Module, ways_of: Callable, sizes: tuple[int, ...], measured_at: str) -> ProductChoice:
    """A choice with each group's ways and seconds as `ways_of(layers)` gives them."""
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    groups = []
    for (out_features, in_features, bias), layers in layer_groups(model).items():
        ways, seconds = ways_of(layers)
        groups.append(
            ProductGroup(
                out_features=out_features,
                in_features=in_features,
                bias=bias,
                layers=len(layers),
                head=any(layer is head for layer in layers),
                ways=ways,
                seconds=seconds,
            )
        )
    dtype = next(model.parameters()).dtype
    return ProductChoice(fingerprint=fingerprint(dtype), measured_at=measured_at, sizes=list(sizes), groups=groups)


def timed_at_all(model: nn.Module) -> bool:
    """Whether any group of `model` is large enough to be timed (else its choice is nn.Linear's, unmeasured)."""
    return any(weight_bytes(layers) >= SMALLEST_TIMED for layers in layer_groups(model).values())


def choice_key(model: nn.Module) -> str:
    """What a choice holds for: this machine at this thread count (the fingerprint), `model`'s groups, the ways."""
    groups = sorted((*key, len(layers)) for key, layers in layer_groups(model).items())
    identity = json.dumps([fingerprint(next(model.parameters()).dtype), groups, CHOICE_VERSION, SIZES], sort_keys=True)
    return hashlib.sha256(identity.encode()).hexdigest()[:20]


def choice_path(model: nn.Module):
    """Where the choice for `model`'s groups on this machine (at this thread count, in its dtype) is cached."""
    return cache_root() / "products" / f"{choice_key(model)}.json"


CHOSEN: dict[str, ProductChoice] = {}  # this process's choices by key: read or measured once, whatever the folder


def product_choice(model: nn.Module, refresh: bool = False, timer: Timer = time_ways) -> ProductChoice:
    """The choice for `model` on this machine at this thread count: this process's, else the cache's, else measured
    now (seconds) and cached. A model too small to time gets nn.Linear's choice without a file."""
    if not timed_at_all(model):
        return measure_choice(model, timer)
    key, path = choice_key(model), choice_path(model)
    if key in CHOSEN and not refresh:
        return CHOSEN[key]
    if path.exists() and not refresh:
        try:
            CHOSEN[key] = decode(ProductChoice, json.loads(path.read_text()), "products")
            return CHOSEN[key]
        except (ValueError, SchemaError):
            pass  # a damaged cache file is measured again
    choice = CHOSEN[key] = measure_choice(model, timer)
    path.parent.mkdir(parents=True, exist_ok=True)
    written = path.with_suffix(f".{os.getpid()}.tmp")
    written.write_text(json.dumps(to_data(choice), indent=1))
    written.replace(path)  # whole or not at all: another process may be reading it
    return choice


# ----------------------------------------------------------------------------------------------
# The choice in force


class Bound:
    """One layer's products as a table binds them: for each size, the way's function of the rows alone (None:
    nn.Linear's), over the weight as it was when bound (a weight assigned anew or written in place binds again)."""

    def __init__(self, layer: nn.Linear, ways: list[Way]) -> None:
        self.weight, self.bias, self.versions = layer.weight, layer.bias, versions(layer)
        copies: dict[Callable, torch.Tensor] = {}  # ways that pack alike share one copy
        with torch.inference_mode():
            for way in ways:
                if way.pack is not None and way.pack not in copies:
                    copies[way.pack] = way.pack(layer.weight)
        self.takes = [
            None if way is NN_LINEAR else way.bind(layer.weight, layer.bias, copies.get(way.pack)) for way in ways
        ]

    def holds(self, layer: nn.Linear) -> bool:
        return layer.weight is self.weight and layer.bias is self.bias and versions(layer) == self.versions


def versions(layer: nn.Linear) -> tuple[int, int]:
    return layer.weight._version, -1 if layer.bias is None else layer.bias._version


class ProductTable:
    """A choice as the view applies it: for each layer, the way of its group at each row count, bound to the layer
    on its first product (with the packed copy its ways need); rows past the largest size take nn.Linear's. Each
    product costs a few microseconds of Python over the kernel: a pass takes some 200 of them."""

    def __init__(self, choice: ProductChoice) -> None:
        self.choice = choice
        self.sizes = choice.sizes
        self.ways = {
            (group.out_features, group.in_features, group.bias): [WAYS[name] for name in group.ways]
            for group in choice.groups
        }
        self.largest = self.sizes[-1]
        # the size index each row count takes: the next measured size up
        self.at = [0] + [
            next(i for i, size in enumerate(self.sizes) if rows <= size) for rows in range(1, self.largest + 1)
        ]
        self.bound: dict[int, Bound] = {}

    def product(self, layer: nn.Linear, x: torch.Tensor) -> torch.Tensor:
        """`linear(x, layer.weight, layer.bias)` for any leading shape, taken the chosen way."""
        rows = x.numel() // x.shape[-1]
        ways = self.ways.get(group_key(layer))
        if ways is None or rows > self.largest or ways[self.at[rows]] is NN_LINEAR:
            return linear(x, layer.weight, layer.bias)  # as a compiled step traces it: no binding on this path
        bound = self.bound.get(id(layer))
        if bound is None or not bound.holds(layer):
            bound = self.bound[id(layer)] = Bound(layer, ways)
        return bound.takes[self.at[rows]](x.reshape(rows, x.shape[-1])).reshape(*x.shape[:-1], layer.out_features)
