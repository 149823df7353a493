"""The linear layers' products in an engine pass, taken the way this CPU runs them fastest.

`nn.Linear` computes x @ W.T. On this project's 2-core CPU (torch 2.13 with MKL 2024.2, AVX-512) that
runs one core's matrix-vector kernel for one row, and a kernel 1.5-1.8x as slow for 2 to 4 rows. The same
product taken as W @ x.T is a matrix-matrix product that reads each weight once on both cores: a pass of
SmolLM2-135M took 27.4 ms for one row (fed twice) instead of 39.6, 33.8 ms for 4 rows instead of 50.1,
86.9 for 32 instead of 91.8, and the same at 64 (`python scripts/row_cost.py`, docs/engine.md).

Inside `taking_products(model)`, every float32 nn.Linear of a model on a CPU takes a pass of up to
FEW_ROWS rows as W @ x.T. Outside it nothing changes: transformers' own `generate` (the reference that
exactness is checked against, and the bench's peers) runs `nn.Linear`'s kernel, as a user would run it.
The two kernels round differently in the last bits; exactness is checked as for any pass, token for
token against `generate`.
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import torch
from torch import nn

FEW_ROWS = 32  # the widest pass taken as W @ x.T: cheaper here up to 32 rows, level at 64, dearer at 128
ENGINE_PASS: ContextVar[bool] = ContextVar("engine_pass", default=False)


def engine_linear(module: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """`nn.Linear`'s forward, except in an engine pass of at most FEW_ROWS rows: W @ x.T, one row fed twice
    (as a single column it would run the one-core matrix-vector kernel again)."""
    rows = x.numel() // x.shape[-1]
    if not ENGINE_PASS.get() or rows > FEW_ROWS or module.weight.dtype != torch.float32:  # a copy cast to bf16
        return nn.functional.linear(x, module.weight, module.bias)
    flat = x.reshape(rows, x.shape[-1])
    y = (module.weight @ (flat.repeat(2, 1) if rows == 1 else flat).T).T[:rows]
    if module.bias is not None:
        y = y + module.bias
    return y.reshape(*x.shape[:-1], module.weight.shape[0])


def take_products(model: nn.Module) -> None:
    """Give every float32 nn.Linear of `model` engine_linear as its forward, once (a deep copy of the model
    keeps it, bound to the copy's own weights)."""
    for module in model.modules():
        if type(module) is not nn.Linear or module.weight.dtype != torch.float32:
            continue
        if getattr(module.forward, "__func__", None) is not engine_linear:
            module.forward = types.MethodType(engine_linear, module)


@contextmanager
def taking_products(model: nn.Module) -> Iterator[None]:
    """An engine pass of `model`: on a CPU its float32 linear layers take up to FEW_ROWS rows as W @ x.T."""
    if model.device.type != "cpu":
        yield
        return
    take_products(model)
    token = ENGINE_PASS.set(True)
    try:
        yield
    finally:
        ENGINE_PASS.reset(token)
