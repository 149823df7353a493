"""The linear layers' products in an engine pass, taken the way this machine runs them fastest.

The engine runs its passes of a CPU model on its own view of it (`engine_model`), never on a changed model:
each float32 nn.Linear appears there as an EngineLinear that shares the layer's attributes (one __dict__:
weights, hooks, all of it) and takes its rows the way timed fastest on this machine for its group of layers and
its row count (product_ways.py: nn.Linear's kernel, W @ x.T, oneDNN's prepacked weights, the engine's panel
kernel; measured at the model's first pass at a thread count, cached per machine); each module above one is a
shallow copy holding those views, its attributes made its original's again before every pass; every other module
is the model's own. The model is left as loaded, so transformers' own `generate` (the reference that exactness is
checked against, and the bench's peers) runs `nn.Linear`'s kernel, as a user would run it. The ways round
differently in the last bits; exactness is checked as for any pass, token for token against `generate`, for every
way (tests/test_products.py).

On CUDA the engine takes a GPU's measured levers instead, the first in the view, the second around the fixed step's
passes (scripts/gpu_check.py's GEMM and attention tables, an H200,
2026-11-28, float32 without TF32, SmolLM2-135M's 30 layers):
- sibling layers that read one input (query, key and value; gate and up: SIBLINGS) as one product, 4 GEMMs a layer
  where a Llama layer runs 7: the body's GEMMs took 0.53 ms at 1 row instead of 0.77, 1.55 at 64 rows instead of
  2.25-2.47, 1.71 at 128 instead of 2.46 (in bfloat16 0.50-0.53 instead of 0.80-0.84). The view holds a copy of
  the siblings' weights as one matrix (`fuses`: where the copy fits), so the model is left as loaded here too;
- in float32, SDPA's math kernel (`attention_kernels`): over 512 keys it took 0.55 ms a pass of 1 row and 1.13 of
  128, where the memory-efficient kernel SDPA picks took 1.75 and 1.88 (in bfloat16 the efficient one is faster).
"""

from __future__ import annotations

import contextlib
import copy
import weakref
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.functional import linear

from ..records import ProductChoice
from .product_ways import ProductTable, product_choice


class EngineLinear(nn.Linear):
    """A float32 CPU nn.Linear in the engine's view: the layer's own __dict__, its rows taken the way `table` (the
    view's choice at the pass's thread count) keeps for its group and row count."""

    __slots__ = ("view",)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.view.table.product(self, x)


