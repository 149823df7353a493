"""The linear layers' products in an engine pass, taken the way this CPU runs them fastest.

`nn.Linear` computes x @ W.T. On this project's 2-core CPU (torch 2.13 with MKL 2024.2, AVX-512) that
runs one core's matrix-vector kernel for one row, and a kernel 1.5-1.8x as slow for 2 to 4 rows. The same
product taken as W @ x.T is a matrix-matrix product that reads each weight once on both cores: a pass of
SmolLM2-135M took 27.4 ms for one row (fed twice) instead of 39.6, 33.8 ms for 4 rows instead of 50.1,
86.9 for 32 instead of 91.8, and the same at 64 (`python scripts/row_cost.py`, docs/engine.md).

The engine runs its passes of a CPU model on its own view of it (`engine_model`), never on a changed model:
each float32 nn.Linear appears there as an EngineLinear that shares the layer's attributes (one __dict__:
weights, hooks, all of it) and takes up to FEW_ROWS rows as W @ x.T; each module above one is a shallow copy
holding those views, its attributes made its original's again before every pass; every other module is the
model's own. The model is left as loaded, so transformers' own `generate` (the reference that exactness is
checked against, and the bench's peers) runs `nn.Linear`'s kernel, as a user would run it. The two kernels
round differently in the last bits; exactness is checked as for any pass, token for token against `generate`.
"""

from __future__ import annotations

import copy
import weakref
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn.functional import linear

FEW_ROWS = 32  # the widest pass taken as W @ x.T: cheaper here up to 32 rows, level at 64, dearer at 128


def engine_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """`linear(x, weight, bias)`, taken as W @ x.T for float32 CPU rows, at most FEW_ROWS of them, one row
    fed twice (as a single column it would run the one-core matrix-vector kernel again)."""
    rows = x.numel() // x.shape[-1]
    if rows > FEW_ROWS or weight.dtype != torch.float32 or x.dtype != torch.float32 or weight.device.type != "cpu":
        return linear(x, weight, bias)  # measured for float32 on a CPU only (a draft cast to bf16 keeps this)
    flat = x.reshape(rows, x.shape[-1])
    y = (weight @ (flat.repeat(2, 1) if rows == 1 else flat).T).T[:rows]
    if bias is not None:
        y = y + bias
    return y.reshape(*x.shape[:-1], weight.shape[0])


class EngineLinear(nn.Linear):
    """A float32 nn.Linear in the engine's view: the layer's own __dict__, its rows taken by engine_linear."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return engine_linear(x, self.weight, self.bias)


@dataclass(frozen=True)
class Twin:
    """A module above a float32 linear layer, copied into the view: its original (weakly held, so the view
    keeps no model alive), the copy, the copy's children and the original's children the view was built on."""

    original: weakref.ref
    module: nn.Module
    children: dict
    built_on: tuple


class EngineView:
    """The engine's own module tree over a model: views of its float32 linear layers, copies above them."""

    def __init__(self, model: nn.Module):
        self.twins: list[Twin] = []
        self.model = self.view(model)

    def view(self, module: nn.Module) -> nn.Module:
        """`module` in the view: an EngineLinear, a copy holding views, or the module itself."""
        if type(module) is nn.Linear and module.weight.dtype == torch.float32:
            view = EngineLinear.__new__(EngineLinear)
            object.__setattr__(view, "__dict__", module.__dict__)  # one dict: the view sees every change at once
            return view
        children = {name: child if child is None else self.view(child) for name, child in module._modules.items()}
        if all(seen is module._modules[name] for name, seen in children.items()):
            return module  # no linear layer below: the model's own module
        twin = copy.copy(module)
        object.__setattr__(twin, "__dict__", module.__dict__ | {"_modules": children})
        self.twins.append(Twin(weakref.ref(module), twin, children, tuple(module._modules.values())))
        return twin

    def current(self) -> nn.Module | None:
        """The view, each copy's attributes its original's again (a train/eval switch, a new hook dict); None
        when a module was swapped for another since it was built (or its model is gone)."""
        for twin in self.twins:
            original = twin.original()
            if original is None or tuple(original._modules.values()) != twin.built_on:
                return None
            # A new dict, swapped in whole: a pass on another thread never sees the original's children here.
            object.__setattr__(twin.module, "__dict__", original.__dict__ | {"_modules": twin.children})
        return self.model


VIEWS: weakref.WeakKeyDictionary[nn.Module, EngineView] = weakref.WeakKeyDictionary()


def engine_model(model: nn.Module) -> nn.Module:
    """What the engine runs a pass of `model` on: on a CPU, its view (built once per model, again after a
    module of it was swapped); elsewhere the model itself."""
    if model.device.type != "cpu":
        return model
    view = VIEWS.get(model)
    current = view.current() if view is not None else None
    if current is None:
        view = VIEWS[model] = EngineView(model)
        current = view.model
    return current
