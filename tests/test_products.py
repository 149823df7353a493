"""The engine's own products (lookahead_core.products): inside an engine pass the linear layers of a CPU
model take their rows as W @ x.T, the same values to float rounding; outside it nothing changes, so
`generate` runs transformers' own kernel."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from lookahead_core.products import ENGINE_PASS, FEW_ROWS, engine_linear, take_products, taking_products

from .conftest import tiny_model


@pytest.mark.parametrize("rows", [1, 2, 3, 5, FEW_ROWS, FEW_ROWS + 1])
@pytest.mark.parametrize("bias", [True, False])
def test_an_engine_pass_takes_the_same_product_to_float_rounding(rows, bias):
    torch.manual_seed(rows)
    layer = nn.Linear(48, 80, bias=bias)
    x = torch.randn(1, rows, 48)
    stock = nn.functional.linear(x, layer.weight, layer.bias)
    take_products(layer)
    assert torch.equal(layer(x), stock)  # outside an engine pass: nn.Linear's own kernel, bit for bit
    token = ENGINE_PASS.set(True)
    try:
        ours = layer(x)
    finally:
        ENGINE_PASS.reset(token)
    assert ours.shape == stock.shape and torch.allclose(ours, stock, rtol=1e-5, atol=1e-5)


def test_a_deep_copy_takes_its_own_weights_and_other_dtypes_keep_nn_linear():
    layer = nn.Linear(8, 4)
    take_products(layer)
    twin = copy.deepcopy(layer)
    assert twin.forward.__self__ is twin and twin.forward.__func__ is engine_linear
    half = nn.Linear(8, 4).to(torch.bfloat16)
    take_products(half)
    assert "forward" not in vars(half)  # measured for float32 only
    cast = copy.deepcopy(layer).to(torch.bfloat16)  # speculative decoding's draft: a copy of the target, cast
    x = torch.randn(3, 8, dtype=torch.bfloat16)
    token = ENGINE_PASS.set(True)
    try:
        assert torch.equal(cast(x), nn.functional.linear(x, cast.weight, cast.bias))  # nn.Linear's kernel
    finally:
        ENGINE_PASS.reset(token)


def test_only_the_engines_passes_change_and_generate_is_untouched():
    lm = tiny_model("llama")
    ids = torch.tensor([[5, 6, 7, 8, 9]])
    before = lm.model.generate(ids, do_sample=False, max_new_tokens=6, min_new_tokens=6)
    with taking_products(lm.model):
        assert ENGINE_PASS.get()
    assert not ENGINE_PASS.get()
    linears = [m for m in lm.model.modules() if type(m) is nn.Linear]
    assert linears and all(m.forward.__func__ is engine_linear for m in linears)
    assert torch.equal(lm.model.generate(ids, do_sample=False, max_new_tokens=6, min_new_tokens=6), before)