# Sibling linear layers that read one input, by their names in a Llama-style layer (Qwen, Mistral, Gemma alike).
SIBLINGS = (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj"))


class Siblings:
    """Linear layers that read one input, taken as one product: a copy of their weights (and biases) as one
    matrix. The first sibling's call computes every sibling's columns and holds them; a later sibling called on that
    same input takes its columns, the last one releasing them. A sibling called on another input (or alone) takes
    its own product. The layers are left as they are: `intact` says whether the copy still holds their weights."""

    def __init__(self, layers: list[nn.Linear]) -> None:
        self.weight = torch.cat([layer.weight.detach() for layer in layers])
        biased = layers[0].bias is not None
        self.bias = torch.cat([layer.bias.detach() for layer in layers]) if biased else None
        ends = torch.tensor([layer.out_features for layer in layers]).cumsum(0).tolist()
        self.columns = [slice(end - layer.out_features, end) for layer, end in zip(layers, ends, strict=True)]
        self.copied = [copied_from(layer) for layer in layers]
        self.held: tuple[torch.Tensor, torch.Tensor] | None = None  # the input, the product of every sibling

    def product(self, index: int, x: torch.Tensor) -> torch.Tensor:
        if index == 0:
            self.held = (x, linear(x, self.weight, self.bias))
        held, columns = self.held, self.columns[index]
        if held is None or held[0] is not x:
            self.held = None  # a sibling fed another input: nothing held for the rest
            return linear(x, self.weight[columns], None if self.bias is None else self.bias[columns])
        if index == len(self.columns) - 1:
            self.held = None
        return held[1][..., columns]

    def intact(self, layers: list[nn.Linear]) -> bool:
        """Whether the layers still hold what was copied: the same tensors, not written since (a weight assigned
        anew, or changed in place, is not). A write through `.data` counts no version and is not seen: after one,
        `VIEWS.pop(model)` makes the view anew."""
        return [copied_from(layer) for layer in layers] == self.copied


def copied_from(layer: nn.Linear) -> list[tuple[int, int]]:
    """What a copy of `layer`'s tensors was taken from: each one's storage and its in-place write count."""
    return [(t.data_ptr(), t._version) for t in (layer.weight, layer.bias) if t is not None]


def fusable(layers: list) -> bool:
    """Whether layers can be one product: plain nn.Linear layers reading one width, of one dtype and device (not
    meta), all with a bias or none."""
    if not all(type(layer) is nn.Linear for layer in layers):
        return False
    first = layers[0].weight
    return (
        all(
            layer.in_features == layers[0].in_features
            and layer.weight.dtype == first.dtype
            and layer.weight.device == first.device
            and layer.weight.is_contiguous()
            and (layer.bias is None) == (layers[0].bias is None)
            for layer in layers
        )
        and first.device.type != "meta"
        and first.is_floating_point()
    )


class SiblingLinear(nn.Linear):
    """A sibling layer in the engine's view: the layer's own __dict__, its product taken by its Siblings."""

    __slots__ = ("siblings", "index")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.siblings.product(self.index, x)


def sibling_view(layer: nn.Linear, siblings: Siblings, index: int) -> SiblingLinear:
    view = SiblingLinear.__new__(SiblingLinear)
    object.__setattr__(view, "__dict__", layer.__dict__)
    object.__setattr__(view, "siblings", siblings)
    object.__setattr__(view, "index", index)
    return view


@dataclass(frozen=True)
class Twin:
    """A module above a float32 linear layer, copied into the view: its original (weakly held, so the view
    keeps no model alive), the copy, the copy's children and the original's children the view was built on."""

    original: weakref.ref
    module: nn.Module
    children: dict
    built_on: tuple


def on_cpu(layer: nn.Linear) -> bool:
    return layer.weight.device.type == "cpu"


class EngineView:
    """The engine's own module tree over a model: views of its linear layers (`fuse`: sibling layers as one
    product; otherwise float32 CPU layers as EngineLinear, taking their rows by `table`), copies above them."""

    def __init__(self, model: nn.Module, fuse: bool = False):
        self.twins: list[Twin] = []
        self.fuse, self.siblings = fuse, []
        self.original = weakref.ref(model)
        self.tables: dict[int, ProductTable] = {}  # the choice in force at each thread count, made on first use
        self.table: ProductTable | None = None
        self.chosen = False  # whether any layer takes the choice (a float32 CPU layer): else none is made
        self.model = self.view(model)

    def view(self, module: nn.Module) -> nn.Module:
        """`module` in the view: an EngineLinear, a copy holding views, or the module itself."""
        weight = getattr(module, "weight", None)
        if (
            not self.fuse
            and type(module) is nn.Linear
            and weight.dtype == torch.float32
            and weight.device.type == "cpu"
        ):
            view = EngineLinear.__new__(EngineLinear)
            object.__setattr__(view, "__dict__", module.__dict__)  # one dict: the view sees every change at once
            object.__setattr__(view, "view", self)
            self.chosen = True
            return view
        children = {name: child if child is None else self.view(child) for name, child in module._modules.items()}
        if self.fuse:
            children |= self.sibling_views(module)
        if all(seen is module._modules[name] for name, seen in children.items()):
            return module  # no linear layer below: the model's own module
        twin = copy.copy(module)
        object.__setattr__(twin, "__dict__", module.__dict__ | {"_modules": children})
        self.twins.append(Twin(weakref.ref(module), twin, children, tuple(module._modules.values())))
        return twin

    def choose(self, model: nn.Module) -> None:
        """Put in force the products' choice for this thread count: cached, or measured now (product_ways)."""
        threads = torch.get_num_threads()
        table = self.tables.get(threads)
        if table is None:
            table = self.tables[threads] = ProductTable(product_choice(model))
        self.table = table

    def sibling_views(self, module: nn.Module) -> dict[str, SiblingLinear]:
        """`module`'s sibling layers (SIBLINGS) as views of one product, by name, where they can be one."""
        views = {}
        for names in SIBLINGS:
            layers = [module._modules.get(name) for name in names]
            if all(layer is not None for layer in layers) and fusable(layers):
                siblings = Siblings(layers)
                self.siblings.append((siblings, [weakref.ref(layer) for layer in layers]))
                views |= {
                    name: sibling_view(layer, siblings, i)
                    for i, (name, layer) in enumerate(zip(names, layers, strict=True))
                }
        return views

    def current(self, checked: bool = False) -> nn.Module | None:
        """The view, each copy's attributes its original's again (a train/eval switch, a new hook dict); None
        when a module was swapped for another since it was built (or its model is gone), and, when `checked`, when
        a sibling's weight was assigned anew or written since (a check of every fused copy: 0.65 ms for SmolLM2's
        60 on the 2-core AMD CPU, so it is made once a decoding, not once a pass)."""
        for siblings, layers in self.siblings if checked else ():
            alive = [layer() for layer in layers]
            if any(layer is None for layer in alive) or not siblings.intact(alive):
                return None
        for twin in self.twins:
            original = twin.original()
            if original is None or tuple(original._modules.values()) != twin.built_on:
                return None
            # A new dict, swapped in whole: a pass on another thread never sees the original's children here.
            object.__setattr__(twin.module, "__dict__", original.__dict__ | {"_modules": twin.children})
        model = self.original()
        if model is None:
            return None
        if self.chosen:
            self.choose(model)
        return self.model


VIEWS: weakref.WeakKeyDictionary[nn.Module, EngineView] = weakref.WeakKeyDictionary()


def engine_model(model: nn.Module, checked: bool = False) -> nn.Module:
    """What the engine runs a pass of `model` on: its view, on a CPU with EngineLinear layers taking the products'
    choice for the calling thread's torch threads (measured the first time at a count: seconds), on CUDA with
    sibling layers fused where `fuses` (built once per model, again after a module of it was swapped, or, `checked`,
    a sibling's weight changed: a decoding asks so at its start); elsewhere the model itself."""
    if model.device.type not in ("cpu", "cuda"):
        return model
    view = VIEWS.get(model)
    current = view.current(checked) if view is not None else None
    if current is None:
        view = VIEWS[model] = EngineView(model, fuse=fuses(model))
        current = view.current()
    return current


def products_in_force(model: nn.Module) -> ProductChoice | None:
    """The products' choice the engine's passes of `model` take at the calling thread's count, as measured (None:
    none taken: not a float32 CPU model, or no pass at this count yet)."""
    view = VIEWS.get(model)
    table = view.tables.get(torch.get_num_threads()) if view is not None else None
    return table.choice if table is not None else None


FUSED_SHARE = 0.25  # the most of a device's free memory the fused copies may take
# The CUDA levers, each on; scripts/gpu_check.py turns one off at a time to measure what it gives (a view and the
# steps recorded on it made again around it).
LEVERS = {"siblings": True, "math attention": True}


def fuses(model: nn.Module) -> bool:
    """Whether the engine's view of `model` takes sibling layers as one product: on CUDA, where it pays, when the
    copies of their weights take at most FUSED_SHARE of the device's free memory."""
    if model.device.type != "cuda" or not LEVERS["siblings"]:
        return False
    names = {name for group in SIBLINGS for name in group}
    layers = [child for module in model.modules() for name, child in module.named_children() if name in names]
    copies = sum(p.numel() * p.element_size() for layer in layers for p in layer.parameters(recurse=False))
    return copies <= FUSED_SHARE * torch.cuda.mem_get_info(model.device)[0]


def attention_kernels(model: nn.Module) -> contextlib.AbstractContextManager:
    """The SDPA kernels a fixed-shape pass of `model` runs with (fixed.FixedStep.run: at most T rows over the span
    of its cache): in float32 on CUDA the math kernel alone (the module's docstring: the memory-efficient kernel
    SDPA picks cost 1.7-3x it there), otherwise SDPA's own choice. Not the eager passes: the math kernel holds
    every score of a pass at once, rows x keys x heads, which a long prompt's prefill makes gigabytes. The flags it
    sets are the process's: model work runs one at a time (ui/page.MODEL_WORK)."""
    if model.device.type == "cuda" and model.dtype == torch.float32 and LEVERS["math attention"]:
        return sdpa_kernel([SDPBackend.MATH])
    return contextlib.nullcontext()
